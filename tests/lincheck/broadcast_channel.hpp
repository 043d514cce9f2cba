#pragma once

// coral::broadcast_channel<int> of capacity 1 or 2, in both overflow modes, with 1 to 3
// subscribers made with it, each read by one thread: send (also under with_timeout), try_send;
// the thread's subscriber's receive, next (also under with_timeout), try_receive, and a fresh
// subscription in its place; close, size. A subscriber that fell behind gets "lagged:N".

#include <coral/broadcast_channel.hpp>
#include <coral/with_timeout.hpp>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "lincheck.hpp"

namespace lincheck {

// config: capacity - 1 + 2 * (drop_oldest) + 4 * (subscribers - 1).
struct broadcast_config {
  explicit broadcast_config(int config) noexcept
      : capacity(1 + static_cast<std::size_t>(config % 2)),
        drops_oldest(config / 2 % 2 != 0),
        subscribers(1 + config / 4) {}
  std::size_t capacity;
  bool drops_oldest;
  int subscribers;
};

struct broadcast_and_subscribers {
  explicit broadcast_and_subscribers(broadcast_config c)
      : ch(c.capacity, c.drops_oldest ? coral::overflow::drop_oldest : coral::overflow::wait) {
    for (int i = 0; i < c.subscribers; ++i) subscribers.push_back(ch.subscribe());
  }
  coral::broadcast_channel<int> ch;
  std::vector<coral::broadcast_subscriber<int>> subscribers;
};

struct broadcast_model {
  struct receiver {
    int id = 0;
    int subscriber = 0;
    bool next = false;  // next(): nullopt once closed
  };
  std::size_t capacity = 1;
  bool drops_oldest = false;
  bool closed = false;
  int first = 0;  // the number of the oldest value buffered (values are numbered as sent)
  int next = 0;   // the number of the next value sent
  std::deque<int> buffer;
  std::vector<int> position;                // each subscriber's next value
  std::deque<std::pair<int, int>> senders;  // (id, value)
  std::vector<receiver> receivers;

  std::string key() const {
    std::string k = std::to_string(first) + "-" + std::to_string(next) + (closed ? "C" : "") + "b";
    for (int v : buffer) k += std::to_string(v) + ",";
    k += "p";
    for (int p : position) k += std::to_string(p) + ",";
    k += "s";
    for (const auto& [id, v] : senders) k += std::to_string(id) + ",";
    k += "r";
    for (const auto& r : receivers) k += std::to_string(r.id) + ",";
    return k;
  }
  void cancel(int id) {
    std::erase_if(senders, [id](const auto& s) { return s.first == id; });
    std::erase_if(receivers, [id](const receiver& r) { return r.id == id; });
  }

  void invoke(const op& o, int id, bool cancelled, std::vector<step<broadcast_model>>& out) const;

  bool full() const { return !drops_oldest && buffer.size() >= capacity; }
  // The subscriber's next value, or how many it missed (it moves on to the oldest buffered).
  result take(int subscriber) {
    int& p = position[static_cast<std::size_t>(subscriber)];
    if (p < first) {
      const int missed = first - p;
      p = first;
      return "lagged:" + std::to_string(missed);
    }
    return std::to_string(buffer[static_cast<std::size_t>(p++ - first)]);
  }
  // Buffers `value` (dropping the oldest if full, under drop_oldest); the waiting receivers take it.
  void publish(int value, std::vector<std::pair<int, result>>& woken) {
    buffer.push_back(value);
    if (buffer.size() > capacity) {
      buffer.pop_front();
      ++first;
    }
    ++next;
    for (const auto& r : receivers) woken.emplace_back(r.id, take(r.subscriber));
    receivers.clear();
  }
  // Drops the values every subscriber has received; the waiting senders send while there is room.
  void make_room(std::vector<std::pair<int, result>>& woken) {
    for (;;) {
      while (!buffer.empty() && std::none_of(position.begin(), position.end(), [&](int p) { return p <= first; })) {
        buffer.pop_front();
        ++first;
      }
      if (closed || full() || senders.empty()) return;
      const auto [id, value] = senders.front();
      senders.pop_front();
      woken.emplace_back(id, "ok");
      publish(value, woken);
    }
  }
};

struct broadcast_channel_spec {
  static constexpr const char* name = "broadcast_channel<int>";
  using object = broadcast_and_subscribers;
  using model = broadcast_model;
  enum kind { send, timed_send, try_send, receive, next, timed_receive, try_receive, resubscribe, close, size, kinds };

  struct thread_context {
    int thread = 0;
    bool alone = false;
  };

  static int random_config(std::mt19937& rng) { return static_cast<int>(rng() % 12); }
  static std::string describe_config(int config) {
    const broadcast_config c(config);
    return "(capacity " + std::to_string(c.capacity) + (c.drops_oldest ? ", drop_oldest, " : ", wait, ") +
           std::to_string(c.subscribers) + " subscribers)";
  }
  static std::unique_ptr<object> make(int config) { return std::make_unique<object>(broadcast_config(config)); }
  static model make_model(int config) {
    const broadcast_config c(config);
    model m;
    m.capacity = c.capacity;
    m.drops_oldest = c.drops_oldest;
    m.position.assign(static_cast<std::size_t>(c.subscribers), 0);
    return m;
  }

  // a: the value sent; b: the subscriber (the thread's own; any of them in a part of one thread;
  // a thread without one only sends, closes and asks the size).
  static op random_op(std::mt19937& rng, int config, int& next_value, thread_context& c) {
    const int subscribers = broadcast_config(config).subscribers;
    const bool receives = c.alone || c.thread < subscribers;
    static constexpr int weights[kinds] = {4, 1, 2, 4, 1, 1, 2, 1, 1, 1};
    int k = 0;
    do {
      int pick = static_cast<int>(rng() % 18);
      k = 0;
      while (pick >= weights[k]) pick -= weights[k++];
    } while (!receives && k >= receive && k <= resubscribe);
    const int subscriber = c.alone ? static_cast<int>(rng() % static_cast<unsigned>(subscribers)) : c.thread;
    return op{k, k <= try_send ? next_value++ : 0, subscriber};
  }
  static std::string describe(const op& o) {
    const std::string s = "s" + std::to_string(o.b);
    switch (o.kind) {
      case send:
        return "send(" + std::to_string(o.a) + ")";
      case timed_send:
        return "with_timeout(send(" + std::to_string(o.a) + "))";
      case try_send:
        return "try_send(" + std::to_string(o.a) + ")";
      case receive:
        return s + ".receive()";
      case next:
        return s + ".next()";
      case timed_receive:
        return "with_timeout(" + s + ".receive())";
      case try_receive:
        return s + ".try_receive()";
      case resubscribe:
        return s + " = subscribe()";
      case close:
        return "close()";
      default:
        return "size()";
    }
  }

  static std::optional<result> run_now(object& x, const op& o) {
    switch (o.kind) {
      case try_send: {
        int value = o.a;
        return x.ch.try_send(value) ? "true" : "false";
      }
      case try_receive:
        try {
          auto v = x.subscribers[static_cast<std::size_t>(o.b)].try_receive();
          return v ? std::to_string(*v) : "nullopt";
        } catch (const coral::lagged& e) {
          return "lagged:" + std::to_string(e.missed());
        }
      case resubscribe:
        x.subscribers[static_cast<std::size_t>(o.b)] = x.ch.subscribe();
        return "ok";
      case close:
        x.ch.close();
        return "ok";
      case size:
        return std::to_string(x.ch.size());
      default:
        return std::nullopt;
    }
  }
  static coral::task<result> run(object& x, const op& o) {
    using namespace std::chrono_literals;
    if (o.kind == send) {
      co_await x.ch.send(o.a);
      co_return "ok";
    }
    if (o.kind == timed_send) {
      co_await coral::with_timeout(50us, x.ch.send(o.a));
      co_return "ok";
    }
    auto& subscriber = x.subscribers[static_cast<std::size_t>(o.b)];
    std::uint64_t missed = 0;
    try {
      if (o.kind == receive) co_return std::to_string(co_await subscriber.receive());
      if (o.kind == timed_receive) co_return std::to_string(co_await coral::with_timeout(50us, subscriber.receive()));
      auto v = co_await subscriber.next();
      co_return v ? std::to_string(*v) : "nullopt";
    } catch (const coral::lagged& e) {
      missed = e.missed();
    }
    co_return "lagged:" + std::to_string(missed);
  }
};

inline void broadcast_model::invoke(const op& o, int id, bool cancelled,
                                    std::vector<step<broadcast_model>>& out) const {
  using k = broadcast_channel_spec::kind;
  step<broadcast_model> s{*this, {}, {}};
  auto& m = s.next;
  const bool awaits = o.kind == k::send || o.kind == k::timed_send || o.kind == k::receive || o.kind == k::next ||
                      o.kind == k::timed_receive;
  if (awaits && cancelled) {
    s.value = "aborted";
  } else {
    switch (o.kind) {
      case k::send:
      case k::timed_send:
        if (m.closed) {
          s.value = "closed";
        } else if (m.full()) {
          m.senders.emplace_back(id, o.a);
        } else {
          m.publish(o.a, s.woken);
          m.make_room(s.woken);
          s.value = "ok";
        }
        break;
      case k::try_send:
        if (m.closed || m.full()) {
          s.value = "false";
        } else {
          m.publish(o.a, s.woken);
          m.make_room(s.woken);
          s.value = "true";
        }
        break;
      case k::receive:
      case k::next:
      case k::timed_receive:
        if (m.position[static_cast<std::size_t>(o.b)] < m.next) {
          s.value = m.take(o.b);
          m.make_room(s.woken);
        } else if (m.closed) {
          s.value = o.kind == k::next ? "nullopt" : "closed";
        } else {
          m.receivers.push_back({id, o.b, o.kind == k::next});
        }
        break;
      case k::try_receive:
        if (m.position[static_cast<std::size_t>(o.b)] == m.next) {
          s.value = "nullopt";
        } else {
          s.value = m.take(o.b);
          m.make_room(s.woken);
        }
        break;
      case k::resubscribe:
        m.position[static_cast<std::size_t>(o.b)] = m.next;
        m.make_room(s.woken);
        s.value = "ok";
        break;
      case k::close:
        m.closed = true;
        for (const auto& [sender, value] : m.senders) s.woken.emplace_back(sender, "closed");
        for (const auto& r : m.receivers) s.woken.emplace_back(r.id, r.next ? "nullopt" : "closed");
        m.senders.clear();
        m.receivers.clear();
        s.value = "ok";
        break;
      default:
        s.value = std::to_string(m.buffer.size());
    }
  }
  out.push_back(std::move(s));
}

}  // namespace lincheck
