#pragma once

#include <cstddef>
#include <exception>
#include <functional>
#include <type_traits>
#include <utility>

#include "coral/channel.hpp"
#include "coral/detail/core/invoke_direct.hpp"
#include "coral/spawn.hpp"
#include "coral/task.hpp"

namespace coral {

// Kotlin's produce {}: starts a producer task and returns the channel it feeds.
//
//   channel<int> numbers = produce<int>(ex, 8, [](channel<int>& out) -> task<> {
//     for (int i = 0;; ++i) co_await out.send(i);
//   });
//   while (auto v = co_await numbers.next()) ...
//
// - `where` is an executor or an execution context (as for spawn); `capacity` and `policy` are
//   the channel's. `body(out)` returns a coral task; `body` is kept alive until that task ends.
// - The channel is closed when the body returns. If the body throws, the channel is closed with
//   that exception as its cause: receivers get every buffered value first, then the exception
//   instead of channel_closed.
// - A consumer that stops stops the producer: closing the returned channel (or destroying it, which
//   closes it) fails the producer's waiting and later sends with channel_closed, which ends the
//   body (unless it catches that). Cancelling the consumer does not close the channel by itself;
//   destroying the consumer's frame does, when the channel is one of its locals.
// - If the producer's execution context shuts down, its frames are destroyed and the channel is
//   closed (without a cause).
template <class T, class Where, class Body>
channel<T> produce(Where&& where, std::size_t capacity, Body body, overflow policy = overflow::wait) {
  static_assert(std::is_invocable_v<Body&, channel<T>&>,
                "coral::produce<T>(where, capacity, body): body is called as body(coral::channel<T>& out)");
  channel<T> out(capacity, policy);
  spawn(std::forward<Where>(where),
        [producer = detail::channel_access::share(out), body = std::move(body)]() mutable -> task<> {
          std::exception_ptr cause;
          try {
            co_await detail::invoke_direct(body, producer);
          } catch (...) {
            cause = std::current_exception();
          }
          producer.close(std::move(cause));
        });
  return out;
}

}  // namespace coral
