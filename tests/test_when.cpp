#define BOOST_TEST_MODULE coral when_all when_any and their operators
#include <array>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <variant>
#include <vector>

#include "test_support.hpp"

using namespace coral_test;
namespace asio = boost::asio;

namespace {

coral::task<int> immediate(int v) {
  co_return v;
}

coral::task<> nothing() {
  co_return;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(when_all)

CORAL_TEST_CASE_ON_EACH_PLACE(when_all_returns_every_result_by_position, places) {
  coral::channel<std::string> ch(1);
  BOOST_TEST(ch.try_send("hello"));
  auto j = coral::spawn(place.get_executor(), [&]() -> coral::task<bool> {
    auto [a, b, c, d, e, f] = co_await coral::when_all(value_after(5ms, 1), immediate(2), nothing(), on_pool(4),
                                                       ch.receive(), std::chrono::milliseconds(1));
    co_return a == 1 && b == 2 && std::is_same_v<decltype(c), std::monostate>&& d == 4 && e == "hello" &&
        std::is_same_v<decltype(f), std::monostate>;
  });
  BOOST_TEST(get_within(std::move(j)));
}

CORAL_TEST_CASE_ON_EACH_PLACE(when_all_of_a_vector_returns_results_in_order, places) {
  auto j = coral::spawn(place.get_executor(), []() -> coral::task<std::vector<int>> {
    std::vector<coral::task<int>> tasks;
    for (int i = 0; i < 20; ++i) tasks.push_back(value_after(std::chrono::milliseconds(20 - i), i));
    co_return co_await coral::when_all(std::move(tasks));
  });
  std::vector<int> expected;
  for (int i = 0; i < 20; ++i) expected.push_back(i);
  BOOST_TEST(get_within(std::move(j)) == expected, boost::test_tools::per_element());

  auto empty = coral::spawn(place.get_executor(), []() -> coral::task<std::size_t> {
    auto results = co_await coral::when_all(std::vector<coral::task<int>>{});
    co_return results.size();
  });
  BOOST_TEST(get_within(std::move(empty)) == 0u);
}

CORAL_TEST_CASE_ON_EACH_PLACE(when_all_cancels_the_siblings_of_the_first_failure_waits_for_them_and_rethrows_it,
                              places) {
  auto aborted = std::make_shared<std::atomic<int>>(0);
  auto j = coral::spawn(place.get_executor(), [&]() -> coral::task<std::string> {
    try {
      co_await coral::when_all(sleeper(aborted), fail_after(2ms, "first"), sleeper(aborted),
                               fail_after(std::chrono::hours(1), "never"));
    } catch (const std::runtime_error& e) {
      // The siblings have ended before the failure is rethrown.
      co_return std::string(e.what()) + " " + std::to_string(aborted->load()) + " " + std::to_string(lifetime::alive);
    }
    co_return "no failure";
  });
  BOOST_TEST(get_within(std::move(j)) == "first 2 0");
}

BOOST_AUTO_TEST_CASE(children_started_after_the_task_was_cancelled_fail_at_their_first_wait) {
  // asio #1574: an operation started after a cancel was not cancelled.
  coral::event_loop loop;
  auto aborted = std::make_shared<std::atomic<int>>(0);
  auto j = coral::spawn(loop, [&]() -> coral::task<> {
    try {
      co_await coral::sleep_for(std::chrono::hours(1));
    } catch (const boost::system::system_error&) {
    }
    // Cancelled from here on: the join fails at once, starting nothing.
    co_await coral::when_all(nothing(), sleeper(aborted));
  });
  j.cancel();
  BOOST_TEST((failure_of(j) == asio::error::operation_aborted));
  BOOST_TEST(aborted->load() == 0);
  BOOST_TEST(lifetime::alive == 0);
}

BOOST_AUTO_TEST_CASE(children_that_finish_at_once_do_not_suspend_the_parent_or_grow_the_stack) {
  asio::io_context ctx(1);
  auto j = coral::spawn(ctx, []() -> coral::task<long> {
    long sum = 0;
    for (int i = 0; i < 200'000; ++i) {
      auto [a, b] = co_await coral::when_all(immediate(1), immediate(2));
      sum += a + b;
    }
    co_return sum;
  });
  ctx.run();
  BOOST_TEST(j.get_result() == 600'000);
}

// Everything by value: it outlives the frame of the task that awaited it.
coral::task<int, coral::pool_executor> pool_sleeper(std::shared_ptr<std::atomic<int>> aborted,
                                                    std::shared_ptr<std::promise<void>> started) {
  started->set_value();
  co_return co_await sleeper(std::move(aborted));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(destroying_the_context_of_a_waiting_parent_frees_it_and_its_children, Context,
                              owned_contexts) {
  auto aborted = std::make_shared<std::atomic<int>>(0);
  auto pool_child_started = std::make_shared<std::promise<void>>();
  auto started = pool_child_started->get_future();
  coral::job<int> j;
  {
    Context context;
    j = coral::spawn(context.get_executor(), [aborted, pool_child_started]() -> coral::task<int> {
      auto [a, b] = co_await coral::when_all(sleeper(aborted), pool_sleeper(aborted, pool_child_started));
      co_return a + b;
    });
    context.settle();
    BOOST_REQUIRE(started.wait_for(patience) == std::future_status::ready);
  }
  BOOST_TEST((failure_of(j) == asio::error::operation_aborted));
  // The pool child is cancelled by the parent's going away and ends on its own.
  for (int i = 0; i < 3000 && lifetime::alive != 0; ++i) thread_of(coral::pool_executor{});
  BOOST_TEST(lifetime::alive == 0);
}

CORAL_TEST_CASE_ON_EACH_PLACE(when_all_awaits_locks_permits_and_events_with_tasks, places) {
  coral::async_mutex m;
  coral::semaphore s(0);
  coral::event ev;
  auto j = coral::spawn(place.get_executor(), [&]() -> coral::task<bool> {
    auto [guard, permit, set, v] =
        co_await coral::when_all(m.scoped_lock(), s.scoped_acquire(), ev.wait(), [&]() -> coral::task<int> {
          co_await coral::sleep_for(1ms);
          s.release();
          ev.set();
          co_return 3;
        }());
    co_return guard.owns_lock() && !m.try_lock() && permit.owns_permit() && v == 3 && s.try_acquire() == false;
  });
  BOOST_TEST(get_within(std::move(j)));
  BOOST_TEST(m.try_lock());  // the guard went with the task
  m.unlock();
  BOOST_TEST(s.available() == 1u);  // so did the permit
}

// A parent holding I/O objects of its own context awaits children on another context that end
// at a random moment while its context is destroyed: the parent is freed on the thread destroying
// its context, while it still exists, never on the child's thread afterwards.
namespace {

coral::task<int, coral::pool_executor> spin_on_the_pool(int micros) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(micros);
  while (std::chrono::steady_clock::now() < until) {
  }
  co_return micros;
}

}  // namespace

BOOST_AUTO_TEST_CASE(destroying_a_context_while_children_elsewhere_end_frees_the_parent_there) {
  std::mt19937 random(11);
  for (int round = 0; round < 150; ++round) {
    std::vector<coral::job<>> parents;
    {
      asio::io_context ctx(1);
      for (int i = 0; i < 4; ++i) {
        const int micros = static_cast<int>(random() % 1500);
        parents.push_back(coral::spawn(ctx, [&ctx, micros, i]() -> coral::task<> {
          io_objects_of own(ctx);
          for (;;) {
            if (i % 2) {
              co_await spin_on_the_pool(micros);  // a child segment of its own
            } else {
              co_await coral::when_all(spin_on_the_pool(micros), 1ms);  // a join's child
            }
          }
        }));
      }
      ctx.run_for(std::chrono::microseconds(random() % 3000));
    }
    BOOST_TEST_REQUIRE(lifetime::alive == 0);
    for (auto& j : parents) BOOST_TEST_REQUIRE(j.wait_for(patience));
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(when_any)

CORAL_TEST_CASE_ON_EACH_PLACE(when_any_returns_the_first_to_end_after_cancelling_and_awaiting_the_others, places) {
  auto aborted = std::make_shared<std::atomic<int>>(0);
  auto j = coral::spawn(place.get_executor(), [&]() -> coral::task<std::string> {
    auto r = co_await coral::when_any(sleeper(aborted), value_after(2ms, 7), sleeper(aborted));
    co_return std::to_string(r.index()) + " " + std::to_string(std::get<1>(r)) + " " + std::to_string(aborted->load()) +
        " " + std::to_string(lifetime::alive);
  });
  BOOST_TEST(get_within(std::move(j)) == "1 7 2 0");

  auto vector_job = coral::spawn(place.get_executor(), [&]() -> coral::task<std::pair<std::size_t, int>> {
    std::vector<coral::task<int>> tasks;
    tasks.push_back(sleeper(aborted));
    tasks.push_back(sleeper(aborted));
    tasks.push_back(value_after(1ms, 9));
    co_return co_await coral::when_any(std::move(tasks));
  });
  auto [index, v] = get_within(std::move(vector_job));
  BOOST_TEST(index == 2u);
  BOOST_TEST(v == 9);
  BOOST_TEST(aborted->load() == 4);
}

CORAL_TEST_CASE_ON_EACH_PLACE(a_failed_winner_is_rethrown_without_waiting_for_a_long_timer, places) {
  // asio #900: `op || timer` waited for the whole timer when `op` threw.
  auto j = coral::spawn(place.get_executor(), []() -> coral::task<std::string> {
    try {
      co_await coral::when_any(fail_after(1ms, "op failed"), std::chrono::hours(1));
    } catch (const std::runtime_error& e) {
      co_return e.what();
    }
    co_return "no failure";
  });
  BOOST_TEST(get_within(std::move(j)) == "op failed");

  auto timed = coral::spawn(place.get_executor(), []() -> coral::task<std::string> {
    try {
      co_await coral::with_timeout(std::chrono::hours(1), fail_after(1ms, "op failed"));
    } catch (const std::runtime_error& e) {
      co_return e.what();
    }
    co_return "no failure";
  });
  BOOST_TEST(get_within(std::move(timed)) == "op failed");
}

CORAL_TEST_CASE_ON_EACH_PLACE(cancelling_the_awaiting_task_cancels_and_awaits_every_child, places) {
  auto aborted = std::make_shared<std::atomic<int>>(0);
  std::promise<void> started;
  auto j = coral::spawn(place.get_executor(), [&]() -> coral::task<int> {
    auto first = [&]() -> coral::task<int> {
      started.set_value();
      co_return co_await sleeper(aborted);
    };
    auto [a, b, c] = co_await coral::when_all(first(), sleeper(aborted), on_pool(1));
    co_return a + b + c;
  });
  BOOST_REQUIRE(started.get_future().wait_for(patience) == std::future_status::ready);
  j.cancel();
  BOOST_TEST((failure_of(j) == asio::error::operation_aborted));
  BOOST_TEST(aborted->load() == 2);
  BOOST_TEST(lifetime::alive == 0);

  auto any = coral::spawn(place.get_executor(),
                          [&]() -> coral::task<> { co_await coral::when_any(sleeper(aborted), sleeper(aborted)); });
  any.cancel();
  BOOST_TEST((failure_of(any) == asio::error::operation_aborted));
  BOOST_TEST(lifetime::alive == 0);
}

// A thread_pool of two threads, destroyed (stopped, joined, shut down) with tasks suspended on it.
struct owned_thread_pool {
  asio::thread_pool pool{2};
  asio::thread_pool::executor_type get_executor() { return pool.get_executor(); }
  void settle() {
    for (int i = 0; i < 4; ++i) thread_of(pool.get_executor());
  }
};

// A join's children on the parent's executor are hosted by the parent's segment: at shutdown they
// are reached only through the parent's wait. Here they are nested (a when_any inside a
// with_timeout, a with_timeout inside that), one waits on a channel fed from another thread, and
// the context goes while a value may be arriving: every frame and every value is freed.
BOOST_AUTO_TEST_CASE_TEMPLATE(destroying_a_context_frees_nested_hosted_children_whenever_a_value_arrives, Context,
                              decltype(std::tuple_cat(owned_contexts{}, std::tuple<owned_thread_pool>{}))) {
  std::mt19937 random(20261123);
  int received = 0;
  for (int round = 0; round < 40; ++round) {
    auto aborted = std::make_shared<std::atomic<int>>(0);
    coral::channel<lifetime> values(4);
    coral::job<int> j;
    std::thread feeder;
    {
      Context context;
      j = coral::spawn(context.get_executor(), [&values, aborted]() -> coral::task<int> {
        auto race = [&values, aborted]() -> coral::task<int> {
          auto r =
              co_await coral::when_any(values.receive(), coral::with_timeout(std::chrono::hours(1), sleeper(aborted)));
          co_return static_cast<int>(r.index());
        };
        co_return co_await coral::with_timeout(std::chrono::hours(1), race());
      });
      const auto delay = std::chrono::microseconds(random() % 300);
      feeder = std::thread([&values, delay] {
        std::this_thread::sleep_for(delay);  // (random timing against the context's destruction)
        values.try_send(lifetime{});
      });
      context.settle();
    }
    feeder.join();
    const auto failure = failure_of(j);
    if (!failure) {
      ++received;  // the value won before the context went
    } else {
      BOOST_TEST((failure == asio::error::operation_aborted));
    }
    while (values.try_receive()) {
    }
    BOOST_TEST(lifetime::alive == 0);
  }
  BOOST_TEST_MESSAGE(received << " of 40 rounds received the value before the context went");
}

coral::task<> wait_for(coral::event& e) {
  co_await e.wait();
}

// On inline_executor a cancellation runs everything on the spot: the join's cancellation handler
// cancels a child, which ends, which resumes the parent, which clears its slot (destroying the
// handler) before the handler has returned.
BOOST_AUTO_TEST_CASE(cancelling_a_join_on_the_inline_executor_ends_it_as_aborted) {
  for (int kind = 0; kind < 2; ++kind) {
    coral::event never;
    auto j = coral::spawn(coral::inline_executor{}, [&never, kind]() -> coral::task<> {
      if (kind == 0) {
        co_await coral::when_any(wait_for(never), wait_for(never));
      } else {
        co_await coral::with_timeout(std::chrono::hours(1), wait_for(never));
      }
    });
    j.cancel();
    BOOST_TEST((failure_of(j) == asio::error::operation_aborted));
  }
}

// Records the order in which frames go.
struct goes_in_order {
  std::vector<std::string>& order;
  std::string name;
  ~goes_in_order() { order.push_back(name); }
};

coral::task<> holds_the_parents_lock(coral::async_mutex& m, std::vector<std::string>& order, bool sleeps) {
  auto lock = co_await m.scoped_lock();  // (a lock of a mutex in the parent's frame)
  goes_in_order child{order, "child"};
  if (sleeps) co_await coral::sleep_for(std::chrono::hours(1));
  for (;;) co_await coral::yield();
}

// At a context's shutdown a parent's frame outlives its children's: they may refer into it. The
// children here are a when_any branch and with_timeout's operation (hosted by the parent), and a
// task on another strand of the same context; they are suspended in a posted yield (freed with the
// scheduler's queue) or on a timer.
BOOST_AUTO_TEST_CASE(at_shutdown_children_on_the_parents_context_go_before_the_parent) {
  for (int kind = 0; kind < 6; ++kind) {
    std::vector<std::string> order;
    coral::job<void> j;
    {
      asio::io_context context;
      j = coral::spawn(context, [&order, kind]() -> coral::task<> {
        // (In the frame: a strand must not outlive its context.)
        auto other_strand = asio::make_strand(co_await coral::this_task::executor);
        coral::async_mutex m;
        goes_in_order parent{order, "parent"};
        const bool sleeps = kind % 2 == 1;
        if (kind / 2 == 0) {
          co_await coral::when_any(holds_the_parents_lock(m, order, sleeps), std::chrono::hours(1));
        } else if (kind / 2 == 1) {
          co_await coral::with_timeout(std::chrono::hours(1), holds_the_parents_lock(m, order, sleeps));
        } else {
          co_await coral::on(other_strand, holds_the_parents_lock(m, order, sleeps));
        }
      });
      for (int i = 0; i < 10; ++i) context.poll_one();
      BOOST_TEST_REQUIRE(!j.done());
    }
    BOOST_TEST((failure_of(j) == asio::error::operation_aborted));
    BOOST_TEST(order == (std::vector<std::string>{"child", "parent"}), "kind " << kind);
  }
}

BOOST_AUTO_TEST_CASE(empty_tasks_and_an_empty_when_any_are_refused_with_a_clear_error) {
  coral::event_loop loop;
  auto j = coral::spawn(loop, []() -> coral::task<std::string> {
    try {
      co_await coral::when_any(std::vector<coral::task<int>>{});
    } catch (const std::invalid_argument& e) {
      co_return e.what();
    }
    co_return "accepted";
  });
  BOOST_TEST(get_within(std::move(j)).find("empty") != std::string::npos);
  auto moved = coral::spawn(loop, []() -> coral::task<bool> {
    auto t = immediate(1);
    auto u = std::move(t);
    try {
      co_await coral::when_all(std::move(t), std::move(u));
    } catch (const std::logic_error&) {
      co_return true;
    }
    co_return false;
  });
  BOOST_TEST(get_within(std::move(moved)));
}

// Lossless select: channel operations raced in when_any / with_timeout happen only if they win.

CORAL_TEST_CASE_ON_EACH_PLACE(a_select_over_ready_channels_takes_exactly_one_value, places) {
  coral::channel<int> first(1), second(1);
  BOOST_REQUIRE(first.try_send(1));
  BOOST_REQUIRE(second.try_send(2));
  auto j = coral::spawn(place.get_executor(), [&]() -> coral::task<int> {
    auto r = co_await coral::when_any(first.receive(), second.receive());
    co_return r.index() == 0 ? std::get<0>(r) : std::get<1>(r);
  });
  const int got = get_within(std::move(j));
  BOOST_TEST((got == 1 || got == 2));
  BOOST_TEST(first.size() + second.size() == 1u);
  BOOST_TEST((got == 1 ? second.size() : first.size()) == 1u);
}

CORAL_TEST_CASE_ON_EACH_PLACE(selects_over_channels_that_are_always_ready_serve_every_channel, places) {
  // Ready operations are tried first, without child tasks, from a rotating start: a channel that
  // is first among the arguments must not win every time.
  coral::channel<int> first(64), second(64);
  for (int i = 0; i < 64; ++i) {
    BOOST_REQUIRE(first.try_send(i));
    BOOST_REQUIRE(second.try_send(i));
  }
  auto j = coral::spawn(place.get_executor(), [&]() -> coral::task<std::pair<std::vector<int>, std::vector<int>>> {
    std::vector<int> from_first, from_second;
    for (int i = 0; i < 64; ++i) {
      auto r = co_await coral::when_any(first.receive(), second.receive(), std::chrono::hours(1));
      if (r.index() == 0) from_first.push_back(std::get<0>(r));
      if (r.index() == 1) from_second.push_back(std::get<1>(r));
    }
    co_return std::pair(std::move(from_first), std::move(from_second));
  });
  const auto [from_first, from_second] = get_within(std::move(j));
  BOOST_TEST(from_first.size() + from_second.size() == 64u);
  BOOST_TEST(from_first.size() >= 16u);
  BOOST_TEST(from_second.size() >= 16u);
  BOOST_TEST(std::is_sorted(from_first.begin(), from_first.end()));
  BOOST_TEST(std::is_sorted(from_second.begin(), from_second.end()));
  BOOST_TEST(first.size() + second.size() == 64u);
}

CORAL_TEST_CASE_ON_EACH_PLACE(selects_that_alternate_on_a_thread_serve_every_channel, places) {
  // Two selects of the same argument types taking turns (in one loop, and in two tasks that yield
  // between selects): a start position shared by the selects of a thread would make each of them
  // start at the same branch every time and starve the other channel.
  constexpr int rounds = 200;
  coral::channel<int> a(coral::unlimited), b(coral::unlimited), c(coral::unlimited), d(coral::unlimited),
      e(coral::unlimited), f(coral::unlimited);
  for (int i = 0; i < 2 * rounds; ++i) {
    for (auto* ch : {&a, &b, &c, &d, &e, &f}) BOOST_REQUIRE(ch->try_send(i));
  }
  using counts = std::array<int, 2>;
  auto alternating = coral::spawn(place.get_executor(), [&]() -> coral::task<std::pair<counts, counts>> {
    counts ab{}, cd{};
    for (int i = 0; i < rounds; ++i) {
      const auto from_ab = co_await coral::when_any(a.receive(), b.receive());
      ++ab[from_ab.index()];
      const auto from_cd = co_await coral::when_any(c.receive(), d.receive());
      ++cd[from_cd.index()];
    }
    co_return std::pair(ab, cd);
  });
  const auto [ab, cd] = get_within(std::move(alternating));
  auto two_tasks = [&](coral::channel<int>& x, coral::channel<int>& y) {
    auto one = [&]() -> coral::task<counts> {
      counts n{};
      for (int i = 0; i < rounds; ++i) {
        const auto r = co_await coral::when_any(x.receive(), y.receive());
        ++n[r.index()];
        co_await coral::yield();
      }
      co_return n;
    };
    auto first = coral::spawn(place.get_executor(), one);
    auto second = coral::spawn(place.get_executor(), one);
    return std::pair(get_within(std::move(first)), get_within(std::move(second)));
  };
  const auto [first, second] = two_tasks(e, f);
  // Each branch wins about half of the time; 40 of 200 is far outside any fair outcome.
  for (const counts& n : {ab, cd, first, second}) {
    BOOST_TEST(n[0] + n[1] == rounds);
    BOOST_TEST(n[0] >= 40);
    BOOST_TEST(n[1] >= 40);
  }
}

CORAL_TEST_CASE_ON_EACH_PLACE(channels_ready_at_once_win_equally_often_whatever_else_the_select_waits_for, places) {
  // Go's TestSelectFairness: two channels always ready, two never, 10,000 selects; each ready one
  // must win within 10 standard deviations of half. A first pass from a random start, rotating,
  // gives the first ready channel after the never-ready ones three quarters of the wins.
  constexpr int trials = 10'000;
  coral::channel<int> first(1), second(1), never, done;
  auto selecting = coral::spawn(place.get_executor(), [&]() -> coral::task<std::array<int, 4>> {
    std::array<int, 4> wins{};
    for (int i = 0; i < trials; ++i) {
      (void)first.try_send(i);
      (void)second.try_send(i);
      const auto won = co_await coral::when_any(first.receive(), second.receive(), never.receive(), done.receive());
      ++wins[won.index()];
    }
    co_return wins;
  });
  const auto wins = get_within(std::move(selecting));
  BOOST_TEST(wins[0] + wins[1] == trials);
  const double mean = trials * 0.5, sigma = std::sqrt(trials * 0.5 * 0.5);
  BOOST_TEST(std::abs(wins[0] - mean) <= 10 * sigma, "first won " << wins[0] << " of " << trials);
}

CORAL_TEST_CASE_ON_EACH_PLACE(locks_permits_and_event_waits_ready_at_once_win_equally_often, places) {
  // As Go's fairness bound above, for every kind of lossless operation a select tries first, each
  // pair beside a lock that is never free; what the winner took is given back each time.
  constexpr int trials = 10'000;
  coral::async_mutex m1, m2, held;
  coral::semaphore s1(1), s2(1);
  coral::event e1, e2;
  coral::channel<int> ch(1);
  BOOST_REQUIRE(held.try_lock());
  e1.set();
  e2.set();
  auto selecting = coral::spawn(place.get_executor(), [&]() -> coral::task<std::array<int, 4>> {
    std::array<int, 4> first_wins{};
    for (int i = 0; i < trials; ++i) {
      {
        const auto locked = co_await coral::when_any(m1.scoped_lock(), held.scoped_lock(), m2.scoped_lock());
        first_wins[0] += locked.index() == 0;
      }
      {
        const auto acquired = co_await coral::when_any(s1.scoped_acquire(), held.scoped_lock(), s2.scoped_acquire());
        first_wins[1] += acquired.index() == 0;
      }
      const auto waited = co_await coral::when_any(e1.wait(), held.scoped_lock(), e2.wait());
      first_wins[2] += waited.index() == 0;
      (void)ch.try_send(i);
      const auto mixed = co_await coral::when_any(ch.receive(), held.scoped_lock(), s1.scoped_acquire());
      first_wins[3] += mixed.index() == 0;
      if (mixed.index() == 2) (void)co_await ch.receive();  // (the value stays queued otherwise)
    }
    co_return first_wins;
  });
  const auto first_wins = get_within(std::move(selecting));
  const double mean = trials * 0.5, sigma = std::sqrt(trials * 0.5 * 0.5);
  for (int kind = 0; kind < 4; ++kind) {
    BOOST_TEST(std::abs(first_wins[kind] - mean) <= 10 * sigma, "kind " << kind << ": first won " << first_wins[kind]);
  }
  BOOST_TEST(m1.try_lock());
  BOOST_TEST(m2.try_lock());
  BOOST_TEST(s1.available() == 1u);
  BOOST_TEST(s2.available() == 1u);
  held.unlock();
}

CORAL_TEST_CASE_ON_EACH_PLACE(a_cancelled_task_selecting_over_a_ready_channel_takes_nothing, places) {
  coral::channel<int> ready(1), never;
  BOOST_REQUIRE(ready.try_send(1));
  auto started = std::make_shared<std::promise<void>>();
  auto j = coral::spawn(place.get_executor(), [&ready, &never, started]() -> coral::task<std::size_t> {
    try {
      started->set_value();
      co_await never.receive();
    } catch (const boost::system::system_error&) {  // cancelled: the task stays cancelled
    }
    auto r = co_await coral::when_any(ready.receive(), never.receive());
    co_return r.index();
  });
  BOOST_REQUIRE(started->get_future().wait_for(patience) == std::future_status::ready);
  j.cancel();
  BOOST_TEST((failure_of(j) == asio::error::operation_aborted));
  BOOST_TEST(ready.size() == 1u);
}

CORAL_TEST_CASE_ON_EACH_PLACE(a_receive_that_loses_to_a_timer_consumes_nothing_and_stops_waiting, places) {
  coral::channel<int> ch;
  auto j = coral::spawn(place.get_executor(), [&]() -> coral::task<std::size_t> {
    auto r = co_await coral::when_any(ch.receive(), 5ms);
    co_return r.index();
  });
  BOOST_TEST(get_within(std::move(j)) == 1u);
  BOOST_TEST(!ch.try_send(1));  // nobody is left waiting to receive it
  auto timed = coral::spawn(place.get_executor(), [&]() -> coral::task<std::string> {
    try {
      co_await coral::with_timeout(5ms, ch.receive());
    } catch (const coral::timeout_error& e) {
      co_return e.what();
    }
    co_return "received";
  });
  BOOST_TEST(get_within(std::move(timed)).find("within 5ms") != std::string::npos);
  BOOST_TEST(!ch.try_send(1));
}

CORAL_TEST_CASE_ON_EACH_PLACE(a_send_that_loses_to_a_timer_delivers_nothing, places) {
  coral::channel<int> ch;
  auto j = coral::spawn(place.get_executor(), [&]() -> coral::task<std::size_t> {
    auto r = co_await coral::when_any(ch.send(7), coral::sleep_for(5ms));
    co_return r.index();
  });
  BOOST_TEST(get_within(std::move(j)) == 1u);
  BOOST_TEST(!ch.try_receive().has_value());  // the send is not waiting any more either
}

CORAL_TEST_CASE_ON_EACH_PLACE(two_selects_that_meet_agree_on_what_happened, places) {
  for (int round = 0; round < 50; ++round) {
    coral::channel<int> ab, ba;
    auto a = coral::spawn(place.get_executor(), [&]() -> coral::task<std::string> {
      auto r = co_await coral::when_any(ab.send(1), ba.receive());
      co_return r.index() == 0 ? "sent" : "received " + std::to_string(std::get<1>(r));
    });
    auto b = coral::spawn(place.get_executor(), [&]() -> coral::task<std::string> {
      auto r = co_await coral::when_any(ab.receive(), ba.send(2));
      co_return r.index() == 1 ? "sent" : "received " + std::to_string(std::get<0>(r));
    });
    const auto ra = get_within(std::move(a));
    const auto rb = get_within(std::move(b));
    BOOST_TEST_CONTEXT("round " << round) {
      BOOST_TEST(((ra == "sent" && rb == "received 1") || (ra == "received 2" && rb == "sent")), ra << " / " << rb);
      BOOST_TEST(!ab.try_receive().has_value());
      BOOST_TEST(!ba.try_receive().has_value());
    }
  }
}

CORAL_TEST_CASE_ON_EACH_PLACE(a_select_never_meets_itself, places) {
  coral::channel<int> unbuffered;
  auto j = coral::spawn(place.get_executor(), [&]() -> coral::task<std::size_t> {
    auto r = co_await coral::when_any(unbuffered.send(1), unbuffered.receive(), 5ms);
    co_return r.index();
  });
  BOOST_TEST(get_within(std::move(j)) == 2u);
  coral::channel<int> buffered(1);
  auto k = coral::spawn(place.get_executor(), [&]() -> coral::task<std::size_t> {
    auto r = co_await coral::when_any(buffered.receive(), buffered.send(1));
    co_return r.index();
  });
  BOOST_TEST(get_within(std::move(k)) == 1u);  // the send went to the buffer; the receive did not take it
  BOOST_TEST(buffered.size() == 1u);
}

CORAL_TEST_CASE_ON_EACH_PLACE(a_closed_channel_ends_a_select_with_channel_closed, places) {
  coral::channel<int> open, closed;
  closed.close();
  auto j = coral::spawn(place.get_executor(), [&]() -> coral::task<> {
    co_await coral::when_any(open.receive(), closed.receive(), std::chrono::hours(1));
  });
  BOOST_CHECK_THROW(get_within(std::move(j)), coral::channel_closed);
  BOOST_TEST(!open.try_send(1));
}

// A select that waits on a channel being closed is decided by the close, as a hand-off decides
// it: no other branch of it happens after the close returned.
BOOST_AUTO_TEST_CASE(closing_a_channel_decides_a_select_waiting_on_it) {
  owned_io_context context;
  coral::channel<int> open, closing;
  auto j = coral::spawn(context.get_executor(), [&]() -> coral::task<int> {
    auto r = co_await coral::when_any(open.receive(), closing.receive());
    co_return r.index() == 0 ? std::get<0>(r) : std::get<1>(r);
  });
  context.settle();  // the select waits on both channels
  closing.close();
  BOOST_TEST(!open.try_send(1));  // nobody receives on `open` any more
  context.settle();
  BOOST_CHECK_THROW(get_within(std::move(j)), coral::channel_closed);
}

namespace {
// Counts the values made from nothing (not copied or moved from another): a channel and its races
// make none but those sent.
struct tally : lifetime {
  static inline std::atomic<int> made{0};
  int value = 0;
  tally() { ++made; }
  explicit tally(int v) : value(v) { ++made; }
};

// A value with no default constructor: a race must not need one.
struct no_default : lifetime {
  int value;
  explicit no_default(int v) : value(v) {}
};

// Races that a receive waiting on `ch` loses, once each: to a sleep, to a deadline, to `||`, and to
// a receive on `other` that a sibling task feeds with `sent`. How many it lost.
template <class T>
coral::task<int> lose_every_kind_of_race(coral::channel<T>& ch, coral::channel<T>& other, int sent) {
  int lost = 0;
  const auto by_sleep = co_await coral::when_any(ch.receive(), 1ms);
  lost += by_sleep.index() == 1;
  try {
    co_await coral::with_timeout(1ms, ch.receive());
  } catch (const coral::timeout_error&) {
    ++lost;
  }
  const auto by_operator = co_await (ch.receive() || coral::sleep_for(1ms));
  lost += by_operator.index() == 1;
  auto select = [&]() -> coral::task<int> {
    auto r = co_await coral::when_any(ch.receive(), other.receive());
    co_return r.index() == 1 ? std::get<1>(r).value : -1;
  };
  auto feed = [&]() -> coral::task<> {
    co_await coral::yield();
    co_await other.send(T(sent));
  };
  const auto [received, fed] = co_await coral::when_all(select(), feed());
  lost += received == sent;
  co_return lost;
}
}  // namespace

BOOST_AUTO_TEST_CASE_TEMPLATE(a_receive_that_loses_a_race_makes_no_value, Place, every_place) {
  constexpr int rounds = 20;
  tally::made = 0;
  {
    Place place;
    coral::channel<tally> ch, other;
    auto j = coral::spawn(place.get_executor(), [&]() -> coral::task<int> {
      int lost = 0;
      for (int i = 0; i < rounds; ++i) lost += co_await lose_every_kind_of_race(ch, other, i);
      co_return lost;
    });
    BOOST_TEST(get_within(std::move(j)) == 4 * rounds);
  }
  BOOST_TEST(tally::made == rounds);  // the values sent, and nothing else
  BOOST_TEST(lifetime::alive == 0);   // a job is done only when nothing of its task is left
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_receive_of_a_type_without_a_default_constructor_can_be_raced, Place, every_place) {
  {
    Place place;
    coral::channel<no_default> ch(1), other;
    auto j = coral::spawn(place.get_executor(), [&]() -> coral::task<int> {
      int lost = 0;
      for (int i = 0; i < 5; ++i) lost += co_await lose_every_kind_of_race(ch, other, i);
      // And a receive that wins.
      co_await ch.send(no_default(42));
      const auto won = co_await coral::when_any(ch.receive(), std::chrono::hours(1));
      co_return lost + std::get<0>(won).value;
    });
    BOOST_TEST(get_within(std::move(j)) == 4 * 5 + 42);
  }
  BOOST_TEST(lifetime::alive == 0);  // a job is done only when nothing of its task is left
}

template <class Place>
void cancellation_through_the_token_reaches_every_child_of_a_join(asio::cancellation_type type) {
  // boostorg/asio #458: a partial or total cancellation emitted into a parallel_group cancelled
  // nothing. Here the request comes through the completion token's slot, as Asio code sends it.
  {
    Place place;
    coral::event_loop owner;
    asio::cancellation_signal signal;
    auto aborted = std::make_shared<std::atomic<int>>(0);
    auto started = std::make_shared<std::promise<void>>();
    std::promise<boost::system::error_code> outcome;
    coral::spawn(
        place.get_executor(),
        [aborted, started]() -> coral::task<> {
          auto waiting = [](auto started) -> coral::task<int> {
            started->set_value();
            co_return co_await coral::sleep_for(std::chrono::hours(1)), 0;
          };
          auto both = [](auto aborted, auto started, auto waiting) -> coral::task<> {
            co_await coral::when_all(sleeper(aborted), waiting(started));
          };
          co_await coral::when_any(sleeper(aborted), both(aborted, started, waiting));
        },
        asio::bind_cancellation_slot(signal.slot(),
                                     asio::bind_executor(owner.get_executor(), [&](std::exception_ptr e) {
                                       boost::system::error_code code;
                                       try {
                                         if (e) std::rethrow_exception(e);
                                       } catch (const boost::system::system_error& error) {
                                         code = error.code();
                                       }
                                       outcome.set_value(code);
                                     })));
    BOOST_TEST_CONTEXT("cancellation type " << static_cast<int>(type)) {
      BOOST_REQUIRE(started->get_future().wait_for(patience) == std::future_status::ready);
      asio::post(owner.get_executor(), [&signal, type] { signal.emit(type); });
      auto f = outcome.get_future();
      const bool arrived = f.wait_for(patience) == std::future_status::ready;
      BOOST_REQUIRE(arrived);
      BOOST_TEST((f.get() == asio::error::operation_aborted));
      BOOST_TEST(aborted->load() == 2);
    }
  }
  BOOST_TEST(lifetime::alive == 0);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_partial_cancellation_reaches_every_child_of_a_join, Place, places) {
  cancellation_through_the_token_reaches_every_child_of_a_join<Place>(asio::cancellation_type::partial);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_total_cancellation_reaches_every_child_of_a_join, Place, places) {
  cancellation_through_the_token_reaches_every_child_of_a_join<Place>(asio::cancellation_type::total);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(cancellations_of_every_type_one_after_another_all_arrive, Place, places) {
  // Rounds run back to back on one thread: a spawn's completion that left its tracked work behind
  // on the task's thread would lose the next round's emit now and then.
  for (int round = 0; round < 3; ++round) {
    for (auto type :
         {asio::cancellation_type::terminal, asio::cancellation_type::partial, asio::cancellation_type::total}) {
      cancellation_through_the_token_reaches_every_child_of_a_join<Place>(type);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

// A join is over when its children are: whatever a child produced and the join did not hand over
// is destroyed before the join returns, never afterwards on the child's thread.
BOOST_AUTO_TEST_SUITE(a_join_is_over_when_its_children_are)

namespace {

// A value whose destructor takes a while, and records whether it ran after the code that dropped
// it (a join, a job's waiter) had gone on.
struct slow_value {
  static inline std::atomic<int> alive{0};
  static inline std::atomic<bool> caller_went_on{false};
  static inline std::atomic<int> destroyed_late{0};
  slow_value() { ++alive; }
  slow_value(slow_value&&) noexcept { ++alive; }
  slow_value& operator=(slow_value&&) noexcept = default;
  ~slow_value() {
    std::this_thread::sleep_for(300us);  // a destructor with work to do widens the window
    if (caller_went_on.load()) ++destroyed_late;
    --alive;
  }
  static void reset() {
    caller_went_on = false;
    destroyed_late = 0;
  }
};

// Ends with a value on another executor, never suspending, so that cancellation cannot stop it.
coral::task<slow_value, coral::pool_executor> slow_value_on_pool() {
  auto until = std::chrono::steady_clock::now() + 2ms;
  while (std::chrono::steady_clock::now() < until) {
  }
  co_return slow_value{};
}

coral::task<slow_value> slow_value_now() {
  co_return slow_value{};
}

coral::task<slow_value> fail_now() {
  throw std::runtime_error("failed");
  co_return slow_value{};
}

}  // namespace

CORAL_TEST_CASE_ON_EACH_PLACE(values_a_join_drops_are_destroyed_before_it_returns, every_place) {
  for (int round = 0; round < 20; ++round) {
    slow_value::reset();
    auto j = coral::spawn(place.get_executor(), []() -> coral::task<int> {
      int failures = 0;
      // A sibling of the first failure that ends with a value all the same.
      try {
        co_await coral::when_all(slow_value_on_pool(), fail_now());
      } catch (const std::runtime_error&) {
        ++failures;
      }
      slow_value::caller_went_on = true;
      co_await coral::yield();
      slow_value::caller_went_on = false;
      // A loser that ends with a value (it has no suspension point to hear its cancellation at).
      {
        auto r = co_await coral::when_any(slow_value_now(), slow_value_on_pool());
        failures += static_cast<int>(r.index());
      }
      slow_value::caller_went_on = true;
      co_await coral::yield();
      slow_value::caller_went_on = false;
      {
        auto r = co_await (slow_value_now() || slow_value_on_pool());
        failures += static_cast<int>(r.index());
      }
      slow_value::caller_went_on = true;
      co_return failures;
    });
    BOOST_TEST(get_within(std::move(j)) == 1);
    BOOST_TEST(slow_value::destroyed_late == 0);
    BOOST_TEST(slow_value::alive == 0);
  }
}

CORAL_TEST_CASE_ON_EACH_PLACE(a_permit_or_lock_a_join_drops_is_given_back, every_place) {
  coral::semaphore s(2);
  coral::async_mutex m;
  auto j = coral::spawn(place.get_executor(), [&]() -> coral::task<int> {
    int failures = 0;
    for (int i = 0; i < 50; ++i) {
      try {
        co_await coral::when_all(s.acquire(), m.lock(), []() -> coral::task<> {
          co_await coral::yield();
          throw std::runtime_error("failed");
        }());
      } catch (const std::runtime_error&) {
        ++failures;
      }
    }
    co_return failures;
  });
  BOOST_TEST(get_within(std::move(j)) == 50);
  BOOST_TEST(s.available() == 2u);
  BOOST_TEST(m.try_lock());
}

CORAL_TEST_CASE_ON_EACH_PLACE(a_value_taken_from_a_child_on_another_executor_leaves_nothing_behind, every_place) {
  for (int round = 0; round < 20; ++round) {
    slow_value::reset();
    auto j = coral::spawn(place.get_executor(), []() -> coral::task<int> {
      { auto v = co_await slow_value_on_pool(); }
      { auto v = co_await coral::on(coral::pool_executor{}, slow_value_now()); }
      { auto v = co_await coral::with_timeout(1h, slow_value_on_pool()); }
      // Only the moved-from remains of each value could still be alive here.
      slow_value::caller_went_on = true;
      co_return slow_value::alive.load();
    });
    BOOST_TEST(get_within(std::move(j)) == 0);
    BOOST_TEST(slow_value::destroyed_late == 0);
  }
}

CORAL_TEST_CASE_ON_EACH_PLACE(a_job_reports_done_only_when_nothing_of_its_task_is_left, every_place) {
  for (int round = 0; round < 20; ++round) {
    slow_value::reset();
    {
      auto j = coral::spawn(place.get_executor(), slow_value_now());
      BOOST_TEST(j.wait_for(patience));
    }
    // The job is gone: its result went with it, here.
    slow_value::caller_went_on = true;
    BOOST_TEST(slow_value::alive == 0);
    BOOST_TEST(slow_value::destroyed_late == 0);
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(awaitable_operators)

// As code ported from asio::awaitable has it: Asio's operators must not get in the way.
using namespace asio::experimental::awaitable_operators;

namespace {

coral::task<> nothing_after(std::chrono::milliseconds d) {
  co_await coral::sleep_for(d);
}
coral::task<std::string> text(std::string s) {
  co_return s;
}

template <class Task>
using value_of = typename std::remove_cvref_t<Task>::value_type;

}  // namespace

BOOST_AUTO_TEST_CASE(and_flattens_results_as_asio_does) {
  static_assert(std::is_void_v<value_of<decltype(nothing_after(1ms) && nothing_after(1ms))>>);
  static_assert(std::is_same_v<value_of<decltype(value_after(1ms, 1) && nothing_after(1ms))>, int>);
  static_assert(std::is_same_v<value_of<decltype(nothing_after(1ms) && value_after(1ms, 1))>, int>);
  static_assert(std::is_same_v<value_of<decltype(value_after(1ms, 1) && text(""))>, std::tuple<int, std::string>>);
  static_assert(std::is_same_v<value_of<decltype(value_after(1ms, 1) && text("") && value_after(1ms, 1))>,
                               std::tuple<int, std::string, int>>);
  coral::event_loop loop;
  auto j = coral::spawn(loop, []() -> coral::task<std::string> {
    co_await (nothing_after(1ms) && nothing_after(2ms));
    const int one = co_await (value_after(2ms, 1) && nothing_after(1ms));
    const int two = co_await (nothing_after(2ms) && value_after(1ms, 2));
    auto [three, four, five] = co_await (value_after(1ms, 3) && text("4") && value_after(2ms, 5));
    co_return std::to_string(one) + std::to_string(two) + std::to_string(three) + four + std::to_string(five);
  });
  BOOST_TEST(get_within(std::move(j)) == "12345");
}

BOOST_AUTO_TEST_CASE(or_gives_the_first_to_end_by_position_and_flattens) {
  static_assert(std::is_same_v<value_of<decltype(nothing_after(1ms) || nothing_after(1ms))>,
                               std::variant<std::monostate, std::monostate>>);
  static_assert(std::is_same_v<value_of<decltype(value_after(1ms, 1) || text("") || nothing_after(1ms))>,
                               std::variant<int, std::string, std::monostate>>);
  coral::event_loop loop;
  auto j = coral::spawn(loop, []() -> coral::task<std::string> {
    auto a = co_await (value_after(1h, 1) || text("b"));
    auto b = co_await (value_after(1h, 1) || text("b") || nothing_after(1h));
    auto c = co_await (value_after(1h, 1) || value_after(1h, 2) || value_after(1ms, 3));
    co_return std::to_string(a.index()) + std::get<1>(a) + std::to_string(b.index()) + std::to_string(c.index()) +
        std::to_string(std::get<2>(c));
  });
  BOOST_TEST(get_within(std::move(j)) == "1b123");
}

CORAL_TEST_CASE_ON_EACH_PLACE(a_failure_in_and_cancels_the_other_operand_and_is_rethrown, places) {
  auto aborted = std::make_shared<std::atomic<int>>(0);
  auto j = coral::spawn(place.get_executor(),
                        [aborted]() -> coral::task<> { co_await (sleeper(aborted) && fail_after(1ms, "failed")); });
  BOOST_CHECK_THROW(get_within(std::move(j)), std::runtime_error);
  BOOST_TEST(aborted->load() == 1);
}

CORAL_TEST_CASE_ON_EACH_PLACE(or_ends_with_the_first_operand_to_end_even_a_failure_and_cancels_the_other, places) {
  auto aborted = std::make_shared<std::atomic<int>>(0);
  auto j = coral::spawn(place.get_executor(),
                        [aborted]() -> coral::task<> { co_await (sleeper(aborted) || fail_after(1ms, "failed")); });
  BOOST_CHECK_THROW(get_within(std::move(j)), std::runtime_error);
  BOOST_TEST(aborted->load() == 1);
}

CORAL_TEST_CASE_ON_EACH_PLACE(or_over_asio_operations_cancels_the_loser_as_asio_does, places) {
  // The Asio idiom `op(use_awaitable) || timer.async_wait(use_awaitable)`, with use_task.
  auto j = coral::spawn(place.get_executor(), []() -> coral::task<std::pair<std::size_t, bool>> {
    auto ex = co_await coral::this_task::executor;
    asio::steady_timer slow(ex, std::chrono::hours(1)), fast(ex, 1ms);
    auto won = co_await (slow.async_wait(coral::use_task) || fast.async_wait(coral::use_task));
    // The loser's wait was cancelled and has ended: its timer has no wait pending.
    co_return std::pair(won.index(), slow.cancel() == 0);
  });
  const auto [index, loser_ended] = get_within(std::move(j));
  BOOST_TEST(index == 1u);
  BOOST_TEST(loser_ended);
}

asio::awaitable<int> legacy_value(int v) {
  co_return v;
}

BOOST_AUTO_TEST_CASE(operators_mix_tasks_and_asio_awaitables) {
  coral::event_loop loop;
  auto j = coral::spawn(loop, []() -> coral::task<std::tuple<int, int, std::size_t>> {
    auto [a, b] = co_await (value_after(1ms, 1) && legacy_value(2));
    auto raced = co_await (legacy_value(3) || value_after(std::chrono::hours(1), 4));
    co_return std::tuple(a, b, raced.index());
  });
  const auto [a, b, index] = get_within(std::move(j));
  BOOST_TEST(a == 1);
  BOOST_TEST(b == 2);
  BOOST_TEST(index == 0u);
}

CORAL_TEST_CASE_ON_EACH_PLACE(or_over_channel_operations_is_a_lossless_select, places) {
  coral::channel<int> first, second(1);
  BOOST_REQUIRE(second.try_send(2));
  auto j = coral::spawn(place.get_executor(), [&]() -> coral::task<std::string> {
    auto r = co_await (first.receive() || second.receive() || std::chrono::hours(1));
    auto timed = co_await (first.receive() || 1ms);
    co_return std::to_string(r.index()) + std::to_string(std::get<1>(r)) + std::to_string(timed.index());
  });
  BOOST_TEST(get_within(std::move(j)) == "121");
  BOOST_TEST(!first.try_send(1));  // nobody is left waiting to receive
  BOOST_TEST(second.size() == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
