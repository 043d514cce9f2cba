#define BOOST_TEST_MODULE coral channel flavours and produce
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "test_support.hpp"

using namespace coral_test;
namespace asio = boost::asio;

namespace {

// A value that knows whether it was received: destroying one that still owns its value and was
// never received counts as a drop.
struct payload : lifetime {
  static inline std::atomic<int> dropped{0};
  int producer = 0;
  int value = 0;
  bool owns = true;
  bool received = false;
  payload(int p, int v) : producer(p), value(v) {}
  payload(payload&& other) noexcept
      : lifetime(std::move(other)),
        producer(other.producer),
        value(other.value),
        owns(std::exchange(other.owns, false)) {}
  payload& operator=(payload&&) = delete;
  ~payload() {
    if (owns && !received) ++dropped;
  }
};

template <class T>
coral::task<std::vector<T>> drain(coral::channel<T>& ch) {
  std::vector<T> out;
  while (auto v = co_await ch.next()) out.push_back(std::move(*v));
  co_return out;
}

std::vector<int> values_of(coral::channel<payload>& ch) {
  std::vector<int> out;
  while (auto v = ch.try_receive()) {
    v->received = true;
    out.push_back(v->value);
  }
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(channel_overflow)

BOOST_AUTO_TEST_CASE(an_unlimited_channel_never_makes_a_sender_wait) {
  coral::event_loop loop;
  coral::channel<int> ch(coral::unlimited);
  auto j = coral::spawn(loop, [&]() -> coral::task<> {
    for (int i = 0; i < 100'000; ++i) co_await ch.send(i);
  });
  get_within(std::move(j));  // nobody received: every send completed by itself
  BOOST_TEST(ch.size() == 100'000u);
  for (int i = 0; i < 100'000; ++i) {
    auto v = ch.try_receive();
    BOOST_REQUIRE(v.has_value());
    BOOST_REQUIRE(*v == i);
  }
}

BOOST_AUTO_TEST_CASE(drop_oldest_keeps_the_latest_values_and_destroys_the_dropped_ones) {
  payload::dropped = 0;
  {
    coral::channel<payload> ch(3, coral::overflow::drop_oldest);
    for (int i = 1; i <= 10; ++i) BOOST_TEST(ch.try_send(payload(0, i)));
    BOOST_TEST(payload::dropped == 7);
    BOOST_TEST(lifetime::alive == 3);
    BOOST_TEST(values_of(ch) == (std::vector<int>{8, 9, 10}), boost::test_tools::per_element());
  }
  BOOST_TEST(lifetime::alive == 0);
}

BOOST_AUTO_TEST_CASE(drop_latest_keeps_the_first_values_and_destroys_the_new_ones) {
  payload::dropped = 0;
  {
    coral::event_loop loop;
    coral::channel<payload> ch(3, coral::overflow::drop_latest);
    auto j = coral::spawn(loop, [&]() -> coral::task<> {
      for (int i = 1; i <= 10; ++i) co_await ch.send(payload(0, i));  // never waits
    });
    get_within(std::move(j));
    BOOST_TEST(payload::dropped == 7);
    BOOST_TEST(lifetime::alive == 3);
    BOOST_TEST(values_of(ch) == (std::vector<int>{1, 2, 3}), boost::test_tools::per_element());
  }
  BOOST_TEST(lifetime::alive == 0);
}

BOOST_AUTO_TEST_CASE(a_conflated_channel_hands_a_receiver_the_latest_value) {
  coral::channel<int> ch(coral::conflated);
  BOOST_TEST(ch.capacity() == 1u);
  for (int i = 1; i <= 5; ++i) BOOST_TEST(ch.try_send(i));
  BOOST_TEST(ch.try_receive().value_or(0) == 5);
  BOOST_TEST(!ch.try_receive().has_value());
  // A waiting receiver still gets the value handed straight to it.
  coral::event_loop loop;
  auto j = coral::spawn(loop, [&]() -> coral::task<int> { co_return co_await ch.receive(); });
  auto sender = coral::spawn(loop, [&]() -> coral::task<> { co_await ch.send(6); });
  get_within(std::move(sender));
  BOOST_TEST(get_within(std::move(j)) == 6);
}

BOOST_AUTO_TEST_CASE(a_rendezvous_channel_with_a_dropping_policy_is_refused_with_a_clear_error) {
  BOOST_CHECK_THROW(coral::channel<int>(0, coral::overflow::drop_oldest), std::invalid_argument);
  BOOST_CHECK_THROW(coral::channel<int>(0, coral::overflow::drop_latest), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(dropping_channels_across_threads_lose_only_what_they_drop, Place, places) {
  for (auto policy : {coral::overflow::drop_oldest, coral::overflow::drop_latest}) {
    payload::dropped = 0;
    constexpr int producers = 3, per_producer = 20'000;
    {
      Place place;
      coral::channel<payload> ch(8, policy);
      std::vector<coral::job<>> senders;
      for (int p = 0; p < producers; ++p) {
        senders.push_back(coral::spawn(place.get_executor(), [&ch, p]() -> coral::task<> {
          for (int i = 0; i < per_producer; ++i) co_await ch.send(payload(p, i));
        }));
      }
      auto receiver = coral::spawn(place.get_executor(), [&ch]() -> coral::task<std::vector<std::vector<int>>> {
        std::vector<std::vector<int>> seen(producers);
        while (auto v = co_await ch.next()) {
          v->received = true;
          seen[v->producer].push_back(v->value);
        }
        co_return seen;
      });
      for (auto& s : senders) get_within(std::move(s));
      ch.close();
      const auto seen = get_within(std::move(receiver));
      std::size_t received = 0;
      for (const auto& values : seen) {
        BOOST_TEST(std::is_sorted(values.begin(), values.end()));                        // FIFO per producer
        BOOST_TEST((std::adjacent_find(values.begin(), values.end()) == values.end()));  // no duplicate
        received += values.size();
      }
      BOOST_TEST(received + payload::dropped == std::size_t{producers} * per_producer);
    }
    BOOST_TEST(lifetime::alive == 0);
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(channel_close_cause)

BOOST_AUTO_TEST_CASE(a_channel_closed_with_a_cause_hands_out_its_values_then_the_cause) {
  coral::event_loop loop;
  coral::channel<int> ch(4);
  BOOST_REQUIRE(ch.try_send(1));
  BOOST_REQUIRE(ch.try_send(2));
  ch.close(std::make_exception_ptr(std::runtime_error("producer failed")));
  ch.close(std::make_exception_ptr(std::runtime_error("a second close")));  // the first cause stays
  auto j = coral::spawn(loop, [&]() -> coral::task<std::string> {
    std::string log;
    log += std::to_string(co_await ch.receive());
    log += std::to_string(*co_await ch.next());
    for (int i = 0; i < 2; ++i) {
      try {
        if (i == 0) co_await ch.receive();
        if (i == 1) co_await ch.next();
      } catch (const std::runtime_error& e) {
        log += std::string(" ") + e.what();
      }
    }
    co_return log;
  });
  BOOST_TEST(get_within(std::move(j)) == "12 producer failed producer failed");
  // Plain Asio receivers get channel_closed; senders fail with channel_closed.
  std::promise<boost::system::error_code> code;
  ch.async_receive([&code](boost::system::error_code e, int) { code.set_value(e); });
  auto f = code.get_future();
  BOOST_REQUIRE(f.wait_for(patience) == std::future_status::ready);
  BOOST_TEST((f.get() == coral::errc::channel_closed));
  BOOST_TEST(!ch.try_send(3));
}

CORAL_TEST_CASE_ON_EACH_PLACE(a_waiting_receiver_gets_the_cause_of_a_close, places) {
  coral::channel<int> ch;
  auto started = std::make_shared<std::promise<void>>();
  auto j = coral::spawn(place.get_executor(), [&ch, started]() -> coral::task<std::string> {
    try {
      started->set_value();
      co_await ch.receive();
    } catch (const std::runtime_error& e) {
      co_return e.what();
    }
    co_return "received";
  });
  BOOST_REQUIRE(started->get_future().wait_for(patience) == std::future_status::ready);
  ch.close(std::make_exception_ptr(std::runtime_error("cause")));
  BOOST_TEST(get_within(std::move(j)) == "cause");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(produce)

CORAL_TEST_CASE_ON_EACH_PLACE(produce_feeds_a_channel_and_closes_it_when_the_producer_returns, places) {
  auto j = coral::spawn(place.get_executor(), [ex = place.get_executor()]() -> coral::task<std::vector<int>> {
    auto numbers = coral::produce<int>(ex, 2, [](coral::channel<int>& out) -> coral::task<> {
      for (int i = 0; i < 100; ++i) co_await out.send(i);
    });
    co_return co_await drain(numbers);
  });
  const auto got = get_within(std::move(j));
  BOOST_REQUIRE(got.size() == 100u);
  for (int i = 0; i < 100; ++i) BOOST_TEST(got[i] == i);
}

CORAL_TEST_CASE_ON_EACH_PLACE(a_producer_that_throws_closes_its_channel_with_that_cause, places) {
  auto j = coral::spawn(place.get_executor(), [ex = place.get_executor()]() -> coral::task<std::string> {
    auto numbers = coral::produce<int>(ex, 8, [](coral::channel<int>& out) -> coral::task<> {
      for (int i = 0; i < 3; ++i) co_await out.send(i);
      throw std::runtime_error("no more numbers");
    });
    std::string log;
    try {
      while (auto v = co_await numbers.next()) log += std::to_string(*v);
    } catch (const std::runtime_error& e) {
      log += std::string(" ") + e.what();
    }
    co_return log;
  });
  BOOST_TEST(get_within(std::move(j)) == "012 no more numbers");
}

CORAL_TEST_CASE_ON_EACH_PLACE(a_consumer_that_stops_ends_its_producer, places) {
  auto ended = std::make_shared<std::promise<std::string>>();
  auto j = coral::spawn(place.get_executor(), [ex = place.get_executor(), ended]() -> coral::task<int> {
    auto numbers = coral::produce<payload>(ex, 4, [ended](coral::channel<payload>& out) -> coral::task<> {
      try {
        for (int i = 0;; ++i) co_await out.send(payload(0, i));
      } catch (const coral::channel_closed&) {
        ended->set_value("send failed with channel_closed");
        throw;
      }
    });
    auto first = co_await numbers.receive();
    first.received = true;
    co_return first.value;  // `numbers` goes: that closes it
  });
  BOOST_TEST(get_within(std::move(j)) == 0);
  auto f = ended->get_future();
  BOOST_REQUIRE(f.wait_for(patience) == std::future_status::ready);
  BOOST_TEST(f.get() == "send failed with channel_closed");
}

BOOST_AUTO_TEST_CASE(a_producer_on_a_destroyed_context_closes_its_channel_and_frees_everything) {
  coral::channel<payload> numbers;
  {
    asio::io_context ctx;
    numbers = coral::produce<payload>(ctx, 1, [](coral::channel<payload>& out) -> coral::task<> {
      for (int i = 0;; ++i) co_await out.send(payload(0, i));
    });
    ctx.poll();
    // One buffered; one waiting in its send, and the temporary it was moved from.
    BOOST_TEST(lifetime::alive == 3);
  }
  BOOST_TEST(lifetime::alive == 1);  // the buffered value stays receivable
  BOOST_TEST(numbers.closed());
  auto v = numbers.try_receive();
  BOOST_REQUIRE(v.has_value());
  v->received = true;
  BOOST_TEST(v->value == 0);
}

BOOST_AUTO_TEST_SUITE_END()

namespace {

// A broadcast value: which sender sent it, its number in that sender's sequence, and how many
// times it was copied (to prove each subscriber's value is one copy at most).
struct stamped {
  static inline std::atomic<int> copies{0};
  int sender = 0;
  int number = 0;
  stamped(int s, int n) : sender(s), number(n) {}
  stamped(const stamped& other) : sender(other.sender), number(other.number) { ++copies; }
  stamped(stamped&&) noexcept = default;
  stamped& operator=(const stamped&) = default;
  stamped& operator=(stamped&&) noexcept = default;
};

// What one subscriber saw until the channel closed: per sender, the numbers in the order
// received, and the values its lagged errors said it missed.
struct subscriber_log {
  std::vector<std::vector<int>> numbers;
  std::uint64_t missed = 0;
  std::size_t received() const {
    std::size_t n = 0;
    for (const auto& s : numbers) n += s.size();
    return n;
  }
};

// Receives until closed, yielding every `pause` values (a slow subscriber), counting lag.
coral::task<subscriber_log> subscribe_until_closed(coral::broadcast_subscriber<stamped> sub, int senders,
                                                   int pause = 0) {
  subscriber_log log;
  log.numbers.resize(senders);
  for (int k = 1;; ++k) {
    try {
      auto v = co_await sub.next();
      if (!v) break;
      log.numbers[v->sender].push_back(v->number);
    } catch (const coral::lagged& e) {
      log.missed += e.missed();
    }
    if (pause && k % pause == 0) co_await coral::yield();
  }
  co_return log;
}

std::vector<int> numbers_up_to(int n) {
  std::vector<int> v(n);
  for (int i = 0; i < n; ++i) v[i] = i;
  return v;
}

// Where each of a broadcast's operations stands, as a test records it.
template <class F>
coral::task<std::string> outcome(F f) {
  try {
    co_return co_await f();
  } catch (const coral::lagged& e) {
    co_return "lagged " + std::to_string(e.missed());
  } catch (const coral::channel_closed&) {
    co_return "closed";
  } catch (const coral::timeout_error&) {
    co_return "timeout";
  } catch (const boost::system::system_error& e) {
    co_return outcome_of(e);
  }
}

// A T whose copy throws while copies_fail is set.
struct fragile {
  static inline bool copies_fail = false;
  int value = 0;
  explicit fragile(int v) : value(v) {}
  fragile(const fragile& other) : value(other.value) {
    if (copies_fail) throw std::runtime_error("copy failed");
  }
  fragile(fragile&&) noexcept = default;
};

// A value whose copies and moves (counted together) may fail: the n-th made throws. A join lends a
// T whose move may throw instead of moving it. It counts as a lifetime. (Atomics: a value may be
// made on any thread of the executor under test, one at a time.)
struct brittle_copy : lifetime {
  static inline std::atomic<int> made_until_failure{0};  // 0: none fails
  static inline std::atomic<int> made{0};
  int value = 0;
  explicit brittle_copy(int v) : value(v) {}
  brittle_copy(const brittle_copy& other) : lifetime(), value(other.value) { count(); }
  brittle_copy(brittle_copy&& other) : lifetime(), value(other.value) { count(); }
  brittle_copy& operator=(const brittle_copy&) = delete;
  static void count() {
    ++made;
    if (made_until_failure.load() > 0 && --made_until_failure == 0) throw std::runtime_error("brittle_copy: failed");
  }
};

bool is_brittle_copy_failure(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::runtime_error& failure) {
    return std::string(failure.what()) == "brittle_copy: failed";
  }
}

// Races a subscriber's receive of 7 in `race(sub, limit)` (which returns the value received) on
// `Place`, with another subscriber holding the value too (the receive copies it) or not (it moves
// it), the value sent before the race (`limit` is 10 ms) or while the race waits (an hour), and the
// n-th copy or move on the receiving side failing, for every n up to 6: whether the race throws or
// not, the subscriber has the value once, from the race or from its next receive, and no
// brittle_copy is left or made twice. A race in which nothing fails makes the subscriber's T once.
template <class Place, class Race>
void check_a_raced_broadcast_receive_loses_nothing(const char* form, Race race) {
  Place place;
  auto ex = place.get_executor();
  for (bool shared : {false, true}) {
    for (bool ready : {true, false}) {
      for (int failing = 0; failing <= 6; ++failing) {
        BOOST_TEST_CONTEXT(form << (shared ? ", shared" : ", last holder")
                                << (ready ? ", value ready" : ", value sent while the race waits")
                                << (failing ? ", the receiving side's T number " + std::to_string(failing) + " fails"
                                            : std::string(", nothing fails"))) {
          coral::broadcast_channel<brittle_copy> b(2);
          auto sub = b.subscribe();
          std::optional<coral::broadcast_subscriber<brittle_copy>> other;
          if (shared) other.emplace(b.subscribe());
          brittle_copy sent(7);
          if (ready) BOOST_TEST_REQUIRE(b.try_send(sent));
          // (A send makes the channel's value, before the receiving side makes anything.)
          const int send_made = ready ? 0 : 1;
          brittle_copy::made = 0;
          brittle_copy::made_until_failure = failing == 0 ? 0 : send_made + failing;
          std::exception_ptr failure;
          auto raced = run_a_raced_receive(
              ex, ready, [&] { return b.try_send(sent); }, [&](std::chrono::milliseconds d) { return race(sub, d); },
              failure);
          std::vector<int> got;
          if (raced) got.push_back(*raced);
          if (failure) {
            BOOST_TEST(failing != 0);
            BOOST_TEST(is_brittle_copy_failure(failure));
          }
          const int made = brittle_copy::made - send_made;
          brittle_copy::made_until_failure = 0;
          if (failing == 0) BOOST_TEST(made == 1);
          if (got.empty()) {
            auto again = sub.try_receive();
            BOOST_TEST_REQUIRE(again.has_value(), "the value was lost for the subscriber");
            got.push_back(again->value);
          }
          BOOST_TEST(got == std::vector<int>{7}, boost::test_tools::per_element());
          BOOST_TEST(!sub.try_receive().has_value(), "the subscriber got the value twice");
          if (shared) BOOST_TEST(other->try_receive().value_or(brittle_copy(-1)).value == 7);
          BOOST_TEST(lifetime::alive == 1);  // `sent`
        }
      }
    }
  }
}

int value_of(int v) {
  return v;
}
int value_of(const brittle_copy& v) {
  return v.value;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(broadcast_channel)

// Invariant 7 for a broadcast channel's raced receive: the value received is the subscriber's
// until the receiving task has its own T, however many results and tasks the race passes it
// through; so the receiving side makes that T once, and if that throws, the subscriber's next
// receive gets the value.
BOOST_AUTO_TEST_CASE_TEMPLATE(a_raced_receive_whose_copy_or_move_throws_leaves_the_value_to_the_subscriber, Place,
                              every_place) {
  using subscriber = coral::broadcast_subscriber<brittle_copy>;
  using limit = std::chrono::milliseconds;
  check_a_raced_broadcast_receive_loses_nothing<Place>("when_any(sub.receive(), d)",
                                                       [](subscriber& sub, limit d) -> coral::task<int> {
                                                         auto won = co_await coral::when_any(sub.receive(), d);
                                                         co_return std::get<0>(won).value;
                                                       });
  check_a_raced_broadcast_receive_loses_nothing<Place>("sub.receive() || sleep_for(d)",
                                                       [](subscriber& sub, limit d) -> coral::task<int> {
                                                         auto won = co_await (sub.receive() || coral::sleep_for(d));
                                                         co_return std::get<0>(won).value;
                                                       });
  check_a_raced_broadcast_receive_loses_nothing<Place>("with_timeout(d, sub.receive())",
                                                       [](subscriber& sub, limit d) -> coral::task<int> {
                                                         auto v = co_await coral::with_timeout(d, sub.receive());
                                                         co_return v.value;
                                                       });
  check_a_raced_broadcast_receive_loses_nothing<Place>("sub.next() || sleep_for(d)",
                                                       [](subscriber& sub, limit d) -> coral::task<int> {
                                                         auto won = co_await (sub.next() || coral::sleep_for(d));
                                                         co_return std::get<0>(won)->value;
                                                       });
  check_a_raced_broadcast_receive_loses_nothing<Place>(
      "when_any(with_timeout(d, sub.receive()), d)", [](subscriber& sub, limit d) -> coral::task<int> {
        auto won = co_await coral::when_any(coral::with_timeout(d, sub.receive()), d);
        co_return std::get<0>(won).value;
      });
  BOOST_TEST(lifetime::alive == 0);
}

// A race that won a value (`race(sub)`, a task on an io_context yielding what it received), in a
// task whose context is destroyed after any number of its handlers ran (the value was handed to
// the waiting race, which wins; the losing branch is being cancelled; the task resumes): the task
// got the value, or the subscriber's next receive gets it.
template <class T, class Race>
void check_a_won_race_survives_the_end_of_its_context(const char* form, Race race) {
  for (int steps = 0;; ++steps) {
    BOOST_TEST_REQUIRE(steps < 100, "the race never ends");
    BOOST_TEST_CONTEXT(form << ", the context destroyed after " << steps << " of its handlers ran") {
      coral::broadcast_channel<T> b(2);
      auto sub = b.subscribe();
      std::optional<int> received;
      bool ended = false;
      {
        asio::io_context ctx(1);
        coral::spawn(ctx, [&]() -> coral::task<> { received = co_await race(sub); });
        ctx.poll();  // the race waits
        BOOST_TEST_REQUIRE(b.try_send(T(7)));
        for (int i = 0; i < steps && ctx.poll_one() == 1;) ++i;
        ended = received.has_value();  // (more steps would change nothing)
      }
      if (received) {
        BOOST_TEST(*received == 7);
      } else {
        auto again = sub.try_receive();
        BOOST_TEST_REQUIRE(again.has_value(), "the value was lost for the subscriber");
        BOOST_TEST(value_of(*again) == 7);
      }
      BOOST_TEST(!sub.try_receive().has_value());
      BOOST_TEST(lifetime::alive == 0);
      if (ended) return;
    }
  }
}

template <class T>
void check_won_races_survive_the_end_of_their_context() {
  using subscriber = coral::broadcast_subscriber<T>;
  using std::chrono::hours;
  check_a_won_race_survives_the_end_of_its_context<T>("when_any(sub.receive(), d)",
                                                      [](subscriber& sub) -> coral::task<int> {
                                                        auto won = co_await coral::when_any(sub.receive(), hours(1));
                                                        co_return value_of(std::get<0>(won));
                                                      });
  check_a_won_race_survives_the_end_of_its_context<T>("sub.receive() || d", [](subscriber& sub) -> coral::task<int> {
    auto won = co_await (sub.receive() || hours(1));
    co_return value_of(std::get<0>(won));
  });
  check_a_won_race_survives_the_end_of_its_context<T>("when_any(sub.next(), d)",
                                                      [](subscriber& sub) -> coral::task<int> {
                                                        auto won = co_await coral::when_any(sub.next(), hours(1));
                                                        co_return value_of(*std::get<0>(won));
                                                      });
  coral::semaphore none(0);
  check_a_won_race_survives_the_end_of_its_context<T>(
      "when_any(sub.receive(), s.acquire())", [&](subscriber& sub) -> coral::task<int> {
        auto won = co_await coral::when_any(sub.receive(), none.acquire());
        co_return value_of(std::get<0>(won));
      });
  check_a_won_race_survives_the_end_of_its_context<T>(
      "with_timeout(d, sub.receive())", [](subscriber& sub) -> coral::task<int> {
        co_return value_of(co_await coral::with_timeout(hours(1), sub.receive()));
      });
  check_a_won_race_survives_the_end_of_its_context<T>(
      "when_any(when_any(sub.receive(), d), d)", [](subscriber& sub) -> coral::task<int> {
        auto won = co_await coral::when_any(coral::when_any(sub.receive(), hours(1)), hours(2));
        co_return value_of(std::get<0>(std::get<0>(won)));
      });
}

// docs/broadcast_channel.md: a value handed to a waiting receive whose task is destroyed before it
// resumes goes back to the subscriber; also when the receive was raced and won, whatever T is.
BOOST_AUTO_TEST_CASE(a_raced_receive_that_won_leaves_the_value_to_the_subscriber_if_its_task_dies_before_it_resumes) {
  check_won_races_survive_the_end_of_their_context<int>();
  check_won_races_survive_the_end_of_their_context<brittle_copy>();
}

// Invariant 7 inside when_all: the values its receives took stay the subscribers' (or the
// channels', for a T whose move may throw) until the whole tuple is made. If the join fails (a
// sibling failed, or a copy or move of T on the receiving side threw, at any of the n-th
// constructions), each subscriber's or channel's next receive gets its value; if it succeeds, the
// task has each value once.
CORAL_TEST_CASE_ON_EACH_PLACE(a_when_all_of_receives_that_fails_leaves_each_value_where_it_was, every_place) {
  auto ex = place.get_executor();
  using std::chrono::milliseconds;
  const char* forms[] = {"when_all(sa.receive(), sb.receive())",
                         "when_all(sa.next(), sb.receive())",
                         "when_all(sa.receive(), a failing task)",
                         "when_all(ca.receive(), cb.next()) of channels",
                         "when_all(ca.receive(), a failing task) of a channel",
                         "when_all(when_any(sa.receive(), d), a failing task)"};
  for (int form = 0; form < 6; ++form) {
    for (int failing = 0; failing <= 8; ++failing) {
      BOOST_TEST_CONTEXT(forms[form] << ", the receiving side's T number " << failing << " fails (0: none)") {
        coral::broadcast_channel<brittle_copy> b(2);
        auto sa = b.subscribe();
        auto sb = b.subscribe();
        coral::channel<brittle_copy> ca(1), cb(1);
        BOOST_TEST_REQUIRE(b.try_send(brittle_copy(7)));
        BOOST_TEST_REQUIRE(ca.try_send(brittle_copy(8)));
        BOOST_TEST_REQUIRE(cb.try_send(brittle_copy(9)));
        brittle_copy::made_until_failure = failing;
        std::vector<int> got;
        std::exception_ptr failure;
        try {
          got = get_within(coral::spawn(ex, [&]() -> coral::task<std::vector<int>> {
            if (form == 0) {
              auto [x, y] = co_await coral::when_all(sa.receive(), sb.receive());
              co_return std::vector<int>{x.value, y.value};
            } else if (form == 1) {
              auto [x, y] = co_await coral::when_all(sa.next(), sb.receive());
              co_return std::vector<int>{x->value, y.value};
            } else if (form == 2) {
              co_await coral::when_all(sa.receive(), fail_after(milliseconds(1), "sibling"));
            } else if (form == 3) {
              auto [x, y] = co_await coral::when_all(ca.receive(), cb.next());
              co_return std::vector<int>{x.value, y->value};
            } else if (form == 4) {
              co_await coral::when_all(ca.receive(), fail_after(milliseconds(1), "sibling"));
            } else {
              co_await coral::when_all(coral::when_any(sa.receive(), std::chrono::hours(1)),
                                       fail_after(milliseconds(1), "sibling"));
            }
            co_return std::vector<int>{};
          }));
        } catch (...) {
          failure = std::current_exception();
        }
        brittle_copy::made_until_failure = 0;
        const bool joined = !got.empty();
        BOOST_TEST(joined != bool(failure));
        if (joined)
          BOOST_TEST(got == (form < 3 ? std::vector<int>{7, 7} : std::vector<int>{8, 9}),
                     boost::test_tools::per_element());
        // Each source still has its value once, unless the join took it.
        auto check_left = [&](auto& source, const char* name, int value, bool taken) {
          BOOST_TEST_CONTEXT(name) {
            if (!taken) BOOST_TEST(source.try_receive().value_or(brittle_copy(-1)).value == value, "the value is gone");
            BOOST_TEST(!source.try_receive().has_value(), "the value is there twice");
          }
        };
        check_left(sa, "sa", 7, joined && form < 2);
        check_left(sb, "sb", 7, joined && form < 2);
        check_left(ca, "ca", 8, joined && form == 3);
        check_left(cb, "cb", 9, joined && form == 3);
        BOOST_TEST(lifetime::alive == 0);
      }
    }
  }
}

// tokio's broadcast test, on every executor kind: several senders, several subscribers, a buffer
// small enough that senders wait for the slowest; each subscriber saw every value of every
// sender, each sender's in order, and nothing twice.
CORAL_TEST_CASE_ON_EACH_PLACE(every_subscriber_receives_every_value_in_order_and_a_send_waits_for_the_slowest,
                              every_place) {
  constexpr int senders = 3, per_sender = 120, subscribers = 4;
  coral::broadcast_channel<stamped> b(2);
  std::vector<coral::job<subscriber_log>> readers;
  for (int s = 0; s < subscribers; ++s)
    readers.push_back(coral::spawn(place.get_executor(), subscribe_until_closed(b.subscribe(), senders, s + 1)));
  std::vector<coral::job<>> writers;
  for (int s = 0; s < senders; ++s) {
    writers.push_back(coral::spawn(place.get_executor(), [&b, s]() -> coral::task<> {
      for (int i = 0; i < per_sender; ++i) co_await b.send(stamped(s, i));
    }));
  }
  for (auto& w : writers) get_within(std::move(w));
  b.close();
  for (auto& r : readers) {
    const auto log = get_within(std::move(r));
    BOOST_TEST(log.missed == 0u);
    for (const auto& numbers : log.numbers)
      BOOST_TEST(numbers == numbers_up_to(per_sender), boost::test_tools::per_element());
  }
  BOOST_TEST(b.size() == 0u);
}

BOOST_AUTO_TEST_CASE(a_subscriber_gets_only_what_is_sent_after_it_subscribed_and_values_are_copied_once_each) {
  coral::event_loop loop;
  coral::broadcast_channel<stamped> b(8);
  BOOST_TEST(b.try_send(stamped(0, -1)));  // nobody subscribed: received by nobody
  BOOST_TEST(b.size() == 0u);
  auto early = b.subscribe();
  BOOST_TEST(b.try_send(stamped(0, 0)));
  auto late = b.subscribe();
  auto third = b.subscribe();
  BOOST_TEST(b.subscriber_count() == 3u);
  stamped::copies = 0;
  for (int i = 1; i < 4; ++i) BOOST_TEST(b.try_send(stamped(0, i)));
  BOOST_TEST(stamped::copies == 0);  // stored once, moved in
  auto j = coral::spawn(loop, [&]() -> coral::task<std::vector<int>> {
    std::vector<int> seen;
    for (int i = 0; i < 4; ++i) seen.push_back((co_await early.receive()).number);
    for (int i = 0; i < 3; ++i) seen.push_back((co_await late.receive()).number);
    for (int i = 0; i < 3; ++i) seen.push_back((co_await third.receive()).number);
    co_return seen;
  });
  BOOST_TEST(get_within(std::move(j)) == (std::vector<int>{0, 1, 2, 3, 1, 2, 3, 1, 2, 3}),
             boost::test_tools::per_element());
  // Values 1..3 went to three subscribers: two copies each, the last subscriber got the value.
  BOOST_TEST(stamped::copies == 6);
  BOOST_TEST(b.size() == 0u);
  BOOST_TEST(!early.try_receive().has_value());
}

// drop_oldest, tokio's rule: the sender never waits; a subscriber that fell behind gets lagged
// with the count it lost, then the oldest value still buffered.
BOOST_AUTO_TEST_CASE(a_subscriber_that_fell_behind_gets_lagged_with_what_it_missed_then_the_oldest_value_kept) {
  coral::event_loop loop;
  coral::broadcast_channel<int> b(2, coral::overflow::drop_oldest);
  auto slow = b.subscribe();
  auto fast = b.subscribe();
  auto j = coral::spawn(loop, [&]() -> coral::task<std::vector<std::string>> {
    std::vector<std::string> seen;
    for (int i = 1; i <= 5; ++i) {
      co_await b.send(i);  // never waits
      seen.push_back("fast " + std::to_string(co_await fast.receive()));
    }
    for (int i = 0; i < 3; ++i) {
      seen.push_back(
          co_await outcome([&]() -> coral::task<std::string> { co_return std::to_string(co_await slow.receive()); }));
    }
    b.close();
    for (auto* sub : {&slow, &fast}) {
      seen.push_back(
          co_await outcome([&]() -> coral::task<std::string> { co_return std::to_string(co_await sub->receive()); }));
    }
    co_return seen;
  });
  BOOST_TEST(get_within(std::move(j)) == (std::vector<std::string>{"fast 1", "fast 2", "fast 3", "fast 4", "fast 5",
                                                                   "lagged 3", "4", "5", "closed", "closed"}),
             boost::test_tools::per_element());
}

// A fast sender and slow subscribers across threads: every value a subscriber did not receive is
// counted by its lagged errors, and what it received came in order.
CORAL_TEST_CASE_ON_EACH_PLACE(under_drop_oldest_missed_plus_received_is_what_was_sent, places) {
  constexpr int per_sender = 5000, subscribers = 3;
  coral::broadcast_channel<stamped> b(4, coral::overflow::drop_oldest);
  std::vector<coral::job<subscriber_log>> readers;
  for (int s = 0; s < subscribers; ++s)
    readers.push_back(coral::spawn(place.get_executor(), subscribe_until_closed(b.subscribe(), 1, s + 1)));
  auto writer = coral::spawn(place.get_executor(), [&b]() -> coral::task<> {
    for (int i = 0; i < per_sender; ++i) {
      co_await b.send(stamped(0, i));
      if (i % 64 == 0) co_await coral::yield();
    }
  });
  get_within(std::move(writer));
  b.close();
  for (auto& r : readers) {
    const auto log = get_within(std::move(r));
    const auto& numbers = log.numbers[0];
    BOOST_TEST(log.missed + numbers.size() == std::size_t{per_sender});
    BOOST_TEST((std::adjacent_find(numbers.begin(), numbers.end(), std::greater_equal<>()) == numbers.end()));
    BOOST_TEST((!numbers.empty() && numbers.back() == per_sender - 1));  // the last values are kept
  }
}

// Dropping a subscriber releases its hold on the buffer: a sender waiting for it proceeds.
BOOST_AUTO_TEST_CASE(dropping_a_subscriber_lets_a_sender_waiting_for_it_proceed) {
  asio::io_context ctx(1);
  coral::broadcast_channel<int> b(1);
  auto reader = b.subscribe();
  auto stalled = std::make_optional(b.subscribe());
  std::vector<std::string> seen;
  coral::spawn(ctx, [&]() -> coral::task<> {
    for (int i = 1; i <= 3; ++i) {
      co_await b.send(i);
      seen.push_back("sent " + std::to_string(i));
    }
  });
  ctx.poll();
  BOOST_TEST(seen == (std::vector<std::string>{"sent 1"}), boost::test_tools::per_element());
  BOOST_TEST(reader.try_receive().value_or(0) == 1);
  ctx.poll();
  BOOST_TEST(seen.size() == 1u);  // `stalled` still has 1 to receive
  stalled.reset();
  ctx.poll();
  BOOST_TEST(seen == (std::vector<std::string>{"sent 1", "sent 2"}), boost::test_tools::per_element());
  BOOST_TEST(reader.try_receive().value_or(0) == 2);
  ctx.run();
  BOOST_TEST(reader.try_receive().value_or(0) == 3);
  BOOST_TEST(b.subscriber_count() == 1u);
}

// Subscribers leave mid-stream (each after a random number of values) while senders wait for
// them: the senders finish, and those that stay saw everything in order.
BOOST_AUTO_TEST_CASE_TEMPLATE(subscribers_leaving_mid_stream_never_strand_a_waiting_sender, Place, places) {
  constexpr int senders = 2, per_sender = 300;
  std::mt19937 random(11);
  Place place;
  coral::broadcast_channel<stamped> b(1);
  std::vector<coral::job<subscriber_log>> stayers;
  std::vector<coral::job<>> leavers;
  for (int s = 0; s < 2; ++s)
    stayers.push_back(coral::spawn(place.get_executor(), subscribe_until_closed(b.subscribe(), senders)));
  for (int s = 0; s < 4; ++s) {
    const int leave_after = static_cast<int>(random() % 100);
    leavers.push_back(
        coral::spawn(place.get_executor(), [](coral::broadcast_subscriber<stamped> sub, int n) -> coral::task<> {
          for (int i = 0; i < n; ++i) co_await sub.receive();
        }(b.subscribe(), leave_after)));
  }
  std::vector<coral::job<>> writers;
  for (int s = 0; s < senders; ++s) {
    writers.push_back(coral::spawn(place.get_executor(), [&b, s]() -> coral::task<> {
      for (int i = 0; i < per_sender; ++i) co_await b.send(stamped(s, i));
    }));
  }
  for (auto& w : writers) get_within(std::move(w));
  for (auto& l : leavers) get_within(std::move(l));
  b.close();
  for (auto& r : stayers) {
    const auto log = get_within(std::move(r));
    for (const auto& numbers : log.numbers)
      BOOST_TEST(numbers == numbers_up_to(per_sender), boost::test_tools::per_element());
  }
  BOOST_TEST(b.subscriber_count() == 0u);
}

// A cancelled send sent nothing; a cancelled receive took nothing (the subscriber's place is
// unchanged); raced and timed operations that lost did not happen, on every executor kind.
CORAL_TEST_CASE_ON_EACH_PLACE(cancelled_raced_and_timed_operations_that_lost_did_not_happen, every_place) {
  coral::broadcast_channel<int> b(1);
  auto first = b.subscribe();
  auto second = b.subscribe();
  auto j = coral::spawn(place.get_executor(), [&]() -> coral::task<std::vector<std::string>> {
    std::vector<std::string> seen;
    auto receive = [&](coral::broadcast_subscriber<int>& s) {
      return outcome([&]() -> coral::task<std::string> { co_return std::to_string(co_await s.receive()); });
    };
    seen.push_back(co_await outcome([&]() -> coral::task<std::string> {
      co_await coral::with_timeout(2ms, first.receive());  // nothing sent yet
      co_return "received";
    }));
    co_await b.send(1);
    seen.push_back(co_await outcome([&]() -> coral::task<std::string> {
      co_await coral::with_timeout(2ms, b.send(2));  // full: both have 1 to receive
      co_return "sent";
    }));
    auto raced = co_await coral::when_any(first.receive(), second.receive());  // one of them takes 1
    seen.push_back("raced " + std::to_string(std::visit([](int v) { return v; }, raced)));
    seen.push_back(co_await receive(raced.index() == 0 ? second : first));  // the other still has 1
    auto r = co_await (first.receive() || 1ms);
    seen.push_back(r.index() == 1 ? "slept" : "received");
    co_await b.send(3);  // 2 was never sent
    seen.push_back(co_await receive(first));
    seen.push_back(co_await receive(second));
    co_return seen;
  });
  BOOST_TEST(
      get_within(std::move(j)) == (std::vector<std::string>{"timeout", "timeout", "raced 1", "1", "slept", "3", "3"}),
      boost::test_tools::per_element());

  // A waiting receive and a waiting send, cancelled.
  auto started = std::make_shared<std::promise<void>>();
  auto waiting_receive = coral::spawn(place.get_executor(), [&first, started]() -> coral::task<int> {
    started->set_value();
    co_return co_await first.receive();
  });
  BOOST_REQUIRE(started->get_future().wait_for(patience) == std::future_status::ready);
  waiting_receive.cancel();
  BOOST_TEST((failure_of(std::move(waiting_receive)) == asio::error::operation_aborted));
  BOOST_TEST(b.try_send(4));
  BOOST_TEST(first.try_receive().value_or(0) == 4);  // the cancelled receive took nothing
  started = std::make_shared<std::promise<void>>();
  auto waiting_send = coral::spawn(place.get_executor(), [&b, started]() -> coral::task<> {
    started->set_value();
    co_await b.send(5);  // full: `second` has 4 to receive
  });
  BOOST_REQUIRE(started->get_future().wait_for(patience) == std::future_status::ready);
  waiting_send.cancel();
  const auto send_failure = failure_of(std::move(waiting_send));
  BOOST_TEST(second.try_receive().value_or(0) == 4);
  BOOST_TEST(b.try_send(6));
  BOOST_TEST(second.try_receive().value_or(0) == (send_failure ? 6 : 5));
  BOOST_TEST((send_failure == asio::error::operation_aborted || !send_failure));
}

// One send wakes two waiting receives that are branches of one race: the first wins and takes the
// value, the second lost and took nothing (its subscriber still has the value to receive).
CORAL_TEST_CASE_ON_EACH_PLACE(a_value_handed_to_two_waiting_receives_of_one_race_is_taken_by_one, places) {
  coral::broadcast_channel<int> b(2);
  auto first = b.subscribe();
  auto second = b.subscribe();
  for (int round = 0; round < 50; ++round) {
    auto started = std::make_shared<std::promise<void>>();
    auto j = coral::spawn(place.get_executor(), [&, started]() -> coral::task<std::pair<std::size_t, int>> {
      started->set_value();
      auto r = co_await coral::when_any(first.receive(), second.receive());
      co_return std::pair{r.index(), std::visit([](int v) { return v; }, r)};
    });
    BOOST_REQUIRE(started->get_future().wait_for(patience) == std::future_status::ready);
    BOOST_TEST_REQUIRE(b.try_send(round));
    const auto [winner, value] = get_within(std::move(j));
    BOOST_TEST_REQUIRE(value == round);
    auto& loser = winner == 0 ? second : first;
    BOOST_TEST_REQUIRE(loser.try_receive().value_or(-1) == round);
    BOOST_TEST_REQUIRE(!first.try_receive().has_value());
    BOOST_TEST_REQUIRE(!second.try_receive().has_value());
  }
  // Both waiting for certain (one thread, run until they suspend), then one send.
  asio::io_context ctx(1);
  auto j = coral::spawn(ctx, [&]() -> coral::task<std::size_t> {
    const auto r = co_await coral::when_any(first.receive(), second.receive());
    co_return r.index();
  });
  ctx.poll();
  ctx.restart();
  BOOST_TEST(b.try_send(7));
  ctx.run();
  auto& loser = get_within(std::move(j)) == 0 ? second : first;
  BOOST_TEST(loser.try_receive().value_or(-1) == 7);
}

// A cancellation that races a send handing the value over: the receive either got the value or
// took nothing, never both or neither.
CORAL_TEST_CASE_ON_EACH_PLACE(a_receive_cancelled_while_a_value_is_handed_to_it_gets_it_or_leaves_it, places) {
  coral::broadcast_channel<int> b(4);
  auto sub = b.subscribe();
  for (int round = 0; round < 150; ++round) {
    auto started = std::make_shared<std::promise<void>>();
    auto r = coral::spawn(place.get_executor(), [&sub, started]() -> coral::task<int> {
      started->set_value();
      co_return co_await sub.receive();
    });
    BOOST_REQUIRE(started->get_future().wait_for(patience) == std::future_status::ready);
    std::thread canceller([&] { r.cancel(); });
    BOOST_TEST_REQUIRE(b.try_send(round));
    canceller.join();
    std::optional<int> got;
    try {
      got = get_within(std::move(r));
    } catch (const boost::system::system_error& e) {
      BOOST_TEST_REQUIRE((e.code() == asio::error::operation_aborted));
    }
    if (!got) got = sub.try_receive();  // it took nothing: the value is still there
    BOOST_TEST_REQUIRE(got.value_or(-1) == round);
    BOOST_TEST_REQUIRE(!sub.try_receive().has_value());
  }
}

// asyncio's wait_for around every operation: sends and receives time out at random moments and
// are retried. A send that timed out sent nothing and a receive that timed out took nothing, so
// every subscriber still sees every value exactly once, in order.
CORAL_TEST_CASE_ON_EACH_PLACE(timed_out_sends_and_receives_retried_lose_and_duplicate_nothing, places) {
  constexpr int senders = 2, per_sender = 80, subscribers = 3;
  coral::broadcast_channel<stamped> b(1);
  std::atomic<int> timeouts{0};
  std::vector<coral::job<subscriber_log>> readers;
  for (int s = 0; s < subscribers; ++s) {
    readers.push_back(coral::spawn(place.get_executor(),
                                   [](coral::broadcast_subscriber<stamped> sub, int seed,
                                      std::atomic<int>& timeouts) -> coral::task<subscriber_log> {
                                     std::mt19937 random(seed);
                                     subscriber_log log;
                                     log.numbers.resize(senders);
                                     for (;;) {
                                       try {
                                         auto v = co_await coral::with_timeout(
                                             std::chrono::microseconds(random() % 200), sub.next());
                                         if (!v) break;
                                         log.numbers[v->sender].push_back(v->number);
                                       } catch (const coral::timeout_error&) {
                                         ++timeouts;
                                       }
                                     }
                                     co_return log;
                                   }(b.subscribe(), s, timeouts)));
  }
  std::vector<coral::job<>> writers;
  for (int s = 0; s < senders; ++s) {
    writers.push_back(coral::spawn(place.get_executor(), [&b, &timeouts, s]() -> coral::task<> {
      std::mt19937 random(100 + s);
      for (int i = 0; i < per_sender;) {
        try {
          co_await coral::with_timeout(std::chrono::microseconds(random() % 200), b.send(stamped(s, i)));
          ++i;
        } catch (const coral::timeout_error&) {
          ++timeouts;  // not sent: send it again
        }
      }
    }));
  }
  for (auto& w : writers) get_within(std::move(w));
  b.close();
  for (auto& r : readers) {
    const auto log = get_within(std::move(r));
    for (const auto& numbers : log.numbers)
      BOOST_TEST(numbers == numbers_up_to(per_sender), boost::test_tools::per_element());
  }
  BOOST_TEST_MESSAGE("timeouts: " << timeouts.load());
}

BOOST_AUTO_TEST_CASE(close_fails_senders_and_lets_each_subscriber_drain_what_was_buffered_for_it) {
  asio::io_context ctx(1);
  coral::broadcast_channel<int> b(2);
  auto drained = b.subscribe();
  auto behind = b.subscribe();
  BOOST_TEST(b.try_send(1));
  BOOST_TEST(b.try_send(2));
  BOOST_TEST(drained.try_receive().value_or(0) == 1);
  BOOST_TEST(drained.try_receive().value_or(0) == 2);
  std::vector<std::string> seen(4);
  coral::spawn(ctx, [&]() -> coral::task<> {  // waits: `behind` has 1 and 2 to receive
    seen[0] = co_await outcome([&]() -> coral::task<std::string> {
      co_await b.send(3);
      co_return "sent";
    });
  });
  coral::spawn(ctx, [&]() -> coral::task<> {  // waits: nothing for it yet
    seen[1] =
        co_await outcome([&]() -> coral::task<std::string> { co_return std::to_string(co_await drained.receive()); });
  });
  ctx.poll();
  ctx.restart();
  b.close();
  BOOST_TEST(!b.try_send(4));
  ctx.run();
  ctx.restart();
  coral::spawn(ctx, [&]() -> coral::task<> {
    std::string all;
    while (auto v = co_await behind.next()) all += std::to_string(*v);
    seen[2] = all;
    seen[3] = co_await outcome([&]() -> coral::task<std::string> {
      co_await b.send(5);
      co_return "sent";
    });
  });
  ctx.run();
  BOOST_TEST(seen == (std::vector<std::string>{"closed", "closed", "12", "closed"}), boost::test_tools::per_element());
  auto after = b.subscribe();  // subscribing to a closed channel: closed at once
  BOOST_TEST(!after.try_receive().has_value());
}

BOOST_AUTO_TEST_CASE_TEMPLATE(destroying_a_context_frees_its_waiting_senders_and_receivers_and_later_sends_are_harmless,
                              Context, owned_contexts) {
  coral::broadcast_channel<int> b(1);
  auto holder = b.subscribe();
  BOOST_TEST(b.try_send(0));  // full until `holder` receives it
  {
    Context ctx;
    for (int i = 0; i < 2; ++i) {
      coral::spawn(ctx.get_executor(), [&b]() -> coral::task<> {
        lifetime alive;
        co_await b.send(1);
      });
      coral::spawn(ctx.get_executor(), [&b]() -> coral::task<> {
        lifetime alive;
        auto sub = b.subscribe();
        co_await sub.receive();
      });
    }
    ctx.settle();
    BOOST_TEST(lifetime::alive == 4);
    BOOST_TEST(b.subscriber_count() == 3u);
  }
  BOOST_TEST(lifetime::alive == 0);
  BOOST_TEST(b.subscriber_count() == 1u);  // their subscribers went with the frames
  BOOST_TEST(holder.try_receive().value_or(-1) == 0);
  BOOST_TEST(b.try_send(2));  // nothing touches the dead waiters
  BOOST_TEST(holder.try_receive().value_or(-1) == 2);
  b.close();
}

// One send completes several waiting receives. The first, on the sender's own context, is resumed
// on the sender's stack and destroys the context of a later one, whose resumption is being posted
// there: that context's destruction frees the later task, and the send goes on.
BOOST_AUTO_TEST_CASE(a_receiver_woken_first_may_destroy_the_context_of_a_receiver_the_same_send_wakes) {
  coral::broadcast_channel<int> b(4);
  asio::io_context own(1);
  auto other = std::make_unique<asio::io_context>(1);
  bool sending = false;
  bool resumed_inside_the_send = false;
  auto first = coral::spawn(own, [&]() -> coral::task<int> {
    lifetime alive;
    auto sub = b.subscribe();
    const int v = co_await sub.receive();
    resumed_inside_the_send = sending;
    other.reset();
    co_return v;
  });
  own.poll();
  own.restart();
  auto later = coral::spawn(*other, [&b]() -> coral::task<int> {
    lifetime alive;
    auto sub = b.subscribe();
    co_return co_await sub.receive();
  });
  other->poll();
  BOOST_TEST_REQUIRE(b.subscriber_count() == 2u);
  auto sender = coral::spawn(own, [&]() -> coral::task<> {
    sending = true;
    co_await b.send(7);
    sending = false;
  });
  own.run();
  BOOST_TEST(resumed_inside_the_send);  // (the case this test is about)
  BOOST_TEST(get_within(std::move(first)) == 7);
  BOOST_TEST(failure_of(later) == asio::error::operation_aborted);
  BOOST_TEST(failure_of(sender) == boost::system::error_code());
  BOOST_TEST(lifetime::alive == 0);
  BOOST_TEST(b.subscriber_count() == 0u);
}

// A copy that throws, for a subscriber receiving at once or waiting: its receive fails with the
// exception and took nothing (the value is still there for it); the other subscribers are not
// affected.
BOOST_AUTO_TEST_CASE(a_receive_whose_copy_throws_fails_with_it_and_took_nothing) {
  asio::io_context ctx(1);
  coral::broadcast_channel<fragile> b(2);
  auto a = b.subscribe();
  auto other = b.subscribe();
  BOOST_TEST(b.try_send(fragile(1)));
  fragile::copies_fail = true;
  BOOST_CHECK_THROW(a.try_receive(), std::runtime_error);
  fragile::copies_fail = false;
  BOOST_TEST(a.try_receive().value().value == 1);
  std::string waited;
  coral::spawn(ctx, [&]() -> coral::task<> {
    try {
      co_await a.receive();  // waits: then the send's copy for it throws
      waited = "received";
    } catch (const std::runtime_error& e) {
      waited = e.what();
    }
  });
  ctx.poll();
  ctx.restart();
  BOOST_TEST(b.try_send(fragile(2)));  // sent: buffered for both; the waiting receive copies it as it resumes
  fragile::copies_fail = true;
  ctx.run();
  fragile::copies_fail = false;
  BOOST_TEST(waited == "copy failed");
  BOOST_TEST(a.try_receive().value().value == 2);
  BOOST_TEST(other.try_receive().value().value == 1);
  BOOST_TEST(other.try_receive().value().value == 2);
  BOOST_TEST(b.size() == 0u);
}

// No code of T runs under the channel's lock: a value that holds a subscription to its own
// channel (its destructor unsubscribes) and whose copies read the channel neither deadlocks nor
// upsets it, when the channel drops it, hands it on, or is destroyed with it buffered.
struct uses_its_channel {
  coral::broadcast_channel<std::shared_ptr<uses_its_channel>>* channel = nullptr;
  std::optional<coral::broadcast_subscriber<std::shared_ptr<uses_its_channel>>> subscription;
  std::shared_ptr<int> destroyed;
  ~uses_its_channel() {
    ++*destroyed;
    if (channel) *destroyed += static_cast<int>(channel->size() > 100);  // (reads the channel)
  }
};

BOOST_AUTO_TEST_CASE(a_value_whose_destructor_uses_the_channel_neither_deadlocks_nor_upsets_it) {
  asio::io_context ctx(1);
  auto destroyed = std::make_shared<int>(0);
  {
    coral::broadcast_channel<std::shared_ptr<uses_its_channel>> b(1, coral::overflow::drop_oldest);
    auto make = [&](bool subscribed) {
      auto v = std::make_shared<uses_its_channel>();
      v->destroyed = destroyed;
      if (subscribed) {
        v->channel = &b;
        v->subscription.emplace(b.subscribe());
      }
      return v;
    };
    auto keep = b.subscribe();
    auto j = coral::spawn(ctx, [&]() -> coral::task<int> {
      co_await b.send(make(true));  // only the buffer holds it
      co_await b.send(make(true));  // drops the first: its destructor unsubscribes and reads b
      int lagged = 0;
      try {
        co_await keep.receive();
      } catch (const coral::lagged& e) {
        lagged = static_cast<int>(e.missed());
      }
      auto second = co_await keep.receive();  // the last holder: b lets go of it
      second.reset();
      co_await b.send(make(false));  // drops the second; stays buffered until b goes
      co_return lagged;
    });
    ctx.run();
    BOOST_TEST(get_within(std::move(j)) == 1);
    BOOST_TEST(*destroyed == 2);
    BOOST_TEST(b.subscriber_count() == 1u);  // keep: the values' own subscriptions went with them
  }
  BOOST_TEST(*destroyed == 3);
}

// The subscriber's copy is made straight into what next() and try_receive() return: a copy that
// throws there took nothing either. A value handed to a waiting receive whose task is destroyed
// before it resumes (its context shut down) goes back to the subscriber.
BOOST_AUTO_TEST_CASE(next_and_try_receive_whose_copy_throws_took_nothing_nor_a_receive_whose_task_is_gone) {
  coral::broadcast_channel<fragile> b(2);
  auto a = b.subscribe();
  auto other = b.subscribe();
  BOOST_TEST(b.try_send(fragile(1)));
  {
    asio::io_context ctx(1);
    std::string outcome;
    coral::spawn(ctx, [&]() -> coral::task<> {
      try {
        co_await a.next();
        outcome = "received";
      } catch (const std::runtime_error& e) {
        outcome = e.what();
      }
    });
    fragile::copies_fail = true;
    ctx.run();
    fragile::copies_fail = false;
    BOOST_TEST(outcome == "copy failed");
  }
  fragile::copies_fail = true;
  BOOST_CHECK_THROW(a.try_receive(), std::runtime_error);
  fragile::copies_fail = false;
  BOOST_TEST(a.try_receive().value().value == 1);
  {
    asio::io_context ctx(1);
    coral::spawn(ctx, [&]() -> coral::task<int> { co_return (co_await a.receive()).value; });
    ctx.poll();                          // the receive waits
    BOOST_TEST(b.try_send(fragile(2)));  // handed to it; its resumption is queued on ctx
  }                                      // ctx goes before the task resumes
  BOOST_TEST(a.try_receive().value().value == 2);
  BOOST_TEST(other.try_receive().value().value == 1);
  BOOST_TEST(other.try_receive().value().value == 2);
  BOOST_TEST(b.size() == 0u);
}

BOOST_AUTO_TEST_CASE(misuse_is_refused_with_a_clear_error) {
  BOOST_CHECK_THROW(coral::broadcast_channel<int>(0), std::invalid_argument);
  BOOST_CHECK_THROW(coral::broadcast_channel<int>(4, coral::overflow::drop_latest), std::invalid_argument);
  asio::io_context ctx(1);
  coral::broadcast_channel<int> b(4);
  auto sub = b.subscribe();
  std::string second;
  coral::spawn(ctx, [&]() -> coral::task<> { co_await sub.receive(); });
  coral::spawn(ctx, [&]() -> coral::task<> {
    try {
      co_await sub.receive();
    } catch (const std::logic_error&) {
      second = "logic_error";
    }
  });
  ctx.poll();
  BOOST_TEST(second == "logic_error");
  auto moved = std::move(sub);
  auto j = coral::spawn(ctx, [&]() -> coral::task<bool> { co_return !(co_await sub.next()).has_value(); });
  BOOST_TEST(b.try_send(1));
  ctx.run();
  BOOST_TEST(get_within(std::move(j)));  // a moved-from subscriber is unsubscribed
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(channel_shutdown)

// A value handed to a waiting receive whose task is destroyed before it resumes (its context shut
// down) goes back to the channel, first in line: the next receive gets it, before what was sent
// after it. For a T moved as it is and for one that travels boxed, by each form of receive.
template <class T>
void check_a_value_handed_to_a_dead_receive_goes_back() {
  for (int form = 0; form < (std::is_move_assignable_v<T> ? 3 : 2); ++form) {
    BOOST_TEST_CONTEXT((form == 0 ? "ch.receive()" : form == 1 ? "ch.next()" : "ch >> x")) {
      coral::channel<T> ch(2);
      {
        asio::io_context ctx(1);
        coral::spawn(ctx, [&]() -> coral::task<int> {
          if (form == 0) co_return value_of(co_await ch.receive());
          if (form == 1) co_return value_of(*co_await ch.next());
          if constexpr (std::is_move_assignable_v<T>) {
            T x(0);
            co_await (ch >> x);
            co_return value_of(x);
          } else {
            co_return -1;
          }
        });
        ctx.poll();                     // the receive waits
        BOOST_TEST(ch.try_send(T(1)));  // handed to it; its resumption is queued on ctx
        BOOST_TEST(ch.try_send(T(2)));  // buffered
      }                                 // ctx goes before the task resumes
      BOOST_TEST(value_of(ch.try_receive().value_or(T(-1))) == 1);
      BOOST_TEST(value_of(ch.try_receive().value_or(T(-1))) == 2);
      BOOST_TEST(!ch.try_receive().has_value());
    }
  }
  BOOST_TEST(lifetime::alive == 0);
}

BOOST_AUTO_TEST_CASE(a_value_handed_to_a_receive_whose_task_is_gone_goes_back_to_the_channel) {
  check_a_value_handed_to_a_dead_receive_goes_back<int>();
  check_a_value_handed_to_a_dead_receive_goes_back<brittle_copy>();
}

BOOST_AUTO_TEST_SUITE_END()
