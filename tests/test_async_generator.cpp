#define BOOST_TEST_MODULE coral async_generator
#include <boost/asio/steady_timer.hpp>
#include <boost/test/unit_test.hpp>
#include <future>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "test_support.hpp"

using namespace coral_test;
namespace asio = boost::asio;

BOOST_AUTO_TEST_SUITE(async_generator)

namespace {

coral::async_generator<int> counting(int n, std::shared_ptr<std::atomic<int>> produced) {
  for (int i = 0; i < n; ++i) {
    ++*produced;
    co_yield i;
  }
}

coral::task<int, coral::pool_executor> on_the_pool(int v) {
  co_return v;
}

// Waits on everything a body may wait on, between its values.
coral::async_generator<int> waiting_on_everything(coral::channel<int>& ch) {
  co_yield co_await ch.receive();
  co_await coral::sleep_for(1ms);
  co_yield 1;
  co_yield co_await on_the_pool(2);
  asio::steady_timer timer(co_await asio::this_coro::executor, 1ms);
  co_await timer.async_wait(coral::use_task);
  co_yield 3;
}

template <class T>
coral::task<std::vector<T>> drain(coral::async_generator<T> g) {
  std::vector<T> all;
  while (auto v = co_await g.next()) all.push_back(std::move(*v));
  co_return all;
}

}  // namespace

BOOST_AUTO_TEST_CASE(nothing_runs_before_the_first_value_is_asked_for_and_then_only_up_to_it) {
  coral::event_loop loop;
  auto produced = std::make_shared<std::atomic<int>>(0);
  auto j = coral::spawn(loop, [produced]() -> coral::task<std::vector<int>> {
    auto g = counting(100, produced);
    std::vector<int> seen{produced->load()};
    co_await g.next();
    seen.push_back(produced->load());
    co_await g.next();
    seen.push_back(produced->load());
    co_return seen;
  });
  BOOST_TEST(get_within(std::move(j)) == (std::vector<int>{0, 1, 2}), boost::test_tools::per_element());
}

CORAL_TEST_CASE_ON_EACH_PLACE(a_body_can_await_channels_sleeps_tasks_and_asio_operations, places) {
  coral::channel<int> ch(1);
  BOOST_REQUIRE(ch.try_send(0));
  auto j = coral::spawn(place.get_executor(), drain(waiting_on_everything(ch)));
  BOOST_TEST(get_within(std::move(j)) == (std::vector<int>{0, 1, 2, 3}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(the_body_runs_on_the_consumers_executor) {
  asio::thread_pool pool(2);
  auto strand = asio::make_strand(pool.get_executor());
  auto body = [](decltype(strand) s, std::shared_ptr<int> off) -> coral::async_generator<int> {
    for (int i = 0; i < 20; ++i) {
      co_await coral::sleep_for(100us);
      if (!s.running_in_this_thread()) ++*off;
      co_yield co_await on_the_pool(i);
      if (!s.running_in_this_thread()) ++*off;
    }
  };
  auto off = std::make_shared<int>(0);
  auto j = coral::spawn(strand, [strand, body, off]() -> coral::task<int> {
    auto g = body(strand, off);
    int sum = 0;
    while (auto v = co_await g.next()) {
      if (!strand.running_in_this_thread()) ++*off;
      sum += *v;
    }
    co_return sum;
  });
  BOOST_TEST(get_within(std::move(j)) == 190);
  BOOST_TEST(*off == 0);
}

BOOST_AUTO_TEST_CASE(an_exception_in_the_body_is_rethrown_by_next_and_then_the_generator_has_ended) {
  coral::event_loop loop;
  auto j = coral::spawn(loop, []() -> coral::task<std::string> {
    auto g = []() -> coral::async_generator<int> {
      co_yield 1;
      co_await coral::sleep_for(1ms);
      throw std::runtime_error("body failed");
    }();
    std::string log;
    log += std::to_string(*co_await g.next());
    try {
      co_await g.next();
    } catch (const std::runtime_error& e) {
      log += std::string(" ") + e.what();
    }
    log += (co_await g.next()).has_value() ? " more" : " ended";
    co_return log;
  });
  BOOST_TEST(get_within(std::move(j)) == "1 body failed ended");
}

CORAL_TEST_CASE_ON_EACH_PLACE(cancelling_the_consumer_reaches_the_wait_inside_the_body, places) {
  auto started = std::make_shared<std::promise<void>>();
  auto j = coral::spawn(place.get_executor(), [started]() -> coral::task<> {
    auto g = [](auto started) -> coral::async_generator<lifetime> {
      lifetime inside;
      started->set_value();
      co_await coral::sleep_for(std::chrono::hours(1));
      co_yield lifetime();
    }(started);
    co_await g.next();
  });
  BOOST_REQUIRE(started->get_future().wait_for(patience) == std::future_status::ready);
  j.cancel();
  BOOST_TEST((failure_of(j) == asio::error::operation_aborted));
  BOOST_TEST(lifetime::alive == 0);
}

BOOST_AUTO_TEST_CASE(a_cancelled_consumer_does_not_run_the_body) {
  coral::event_loop loop;
  auto produced = std::make_shared<std::atomic<int>>(0);
  coral::channel<int> never;
  auto started = std::make_shared<std::promise<void>>();
  auto j = coral::spawn(loop, [produced, &never, started]() -> coral::task<> {
    auto g = counting(10, produced);
    try {
      started->set_value();
      co_await never.receive();
    } catch (const boost::system::system_error&) {  // cancelled: the task stays cancelled
    }
    co_await g.next();
  });
  BOOST_REQUIRE(started->get_future().wait_for(patience) == std::future_status::ready);
  j.cancel();
  BOOST_TEST((failure_of(j) == asio::error::operation_aborted));
  BOOST_TEST(produced->load() == 0);
}

BOOST_AUTO_TEST_CASE(an_unfinished_generator_is_destroyed_without_running_further) {
  coral::event_loop loop;
  auto produced = std::make_shared<std::atomic<int>>(0);
  auto j = coral::spawn(loop, [produced]() -> coral::task<int> {
    auto g = [](auto produced) -> coral::async_generator<lifetime> {
      lifetime local;
      for (;;) {
        ++*produced;
        co_yield lifetime();
        co_await coral::sleep_for(100us);
      }
    }(produced);
    co_await g.next();
    co_await g.next();
    co_return lifetime::alive.load();
  });
  // Between values: the body's local and the (moved-from) object it is yielding.
  BOOST_TEST(get_within(std::move(j)) == 2);
  BOOST_TEST(produced->load() == 2);
  BOOST_TEST(lifetime::alive == 0);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_generator_waiting_when_its_consumers_context_is_destroyed_is_freed, Context,
                              owned_contexts) {
  coral::channel<int> ch;
  std::optional<coral::job<>> j;
  {
    Context context;
    j = coral::spawn(context.get_executor(), [&ch]() -> coral::task<> {
      auto g = [](coral::channel<int>& ch) -> coral::async_generator<lifetime> {
        lifetime local;
        co_await ch.receive();
        co_yield lifetime();
      }(ch);
      co_await g.next();
    });
    context.settle();
    BOOST_TEST(lifetime::alive == 1);
  }
  BOOST_TEST(lifetime::alive == 0);
  BOOST_TEST(!ch.try_send(1));  // nobody waits any more
  BOOST_TEST((failure_of(*j) == asio::error::operation_aborted));
}

using destroyable_places = std::tuple<on_event_loop, on_io_context_2_threads, on_thread_pool, on_pool_strand>;

BOOST_AUTO_TEST_CASE_TEMPLATE(a_generator_may_outlive_the_context_of_its_consumer, Place, destroyable_places) {
  // Declared before the context, destroyed after it, while the body waits (in a sleep, then in a
  // timer of its own): the body's frame must go with the consumer's, while the timer service lives.
  for (const bool own_timer : {false, true}) {
    coral::async_generator<lifetime> g;
    std::optional<coral::job<>> j;
    auto waiting = std::make_shared<std::promise<void>>();
    {
      Place place;
      g = [](bool own_timer, std::shared_ptr<std::promise<void>> waiting) -> coral::async_generator<lifetime> {
        lifetime local;
        waiting->set_value();
        if (own_timer) {
          asio::steady_timer timer(co_await asio::this_coro::executor, 1h);
          co_await timer.async_wait(coral::use_task);
        } else {
          co_await coral::sleep_for(1h);
        }
        co_yield lifetime();
      }(own_timer, waiting);
      j = coral::spawn(place.get_executor(), [&g]() -> coral::task<> { co_await g.next(); });
      BOOST_REQUIRE(waiting->get_future().wait_for(patience) == std::future_status::ready);
    }
    BOOST_TEST(lifetime::alive == 0);
    BOOST_TEST(!g);
    BOOST_TEST((failure_of(*j) == asio::error::operation_aborted));
  }
}

BOOST_AUTO_TEST_CASE(transforms_pull_only_what_is_asked_for) {
  coral::event_loop loop;
  auto produced = std::make_shared<std::atomic<int>>(0);
  auto j = coral::spawn(loop, [produced]() -> coral::task<std::vector<std::string>> {
    auto g = counting(1000, produced)
                 .filter([](int v) { return v % 2 == 1; })
                 .map([](int v) { return std::to_string(v * 10); })
                 .take(3);
    co_return co_await drain(std::move(g));
  });
  BOOST_TEST(get_within(std::move(j)) == (std::vector<std::string>{"10", "30", "50"}),
             boost::test_tools::per_element());
  BOOST_TEST(produced->load() == 6);
}

BOOST_AUTO_TEST_CASE(rvalues_are_moved_out_and_lvalues_copied) {
  coral::event_loop loop;
  auto j = coral::spawn(loop, []() -> coral::task<std::string> {
    auto moved = []() -> coral::async_generator<std::unique_ptr<int>> {
      co_yield std::make_unique<int>(7);
      auto p = std::make_unique<int>(8);
      co_yield std::move(p);
    }();
    std::string log;
    while (auto v = co_await moved.next()) log += std::to_string(**v);
    auto copied = [](std::shared_ptr<std::string> seen) -> coral::async_generator<std::string> {
      std::string s = "kept";
      co_yield s;
      *seen = s;
    };
    auto seen = std::make_shared<std::string>();
    auto c = copied(seen);
    log += " " + *co_await c.next();
    co_await c.next();
    log += " " + *seen;
    co_return log;
  });
  BOOST_TEST(get_within(std::move(j)) == "78 kept kept");
}

BOOST_AUTO_TEST_CASE(a_long_synchronous_run_does_not_grow_the_stack) {
  coral::event_loop loop;
  auto produced = std::make_shared<std::atomic<int>>(0);
  auto j = coral::spawn(loop, [produced]() -> coral::task<long> {
    auto g = counting(1'000'000, produced).map([](int v) { return long{v}; }).filter([](long) { return true; });
    long sum = 0;
    while (auto v = co_await g.next()) sum += *v;
    co_return sum;
  });
  BOOST_TEST(get_within(std::move(j)) == 999'999L * 1'000'000L / 2);
}

// ---- depth: long chains of transforms keep the stack flat

namespace {

// How many transforms the depth tests chain: a stack that grew by even a small frame per
// transform would overflow long before the end of the chain (in a sanitizer build too).
constexpr int chain_length = 100'000;

// A value that counts its live instances (lifetime) and the maps it went through.
struct traced {
  explicit traced(int v = 0) noexcept : value(v) {}
  int value;
  int maps = 0;
  lifetime alive;
};

// How a source gets to each of its values: at once, after a turn of its executor's queue, or
// after a short timer.
enum class pace { synchronous, yielding, sleeping };
constexpr pace every_pace[] = {pace::synchronous, pace::yielding, pace::sleeping};
const char* name_of(pace p) {
  return p == pace::synchronous ? "synchronous" : p == pace::yielding ? "yielding" : "sleeping";
}

coral::async_generator<traced> traced_values(pace p, int n, std::shared_ptr<std::atomic<int>> produced) {
  for (int i = 0; i < n; ++i) {
    if (p == pace::yielding) co_await coral::yield();
    if (p == pace::sleeping) co_await coral::sleep_for(1us);
    ++*produced;
    co_yield traced(i);
  }
}

traced one_more_map(traced t) {
  ++t.maps;
  return t;
}

coral::async_generator<traced> chain_of_maps(coral::async_generator<traced> g, int length = chain_length) {
  for (int i = 0; i < length; ++i) g = std::move(g).map(one_more_map);
  return g;
}

// Maps, filters and takes in turn; the filters let odd values through, and no take stops early.
constexpr int maps_in_mixed_chain = (chain_length + 2) / 3;
coral::async_generator<traced> mixed_chain(coral::async_generator<traced> g) {
  for (int i = 0; i < chain_length; ++i) {
    switch (i % 3) {
      case 0:
        g = std::move(g).map(one_more_map);
        break;
      case 1:
        g = std::move(g).filter([](const traced& t) { return t.value % 2 == 1; });
        break;
      default:
        g = std::move(g).take(1000);
    }
  }
  return g;
}

// What reached the consumer, value by value.
struct arrivals {
  std::vector<int> values;
  std::vector<int> maps;  // how many maps each went through
};

coral::task<arrivals> receive_all(coral::async_generator<traced> g) {
  arrivals got;
  while (auto t = co_await g.next()) {
    got.values.push_back(t->value);
    got.maps.push_back(t->maps);
  }
  co_return got;
}

using chain_places = std::tuple<on_event_loop, on_pool_strand, on_inline_executor>;

}  // namespace

BOOST_AUTO_TEST_CASE_TEMPLATE(a_hundred_thousand_chained_maps_deliver_every_value_without_growing_the_stack, Place,
                              chain_places) {
  constexpr int n = 3;
  for (const pace p : every_pace) {
    BOOST_TEST_CONTEXT("source " << name_of(p)) {
      Place place;
      auto produced = std::make_shared<std::atomic<int>>(0);
      auto j = coral::spawn(place.get_executor(), receive_all(chain_of_maps(traced_values(p, n, produced))));
      const arrivals got = get_within(std::move(j));
      BOOST_TEST(got.values == (std::vector<int>{0, 1, 2}), boost::test_tools::per_element());
      BOOST_TEST(got.maps == std::vector<int>(n, chain_length), boost::test_tools::per_element());
      BOOST_TEST(produced->load() == n);
      BOOST_TEST(lifetime::alive == 0);
    }
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_hundred_thousand_chained_maps_filters_and_takes_pull_only_what_is_asked_for, Place,
                              chain_places) {
  for (const pace p : every_pace) {
    BOOST_TEST_CONTEXT("source " << name_of(p)) {
      Place place;
      auto produced = std::make_shared<std::atomic<int>>(0);
      auto g = mixed_chain(traced_values(p, 100, produced)).take(3);
      auto j = coral::spawn(place.get_executor(), receive_all(std::move(g)));
      const arrivals got = get_within(std::move(j));
      BOOST_TEST(got.values == (std::vector<int>{1, 3, 5}), boost::test_tools::per_element());
      BOOST_TEST(got.maps == std::vector<int>(3, maps_in_mixed_chain), boost::test_tools::per_element());
      BOOST_TEST(produced->load() == 6);  // up to the third odd value
      BOOST_TEST(lifetime::alive == 0);
    }
  }
}

CORAL_TEST_CASE_ON_EACH_PLACE(an_unfinished_chain_of_a_hundred_thousand_maps_is_destroyed_without_growing_the_stack,
                              chain_places) {
  auto produced = std::make_shared<std::atomic<int>>(0);
  auto j = coral::spawn(place.get_executor(), [](coral::async_generator<traced> g) -> coral::task<int> {
    auto first = co_await g.next();
    co_return first ? first->value : -1;
  }(chain_of_maps(traced_values(pace::synchronous, 1000, produced))));
  BOOST_TEST(get_within(std::move(j)) == 0);
  BOOST_TEST(produced->load() == 1);
  BOOST_TEST(lifetime::alive == 0);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(cancelling_the_consumer_of_a_long_chain_of_maps_ends_every_frame, Place, chain_places) {
  auto waiting = std::make_shared<std::promise<void>>();
  auto source = [](std::shared_ptr<std::promise<void>> waiting) -> coral::async_generator<traced> {
    traced local;
    waiting->set_value();
    co_await coral::sleep_for(1h);
    co_yield traced();
  };
  // Each map rethrows operation_aborted to the next: slow in a sanitizer build, hence a shorter
  // chain (still far longer than a stack that grew per map would hold).
  constexpr int length = chain_length / 5;
  Place place;
  auto j = coral::spawn(place.get_executor(), receive_all(chain_of_maps(source(waiting), length)));
  BOOST_REQUIRE(waiting->get_future().wait_for(patience) == std::future_status::ready);
  j.cancel();
  BOOST_TEST((failure_of(j) == asio::error::operation_aborted));
  BOOST_TEST(lifetime::alive == 0);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_long_chain_waiting_when_its_consumers_context_is_destroyed_is_freed, Context,
                              owned_contexts) {
  coral::channel<int> ch;
  std::optional<coral::job<arrivals>> j;
  {
    Context context;
    auto source = [](coral::channel<int>& ch) -> coral::async_generator<traced> {
      traced local;
      co_await ch.receive();
      co_yield traced();
    };
    j = coral::spawn(context.get_executor(), receive_all(chain_of_maps(source(ch))));
    context.settle();
    BOOST_TEST(lifetime::alive == 1);
  }
  BOOST_TEST(lifetime::alive == 0);
  BOOST_TEST(!ch.try_send(1));  // nobody waits any more
  BOOST_TEST((failure_of(*j) == asio::error::operation_aborted));
}

BOOST_AUTO_TEST_CASE(next_of_an_empty_generator_is_refused_with_a_clear_error) {
  coral::event_loop loop;
  auto j = coral::spawn(loop, []() -> coral::task<> {
    coral::async_generator<int> empty;
    co_await empty.next();
  });
  BOOST_CHECK_THROW(get_within(std::move(j)), std::logic_error);
}

BOOST_AUTO_TEST_SUITE_END()
