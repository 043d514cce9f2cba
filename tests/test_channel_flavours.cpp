#define BOOST_TEST_MODULE coral channel flavours and produce
#include <boost/test/unit_test.hpp>
#include <memory>
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

BOOST_AUTO_TEST_CASE_TEMPLATE(a_waiting_receiver_gets_the_cause_of_a_close, Place, places) {
  Place place;
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

BOOST_AUTO_TEST_CASE_TEMPLATE(produce_feeds_a_channel_and_closes_it_when_the_producer_returns, Place, places) {
  Place place;
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

BOOST_AUTO_TEST_CASE_TEMPLATE(a_producer_that_throws_closes_its_channel_with_that_cause, Place, places) {
  Place place;
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

BOOST_AUTO_TEST_CASE_TEMPLATE(a_consumer_that_stops_ends_its_producer, Place, places) {
  Place place;
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
