#pragma once

// The sequential model of coral::channel<int>, for one channel or several raced by a select.

#include <coral/channel.hpp>
#include <cstddef>
#include <deque>
#include <string>
#include <vector>

#include "lincheck.hpp"

namespace lincheck {

// A channel's flavour: what its constructor was given.
struct channel_flavour {
  const char* name;
  std::size_t capacity;
  coral::overflow policy;
};
inline constexpr channel_flavour channel_flavours[] = {
    {"rendezvous", 0, coral::overflow::wait},
    {"buffered(1)", 1, coral::overflow::wait},
    {"buffered(2)", 2, coral::overflow::wait},
    {"unlimited", coral::unlimited, coral::overflow::wait},
    {"drop_oldest(1)", 1, coral::overflow::drop_oldest},
    {"drop_latest(2)", 2, coral::overflow::drop_latest},
    {"conflated", 1, coral::overflow::drop_oldest},
};
inline std::unique_ptr<coral::channel<int>> make_channel(const channel_flavour& f) {
  if (std::string(f.name) == "conflated") return std::make_unique<coral::channel<int>>(coral::conflated);
  return std::make_unique<coral::channel<int>>(f.capacity, f.policy);
}

class channel_model {
 public:
  // A waiting operation. A select waits in every channel it races, under one id, with the
  // select's branch number; a plain operation has branch -1.
  struct waiter {
    int id;
    int branch;
    int value;      // a send's value
    bool optional;  // next(): nullopt instead of closed
  };

  channel_model(std::size_t channels, channel_flavour f) : flavour_(f), channels_(channels) {}

  std::string key() const {
    std::string k;
    for (const auto& c : channels_) {
      k += c.closed ? 'C' : 'o';
      for (int v : c.buffer) k += std::to_string(v) + ",";
      k += 's';
      for (const auto& w : c.senders) k += std::to_string(w.id) + ":" + std::to_string(w.value) + ",";
      k += 'r';
      for (const auto& w : c.receivers) k += std::to_string(w.id) + ",";
      k += ';';
    }
    return k;
  }

  void cancel(int id) { forget(id); }

  // Whether a send on channel i completes at once.
  bool can_send(std::size_t i) const {
    const auto& c = channels_[i];
    return c.closed || !c.receivers.empty() || c.buffer.size() < flavour_.capacity ||
           (flavour_.policy != coral::overflow::wait && flavour_.capacity > 0);
  }
  // Sends v on channel i, which can_send(): the result of the send (branch: a select's, for its result).
  result send_now(std::size_t i, int v, int branch, std::vector<std::pair<int, result>>& woken) {
    auto& c = channels_[i];
    if (c.closed) return "closed";
    if (!c.receivers.empty()) {
      const waiter r = c.receivers.front();
      forget(r.id);
      woken.emplace_back(r.id, tagged(r.branch, std::to_string(v)));
    } else if (c.buffer.size() < flavour_.capacity) {
      c.buffer.push_back(v);
    } else if (flavour_.policy == coral::overflow::drop_oldest) {
      c.buffer.pop_front();
      c.buffer.push_back(v);
    }  // else drop_latest: v is dropped
    return tagged(branch, "ok");
  }

  bool can_receive(std::size_t i) const {
    const auto& c = channels_[i];
    return c.closed || !c.buffer.empty() || !c.senders.empty();
  }
  // Receives from channel i, which can_receive().
  result receive_now(std::size_t i, int branch, bool optional, std::vector<std::pair<int, result>>& woken) {
    auto& c = channels_[i];
    int v;
    if (!c.buffer.empty()) {
      v = c.buffer.front();
      c.buffer.pop_front();
      if (!c.senders.empty()) {  // a waiting sender's value takes the room
        const waiter s = c.senders.front();
        forget(s.id);
        channels_[i].buffer.push_back(s.value);
        woken.emplace_back(s.id, tagged(s.branch, "ok"));
      }
    } else if (!c.senders.empty()) {
      const waiter s = c.senders.front();
      forget(s.id);
      v = s.value;
      woken.emplace_back(s.id, tagged(s.branch, "ok"));
    } else {
      return optional ? "nullopt" : "closed";
    }
    return tagged(branch, std::to_string(v));
  }

  void wait_to_send(std::size_t i, waiter w) { channels_[i].senders.push_back(w); }
  void wait_to_receive(std::size_t i, waiter w) { channels_[i].receivers.push_back(w); }

  result close(std::size_t i, std::vector<std::pair<int, result>>& woken) {
    auto& c = channels_[i];
    if (c.closed) return "ok";
    c.closed = true;
    while (!c.senders.empty()) {
      const waiter s = c.senders.front();
      forget(s.id);
      woken.emplace_back(s.id, "closed");
    }
    while (!c.receivers.empty()) {
      const waiter r = c.receivers.front();
      forget(r.id);
      woken.emplace_back(r.id, r.optional ? "nullopt" : "closed");
    }
    return "ok";
  }

  std::size_t size(std::size_t i) const { return channels_[i].buffer.size(); }
  bool closed(std::size_t i) const { return channels_[i].closed; }

 private:
  static result tagged(int branch, result r) { return branch < 0 ? r : std::to_string(branch) + ":" + r; }

  // Takes waiter `id` out of every channel it waits in.
  void forget(int id) {
    for (auto& c : channels_) {
      std::erase_if(c.senders, [&](const waiter& w) { return w.id == id; });
      std::erase_if(c.receivers, [&](const waiter& w) { return w.id == id; });
    }
  }

  struct one_channel {
    std::deque<int> buffer;
    bool closed = false;
    std::deque<waiter> senders, receivers;
  };
  channel_flavour flavour_;
  std::vector<one_channel> channels_;
};

}  // namespace lincheck
