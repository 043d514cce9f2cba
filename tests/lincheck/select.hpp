#pragma once

// A select over two coral::channel<int>: when_any of two receives, of two sends, and of a receive
// and a send, next to plain sends, receives and closes of either channel. At most one branch of a
// select happens.

#include <array>
#include <coral/channel.hpp>
#include <coral/when_any.hpp>
#include <memory>
#include <random>
#include <string>

#include "channel_model.hpp"
#include "lincheck.hpp"

namespace lincheck {

struct two_channels {
  std::array<std::unique_ptr<coral::channel<int>>, 2> ch;
};

struct select_model;

struct select_spec {
  static constexpr const char* name = "select over two channel<int>";
  using object = two_channels;
  using model = select_model;

  // a: the channel (0 or 1) of a plain operation, or a select's value; b: the second value.
  enum kind { send, receive, try_receive, close, select_receive, select_send, select_receive_send, kinds };

  static int random_config(std::mt19937& rng) { return static_cast<int>(rng() % 3); }  // the first three flavours
  static std::string describe_config(int config) { return std::string("both ") + channel_flavours[config].name; }
  static std::unique_ptr<object> make(int config) {
    return std::make_unique<object>(
        object{{make_channel(channel_flavours[config]), make_channel(channel_flavours[config])}});
  }
  static model make_model(int config);

  static op random_op(std::mt19937& rng, int, int& next_value) {
    static constexpr int weights[kinds] = {3, 2, 1, 1, 2, 2, 2};
    int pick = static_cast<int>(rng() % 13);
    int k = 0;
    while (pick >= weights[k]) pick -= weights[k++];
    const int channel = static_cast<int>(rng() % 2);
    switch (k) {
      case send:
        return op{k, channel, next_value++};
      case select_send:
        return op{k, next_value++, next_value++};
      case select_receive_send:
        return op{k, 0, next_value++};
      default:
        return op{k, channel, 0};
    }
  }
  static std::string describe(const op& o) {
    switch (o.kind) {
      case send:
        return "ch" + std::to_string(o.a) + ".send(" + std::to_string(o.b) + ")";
      case receive:
        return "ch" + std::to_string(o.a) + ".receive()";
      case try_receive:
        return "ch" + std::to_string(o.a) + ".try_receive()";
      case close:
        return "ch" + std::to_string(o.a) + ".close()";
      case select_receive:
        return "when_any(ch0.receive(), ch1.receive())";
      case select_send:
        return "when_any(ch0.send(" + std::to_string(o.a) + "), ch1.send(" + std::to_string(o.b) + "))";
      default:
        return "when_any(ch0.receive(), ch1.send(" + std::to_string(o.b) + "))";
    }
  }

  static std::optional<result> run_now(object& obj, const op& o) {
    auto& ch = *obj.ch[static_cast<std::size_t>(o.a) % 2];
    switch (o.kind) {
      case try_receive: {
        auto v = ch.try_receive();
        return v ? std::to_string(*v) : "nullopt";
      }
      case close:
        ch.close();
        return "ok";
      default:
        return std::nullopt;
    }
  }
  static coral::task<result> run(object& obj, const op& o) {
    auto& ch0 = *obj.ch[0];
    auto& ch1 = *obj.ch[1];
    auto& ch = *obj.ch[static_cast<std::size_t>(o.a) % 2];
    switch (o.kind) {
      case send:
        co_await ch.send(o.b);
        co_return "ok";
      case receive:
        co_return std::to_string(co_await ch.receive());
      case select_receive: {
        auto r = co_await coral::when_any(ch0.receive(), ch1.receive());
        co_return std::to_string(r.index()) + ":" + std::to_string(r.index() == 0 ? std::get<0>(r) : std::get<1>(r));
      }
      case select_send: {
        auto r = co_await coral::when_any(ch0.send(o.a), ch1.send(o.b));
        co_return std::to_string(r.index()) + ":ok";
      }
      default: {
        auto r = co_await coral::when_any(ch0.receive(), ch1.send(o.b));
        co_return r.index() == 0 ? "0:" + std::to_string(std::get<0>(r)) : "1:ok";
      }
    }
  }
};

struct select_model {
  channel_model chans;

  std::string key() const { return chans.key(); }
  void cancel(int id) { chans.cancel(id); }

  void invoke(const op& o, int id, bool cancelled, std::vector<step<select_model>>& out) const {
    using k = select_spec::kind;
    const auto i = static_cast<std::size_t>(o.a) % 2;
    auto one = [&](auto&& f) {
      step<select_model> s{*this, {}, {}};
      f(s);
      out.push_back(std::move(s));
    };
    if (cancelled && o.kind != k::try_receive && o.kind != k::close) return one([](auto& s) { s.value = "aborted"; });
    switch (o.kind) {
      case k::send:
        return one([&](auto& s) {
          if (s.next.chans.can_send(i))
            s.value = s.next.chans.send_now(i, o.b, -1, s.woken);
          else
            s.next.chans.wait_to_send(i, {id, -1, o.b, false});
        });
      case k::receive:
        return one([&](auto& s) {
          if (s.next.chans.can_receive(i))
            s.value = s.next.chans.receive_now(i, -1, false, s.woken);
          else
            s.next.chans.wait_to_receive(i, {id, -1, 0, false});
        });
      case k::try_receive:
        return one([&](auto& s) {
          s.value = s.next.chans.can_receive(i) ? s.next.chans.receive_now(i, -1, true, s.woken) : "nullopt";
        });
      case k::close:
        return one([&](auto& s) { s.value = s.next.chans.close(i, s.woken); });
      default:
        break;
    }
    // A select: any branch that can happen at once may win; if none can, it waits in both
    // channels, and the first to complete one branch takes it out of the other.
    const bool receives[2] = {o.kind != k::select_send, o.kind == k::select_receive};
    const int values[2] = {o.a, o.b};
    bool any = false;
    for (std::size_t b = 0; b < 2; ++b) {
      step<select_model> s{*this, {}, {}};
      auto& c = s.next.chans;
      if (receives[b] ? !c.can_receive(b) : !c.can_send(b)) continue;
      any = true;
      s.value = receives[b] ? c.receive_now(b, static_cast<int>(b), false, s.woken)
                            : c.send_now(b, values[b], static_cast<int>(b), s.woken);
      out.push_back(std::move(s));
    }
    if (any) return;
    one([&](auto& s) {
      for (std::size_t b = 0; b < 2; ++b) {
        if (receives[b])
          s.next.chans.wait_to_receive(b, {id, static_cast<int>(b), 0, false});
        else
          s.next.chans.wait_to_send(b, {id, static_cast<int>(b), values[b], false});
      }
    });
  }
};

inline select_model select_spec::make_model(int config) {
  return select_model{channel_model(2, channel_flavours[config])};
}

}  // namespace lincheck
