#include "coral/event_loop.hpp"

#include <cstdio>
#include <exception>
#include <stdexcept>

namespace coral {

event_loop::event_loop()
    : work_(context_.get_executor()), thread_([this] { context_.run(); }), thread_id_(thread_.get_id()) {}

event_loop::~event_loop() {
  stop();
  if (thread_.joinable()) {
    if (thread_id_ == std::this_thread::get_id()) {
      // Destroying the loop from its own thread can neither join nor (by coral's rules) detach.
      std::fputs("coral: event_loop destroyed from its own thread\n", stderr);
      std::terminate();
    }
    thread_.join();
  }
}

// io_context::stop() alone ends run(), work guard or not, and is thread-safe; resetting the guard
// here would not be (two threads calling stop()).
void event_loop::stop() noexcept {
  context_.stop();
}

void event_loop::join() {
  if (thread_id_ == std::this_thread::get_id()) {
    throw std::logic_error("coral::event_loop::join() called on the loop's own thread: it would wait for itself");
  }
  std::lock_guard lock(join_mutex_);
  if (thread_.joinable()) thread_.join();
}

}  // namespace coral
