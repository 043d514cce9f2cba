// Port of Asio's cpp20/coroutines/chat_server.cpp: a reader and a writer task per session; the
// writer waits on a timer used as a condition variable, as the original does (coral's own chat
// server, under examples/net, uses a channel instead).
#include <boost/asio/read_until.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <deque>
#include <memory>
#include <set>
#include <string>

#include "serve.hpp"

class chat_participant {
 public:
  virtual ~chat_participant() = default;
  virtual void deliver(const std::string& msg) = 0;
};

using chat_participant_ptr = std::shared_ptr<chat_participant>;

class chat_room {
 public:
  void join(chat_participant_ptr participant) {
    participants_.insert(participant);
    for (const auto& msg : recent_msgs_) participant->deliver(msg);
  }

  void leave(chat_participant_ptr participant) { participants_.erase(participant); }

  void deliver(const std::string& msg) {
    recent_msgs_.push_back(msg);
    while (recent_msgs_.size() > max_recent_msgs) recent_msgs_.pop_front();
    for (const auto& participant : participants_) participant->deliver(msg);
  }

 private:
  static constexpr std::size_t max_recent_msgs = 100;
  std::set<chat_participant_ptr> participants_;
  std::deque<std::string> recent_msgs_;
};

class chat_session : public chat_participant, public std::enable_shared_from_this<chat_session> {
 public:
  chat_session(tcp::socket socket, chat_room& room)
      : socket_(std::move(socket)), timer_(socket_.get_executor()), room_(room) {
    timer_.expires_at(std::chrono::steady_clock::time_point::max());
  }

  void start() {
    room_.join(shared_from_this());
    coral::spawn(
        socket_.get_executor(), [self = shared_from_this()] { return self->reader(); }, asio::detached);
    coral::spawn(
        socket_.get_executor(), [self = shared_from_this()] { return self->writer(); }, asio::detached);
  }

  void deliver(const std::string& msg) override {
    write_msgs_.push_back(msg);
    timer_.cancel_one();
  }

 private:
  coral::task<> reader() {
    try {
      for (std::string read_msg;;) {
        std::size_t n =
            co_await asio::async_read_until(socket_, asio::dynamic_buffer(read_msg, 1024), "\n", coral::use_task);
        room_.deliver(read_msg.substr(0, n));
        read_msg.erase(0, n);
      }
    } catch (const std::exception&) {
      stop();
    }
  }

  coral::task<> writer() {
    try {
      while (socket_.is_open()) {
        if (write_msgs_.empty()) {
          boost::system::error_code ec;
          co_await timer_.async_wait(asio::redirect_error(coral::use_task, ec));
        } else {
          co_await asio::async_write(socket_, asio::buffer(write_msgs_.front()), coral::use_task);
          write_msgs_.pop_front();
        }
      }
    } catch (const std::exception&) {
      stop();
    }
  }

  void stop() {
    room_.leave(shared_from_this());
    socket_.close();
    timer_.cancel();
  }

  tcp::socket socket_;
  asio::steady_timer timer_;
  chat_room& room_;
  std::deque<std::string> write_msgs_;
};

coral::task<> listener(tcp::acceptor acceptor) {
  chat_room room;
  for (;;) {
    std::make_shared<chat_session>(co_await acceptor.async_accept(coral::use_task), room)->start();
  }
}

int main(int argc, char* argv[]) {
  return serve(argc, argv, listener);
}
