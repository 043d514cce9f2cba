// The articles' demo, in coral: three tasks bound to three kinds of executor, sleeping without
// blocking a thread and awaiting each other. Each line shows the time, the thread and the message.
#include <chrono>
#include <coral/coral.hpp>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>

using namespace std::chrono_literals;

template <class... Args>
void debug(const char* where, const Args&... args) {
  static std::mutex mutex;
  auto now = std::chrono::system_clock::now();
  auto t = std::chrono::system_clock::to_time_t(now);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::ostringstream line;
  line << std::put_time(std::localtime(&t), "%H:%M:%S") << '.' << std::setw(3) << std::setfill('0') << ms << " [Thread-"
       << std::this_thread::get_id() << "] " << where << ": ";
  (line << ... << args);
  std::lock_guard lock(mutex);
  std::cout << line.str() << std::endl;
}

// Runs on the shared thread pool.
coral::task<int, coral::pool_executor> simple_task2() {
  debug("simple_task2", "task 2 start ...");
  co_await 1s;  // no thread sleeps: an Asio timer resumes the task on the pool
  debug("simple_task2", "task 2 returns after 1s.");
  co_return 2;
}

// Each resumption runs on a new (joined) thread.
coral::task<int, coral::new_thread_executor> simple_task3() {
  debug("simple_task3", "in task 3 start ...");
  co_await 2s;
  debug("simple_task3", "task 3 returns after 2s.");
  co_return 3;
}

// Runs on the one shared event-loop thread, and always comes back to it.
coral::task<int, coral::loop_executor> simple_task() {
  debug("simple_task", "task start ...");
  co_await 100ms;
  debug("simple_task", "after 100ms ...");
  auto result2 = co_await simple_task2();
  debug("simple_task", "returns from task2: ", result2);
  co_await 500ms;
  debug("simple_task", "after 500ms ...");
  auto result3 = co_await simple_task3();
  debug("simple_task", "returns from task3: ", result3);
  co_return 1 + result2 + result3;
}

int main() {
  auto job = coral::spawn(simple_task());
  job.then([](int i) { debug("then", "simple task end: ", i); }).catching([](std::exception& e) {
    debug("catching", "error occurred: ", e.what());
  });
  try {
    auto i = job.get_result();  // main is not a task: blocking here is fine
    debug("main", "simple task end from get: ", i);
  } catch (std::exception& e) {
    debug("main", "error: ", e.what());
  }
}
