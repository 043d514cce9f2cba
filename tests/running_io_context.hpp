#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <thread>
#include <vector>

namespace coral_test {

// An io_context run by `threads` threads until the object goes away.
class running_io_context {
 public:
  explicit running_io_context(int threads, int concurrency_hint = BOOST_ASIO_CONCURRENCY_HINT_DEFAULT)
      : context_(concurrency_hint), work_(context_.get_executor()) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { context_.run(); });
  }
  // Stops rather than drains: a test waits for its jobs itself, and a hung task must not hang
  // the destructor.
  ~running_io_context() {
    work_.reset();
    context_.stop();
    for (auto& t : threads_) t.join();
  }
  boost::asio::io_context::executor_type get_executor() { return context_.get_executor(); }
  boost::asio::io_context& context() { return context_; }

 private:
  boost::asio::io_context context_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  std::vector<std::thread> threads_;
};

}  // namespace coral_test
