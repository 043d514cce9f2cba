#pragma once

// coral::channel<int> of every flavour: send, receive, next, the operator forms, try_send,
// try_receive, the Asio-style async_send / async_receive, sends and receives under with_timeout,
// close, size.

#include <coral/channel.hpp>
#include <coral/use_task.hpp>
#include <coral/with_timeout.hpp>
#include <memory>
#include <random>
#include <string>

#include "channel_model.hpp"
#include "lincheck.hpp"

namespace lincheck {

struct channel_spec {
  static constexpr const char* name = "channel<int>";
  using object = coral::channel<int>;
  using model = struct channel_ops_model;

  enum kind {
    send,
    send_operator,
    async_send,
    timed_send,
    try_send,
    receive,
    receive_operator,
    next,
    async_receive,
    timed_receive,
    try_receive,
    close,
    size,
    kinds
  };
  static constexpr const char* names[] = {
      "send",        "operator<<", "async_send", "with_timeout(send)", "try_send",
      "receive",     "operator>>", "next",       "async_receive",      "with_timeout(receive)",
      "try_receive", "close",      "size"};

  static int random_config(std::mt19937& rng) { return static_cast<int>(rng() % std::size(channel_flavours)); }
  static std::string describe_config(int config) { return channel_flavours[config].name; }
  static std::unique_ptr<object> make(int config) { return make_channel(channel_flavours[config]); }
  static model make_model(int config);

  static op random_op(std::mt19937& rng, int, int& next_value) {
    // Sends and receives more often than close and size.
    static constexpr int weights[kinds] = {4, 1, 1, 1, 2, 4, 1, 2, 1, 1, 2, 1, 1};
    int pick = static_cast<int>(rng() % 22);
    int k = 0;
    while (pick >= weights[k]) pick -= weights[k++];
    return op{k, k <= try_send ? next_value++ : 0, 0};
  }
  static std::string describe(const op& o) {
    return std::string(names[o.kind]) + "(" + (o.kind <= try_send ? std::to_string(o.a) : "") + ")";
  }

  static std::optional<result> run_now(object& ch, const op& o) {
    switch (o.kind) {
      case try_send: {
        int v = o.a;
        return ch.try_send(v) ? "true" : "false";
      }
      case try_receive: {
        auto v = ch.try_receive();
        return v ? std::to_string(*v) : "nullopt";
      }
      case close:
        ch.close();
        return "ok";
      case size:
        return std::to_string(ch.size());
      default:
        return std::nullopt;
    }
  }
  static coral::task<result> run(object& ch, const op& o) {
    using namespace std::chrono_literals;
    switch (o.kind) {
      case send:
        co_await ch.send(o.a);
        co_return "ok";
      case send_operator:
        co_await (ch << o.a);
        co_return "ok";
      case async_send:
        co_await ch.async_send(o.a, coral::use_task);
        co_return "ok";
      case timed_send:
        co_await coral::with_timeout(50us, ch.send(o.a));
        co_return "ok";
      case receive:
        co_return std::to_string(co_await ch.receive());
      case receive_operator: {
        int v = 0;
        co_await (ch >> v);
        co_return std::to_string(v);
      }
      case next: {
        auto v = co_await ch.next();
        co_return v ? std::to_string(*v) : "nullopt";
      }
      case async_receive:
        co_return std::to_string(co_await ch.async_receive(coral::use_task));
      case timed_receive:
        co_return std::to_string(co_await coral::with_timeout(50us, ch.receive()));
      default:
        co_return "run_now";
    }
  }
};

struct channel_ops_model {
  channel_model chans;

  std::string key() const { return chans.key(); }
  void cancel(int id) { chans.cancel(id); }

  void invoke(const op& o, int id, bool cancelled, std::vector<step<channel_ops_model>>& out) const {
    using k = channel_spec::kind;
    step<channel_ops_model> s{*this, {}, {}};
    auto& c = s.next.chans;
    const bool awaits = o.kind != k::try_send && o.kind != k::try_receive && o.kind != k::close && o.kind != k::size;
    if (awaits && cancelled) {
      s.value = "aborted";
    } else if (o.kind <= k::try_send) {
      if (c.can_send(0))
        s.value = o.kind == k::try_send ? (c.closed(0) ? "false" : (c.send_now(0, o.a, -1, s.woken), "true"))
                                        : c.send_now(0, o.a, -1, s.woken);
      else if (o.kind == k::try_send)
        s.value = "false";
      else
        c.wait_to_send(0, {id, -1, o.a, false});
    } else if (o.kind <= k::try_receive) {
      if (o.kind == k::try_receive)
        s.value =
            c.can_receive(0) && !(c.closed(0) && c.size(0) == 0) ? c.receive_now(0, -1, true, s.woken) : "nullopt";
      else if (c.can_receive(0))
        s.value = c.receive_now(0, -1, o.kind == k::next, s.woken);
      else
        c.wait_to_receive(0, {id, -1, 0, o.kind == k::next});
    } else if (o.kind == k::close) {
      s.value = c.close(0, s.woken);
    } else {
      s.value = std::to_string(c.size(0));
    }
    out.push_back(std::move(s));
  }
};

inline channel_spec::model channel_spec::make_model(int config) {
  return channel_ops_model{channel_model(1, channel_flavours[config])};
}

}  // namespace lincheck
