// A three-stage pipeline connected by channels: a producer on the thread pool, a transformer and a
// consumer on the event loop. close() shuts it down from the front; every value already sent is
// still drained by the stages behind it. Each line shows the thread the stage ran on.
#include <coral/coral.hpp>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>

namespace {

std::mutex print_mutex;
void say(const std::string& stage, const std::string& what) {
  std::ostringstream line;
  line << "[thread " << std::this_thread::get_id() << "] " << stage << ": " << what << '\n';
  std::lock_guard lock(print_mutex);
  std::cout << line.str();
}

// Sends 1..count, then closes its output: the signal for the next stage to finish.
coral::task<void, coral::pool_executor> send_numbers(coral::channel<int>& out, int count) {
  for (int i = 1; i <= count; ++i) {
    co_await out.send(i);
    say("producer", "sent " + std::to_string(i));
  }
  out.close();
  say("producer", "closed");
}

// Squares each value until its input is closed and drained, then closes its output.
coral::task<void, coral::loop_executor> transform(coral::channel<int>& in, coral::channel<int>& out) {
  while (auto v = co_await in.next()) {
    co_await out.send(*v * *v);
    say("transformer", std::to_string(*v) + " -> " + std::to_string(*v * *v));
  }
  out.close();
  say("transformer", "input drained, closed");
}

coral::task<int, coral::loop_executor> consume(coral::channel<int>& in) {
  int sum = 0;
  while (auto v = co_await in.next()) {
    sum += *v;
    say("consumer", "got " + std::to_string(*v));
  }
  say("consumer", "input drained");
  co_return sum;
}

}  // namespace

int main() {
  coral::channel<int> numbers(4);  // buffered: the producer may run ahead a little
  coral::channel<int> squares(0);  // rendezvous: each hand-off waits for the consumer
  auto producer = coral::spawn(send_numbers(numbers, 10));
  auto transformer = coral::spawn(transform(numbers, squares));
  auto consumer = coral::spawn(consume(squares));
  producer.wait();
  transformer.wait();
  int sum = consumer.get_result();
  std::cout << "sum of squares 1..10 = " << sum << '\n';  // 385
}
