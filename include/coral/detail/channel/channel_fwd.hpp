#pragma once

// The channel's machinery, named before channel.hpp defines the channel that uses it.

namespace coral {

template <class T>
class channel;

namespace detail {

template <class T>
class channel_state;
template <class T>
class channel_send_awaiter;
template <class T>
class channel_receive_awaiter;
template <class T>
class channel_receive_into_awaiter;
template <class T>
class channel_next_awaiter;
template <class T>
struct send_waiter;
template <class T>
struct receive_waiter;
template <class T, class Waiter, class Handler>
class channel_async_op;

// For produce(): a second handle on a channel's state (closing the channel when it goes, as any
// handle does).
struct channel_access {
  template <class T>
  static channel<T> share(const channel<T>& ch) {
    return channel<T>(ch.state_);
  }
};

}  // namespace detail

}  // namespace coral
