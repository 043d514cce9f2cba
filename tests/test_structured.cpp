#define BOOST_TEST_MODULE coral structured concurrency
#include <array>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
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
#include <variant>
#include <vector>

#include "test_support.hpp"

using namespace coral_test;
namespace asio = boost::asio;

namespace {

coral::task<int> value_after(std::chrono::milliseconds d, int v) {
  co_await coral::sleep_for(d);
  co_return v;
}

coral::task<int> fail_after(std::chrono::milliseconds d, std::string what) {
  co_await coral::sleep_for(d);
  throw std::runtime_error(what);
}

// Sleeps for an hour unless cancelled; records that it was cancelled and that its frame is gone.
coral::task<int> sleeper(std::shared_ptr<std::atomic<int>> aborted) {
  lifetime alive;
  try {
    co_await coral::sleep_for(std::chrono::hours(1));
  } catch (const boost::system::system_error& e) {
    if (e.code() == asio::error::operation_aborted) ++*aborted;
    throw;
  }
  co_return 0;
}

coral::task<int> immediate(int v) {
  co_return v;
}

coral::task<> nothing() {
  co_return;
}

coral::task<int, coral::pool_executor> on_pool(int v) {
  co_await coral::yield();
  co_return v;
}

}  // namespace

BOOST_AUTO_TEST_CASE_TEMPLATE(when_all_returns_every_result_by_position, Place, places) {
  Place place;
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

BOOST_AUTO_TEST_CASE_TEMPLATE(when_all_of_a_vector_returns_results_in_order, Place, places) {
  Place place;
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

BOOST_AUTO_TEST_CASE_TEMPLATE(when_all_cancels_the_siblings_of_the_first_failure_waits_for_them_and_rethrows_it, Place,
                              places) {
  Place place;
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

BOOST_AUTO_TEST_CASE_TEMPLATE(when_any_returns_the_first_to_end_after_cancelling_and_awaiting_the_others, Place,
                              places) {
  Place place;
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

BOOST_AUTO_TEST_CASE_TEMPLATE(a_failed_winner_is_rethrown_without_waiting_for_a_long_timer, Place, places) {
  // asio #900: `op || timer` waited for the whole timer when `op` threw.
  Place place;
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

BOOST_AUTO_TEST_CASE_TEMPLATE(cancelling_the_awaiting_task_cancels_and_awaits_every_child, Place, places) {
  Place place;
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

BOOST_AUTO_TEST_CASE_TEMPLATE(with_timeout_returns_the_result_or_throws_timeout_error_after_cancelling_the_operation,
                              Place, places) {
  Place place;
  auto aborted = std::make_shared<std::atomic<int>>(0);
  auto j = coral::spawn(place.get_executor(), [&]() -> coral::task<std::string> {
    int v = co_await coral::with_timeout(std::chrono::hours(1), value_after(1ms, 5));
    std::string out = std::to_string(v);
    try {
      co_await coral::with_timeout(20ms, sleeper(aborted));
      out += " no timeout";
    } catch (const coral::timeout_error& e) {
      out +=
          std::string(" ") + e.what() + " " + std::to_string(aborted->load()) + " " + std::to_string(lifetime::alive);
    }
    co_return out;
  });
  const auto out = get_within(std::move(j));
  BOOST_TEST(out.starts_with("5 "), out);
  BOOST_TEST(out.find("within 20ms") != std::string::npos, out);
  BOOST_TEST(out.ends_with(" 1 0"), out);
}

// A task's timeouts share one timer kept armed between them: a deadline that passed after its
// operation ended must not end the next timeout, and a shorter deadline after a longer one must
// still be kept.
BOOST_AUTO_TEST_CASE_TEMPLATE(a_task_s_timeouts_in_a_row_each_keep_their_own_deadline, Place, places) {
  Place place;
  auto aborted = std::make_shared<std::atomic<int>>(0);
  auto j = coral::spawn(place.get_executor(), [&]() -> coral::task<std::string> {
    int total = co_await coral::with_timeout(5ms, value_after(0ms, 1));
    // The 5 ms deadline passes while this one runs.
    total += co_await coral::with_timeout(std::chrono::hours(1), value_after(30ms, 2));
    for (int i = 0; i < 300; ++i) {
      // (All longer than the test's patience: a deadline that was not kept would show as a hang.)
      const std::chrono::milliseconds limits[] = {std::chrono::hours(1), std::chrono::hours(3), 100s,
                                                  std::chrono::hours(2)};
      total += co_await coral::with_timeout(limits[i % 4], value_after(0ms, 1));
    }
    const auto start = std::chrono::steady_clock::now();
    try {
      co_await coral::with_timeout(20ms, sleeper(aborted));
      co_return "no timeout";
    } catch (const coral::timeout_error&) {
    }
    const auto waited = std::chrono::steady_clock::now() - start;
    co_return std::to_string(total) + (waited >= 20ms ? " on time" : " early");
  });
  BOOST_TEST(get_within(std::move(j)) == "303 on time");
  BOOST_TEST(aborted->load() == 1);
  BOOST_TEST(lifetime::alive == 0);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(nested_timeouts_the_nearest_deadline_wins_and_outer_cancellation_is_not_a_timeout, Place,
                              places) {
  Place place;
  auto aborted = std::make_shared<std::atomic<int>>(0);
  auto message_of = [&](auto make) {
    return coral::spawn(place.get_executor(), [make, aborted]() -> coral::task<std::string> {
      try {
        co_await make(aborted);
      } catch (const coral::timeout_error& e) {
        co_return e.what();
      }
      co_return "no timeout";
    });
  };
  auto inner_first = message_of(
      [](auto a) { return coral::with_timeout(std::chrono::hours(1), coral::with_timeout(15ms, sleeper(a))); });
  BOOST_TEST(get_within(std::move(inner_first)).find("within 15ms") != std::string::npos);
  auto outer_first = message_of(
      [](auto a) { return coral::with_timeout(15ms, coral::with_timeout(std::chrono::hours(1), sleeper(a))); });
  BOOST_TEST(get_within(std::move(outer_first)).find("within 15ms") != std::string::npos);

  auto cancelled = coral::spawn(place.get_executor(), [&]() -> coral::task<> {
    co_await coral::with_timeout(std::chrono::hours(1), coral::with_timeout(std::chrono::hours(2), sleeper(aborted)));
  });
  cancelled.cancel();
  BOOST_TEST((failure_of(cancelled) == asio::error::operation_aborted));
  BOOST_TEST(lifetime::alive == 0);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(nested_timeouts_on_a_busy_executor_report_the_nearest_deadline, Place, every_place) {
  Place place;
  for (int round = 0; round < 5; ++round) {
    auto j = coral::spawn(place.get_executor(), []() -> coral::task<std::string> {
      try {
        co_await coral::with_timeout(50ms, coral::with_timeout(1ms, []() -> coral::task<> {
                                       // Both deadlines pass while the executor is busy here. (The
                                       // outer one is far enough that the inner, which starts a
                                       // little later, surely comes first, even on a slow hop.)
                                       const auto until = std::chrono::steady_clock::now() + 100ms;
                                       while (std::chrono::steady_clock::now() < until) {
                                       }
                                       co_await coral::sleep_for(5s);
                                     }()));
      } catch (const coral::timeout_error& e) {
        co_return e.what();
      }
      co_return "no timeout";
    });
    const auto message = get_within(std::move(j));
    BOOST_TEST(message.find("within 1ms") != std::string::npos, message);
  }
}

namespace {

// One level of a nest of timeouts: its duration, whether it is a with_deadline, and when it began.
struct timeout_level {
  std::chrono::milliseconds limit;
  bool absolute = false;
  std::chrono::steady_clock::time_point began{};
  std::chrono::steady_clock::time_point deadline() const { return began + limit; }
};

// `innermost` is when the innermost operation began: every level has fixed its deadline by then.
coral::task<> nest_timeouts(std::vector<timeout_level>& levels, std::size_t k,
                            std::chrono::steady_clock::time_point& innermost) {
  if (k == levels.size()) {
    innermost = std::chrono::steady_clock::now();
    co_await coral::sleep_for(10s);
    co_return;
  }
  levels[k].began = std::chrono::steady_clock::now();
  if (levels[k].absolute) {
    co_await coral::with_deadline(levels[k].deadline(), nest_timeouts(levels, k + 1, innermost));
  } else {
    co_await coral::with_timeout(levels[k].limit, nest_timeouts(levels, k + 1, innermost));
  }
}

// Busy for up to 2 ms at a time, then lets the other tasks of the executor run.
coral::task<> keep_busy(std::shared_ptr<std::atomic<bool>> stop, unsigned seed) {
  std::mt19937 random(seed);
  while (!stop->load()) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(random() % 2000);
    while (std::chrono::steady_clock::now() < until) {
    }
    co_await coral::yield();
  }
}

}  // namespace

// Whatever order a loaded executor handles expired deadlines in (an outer one's cancellation may
// reach the inner levels before their own expiry is handled), the deadline that came first is
// the one reported, with its own message and deadline().
BOOST_AUTO_TEST_CASE_TEMPLATE(nested_timeouts_report_the_deadline_that_came_first_whatever_the_load, Place,
                              every_place) {
  Place place;
  auto stop = std::make_shared<std::atomic<bool>>(false);
  std::vector<coral::job<>> busy;
  // (An inline executor has no queue to share: busy tasks there would keep the spawning thread.)
  if constexpr (!std::is_same_v<Place, on_inline_executor>) {
    for (unsigned i = 0; i < 3; ++i) busy.push_back(coral::spawn(place.get_executor(), keep_busy(stop, i)));
  }
  std::mt19937 random(20261124);
  int checked = 0;
  for (int round = 0; round < 30; ++round) {
    std::vector<int> limits{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    std::shuffle(limits.begin(), limits.end(), random);
    std::vector<timeout_level> levels(2 + random() % 4);
    for (std::size_t k = 0; k < levels.size(); ++k) {
      levels[k].limit = std::chrono::milliseconds(limits[k]);
      levels[k].absolute = random() % 4 == 0;
    }
    std::chrono::steady_clock::time_point innermost{};
    auto j = coral::spawn(
        place.get_executor(),
        [&levels, &innermost]() -> coral::task<std::pair<std::string, std::chrono::steady_clock::time_point>> {
          try {
            co_await nest_timeouts(levels, 0, innermost);
          } catch (const coral::timeout_error& e) {
            co_return std::pair(std::string(e.what()), e.deadline());
          }
          co_return std::pair(std::string("no timeout"), std::chrono::steady_clock::time_point{});
        });
    const auto [message, deadline] = get_within(std::move(j));
    // Levels begin one after another, and the executor may run other work in between (a
    // with_timeout fixes its deadline a little after its level began). A round is judged only if
    // every level began, the innermost operation too, within 300 us: otherwise which deadline came
    // first is not known here (a deadline may even have passed before the inner levels began).
    if (innermost == std::chrono::steady_clock::time_point{} || innermost - levels.front().began > 300us) continue;
    const auto first = std::min_element(levels.begin(), levels.end(),
                                        [](const auto& a, const auto& b) { return a.deadline() < b.deadline(); });
    const std::string expected =
        first->absolute ? "by its deadline" : "within " + std::to_string(first->limit.count()) + "ms";
    BOOST_TEST(message.find(expected) != std::string::npos,
               "round " << round << ": expected '" << expected << "', got '" << message << "'");
    BOOST_TEST(std::chrono::abs(deadline - first->deadline()) < 300us, "round " << round);
    ++checked;
  }
  stop->store(true);
  for (auto& b : busy) get_within(std::move(b));
  BOOST_TEST(checked > 0);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(with_deadline_returns_the_result_or_throws_timeout_error_at_the_deadline, Place, places) {
  Place place;
  auto aborted = std::make_shared<std::atomic<int>>(0);
  auto j = coral::spawn(place.get_executor(), [aborted]() -> coral::task<std::string> {
    const auto start = std::chrono::steady_clock::now();
    std::string out = std::to_string(co_await coral::with_deadline(start + 1h, value_after(1ms, 5)));
    try {
      co_await coral::with_deadline(start + 10ms, sleeper(aborted));
    } catch (const coral::timeout_error& e) {
      out += std::string(" ") + e.what();
      if (std::chrono::steady_clock::now() < start + 10ms) out += " early";
    }
    // Nested with with_timeout: the nearest wins either way round.
    try {
      co_await coral::with_deadline(std::chrono::steady_clock::now() + 1h, coral::with_timeout(5ms, sleeper(aborted)));
    } catch (const coral::timeout_error& e) {
      out += std::string(" | ") + e.what();
    }
    co_return out;
  });
  const auto out = get_within(std::move(j));
  BOOST_TEST(out.starts_with("5 coral::with_deadline: the operation did not finish by its deadline"), out);
  BOOST_TEST(out.find(" early") == std::string::npos, out);
  BOOST_TEST(out.find("| coral::with_timeout: the operation did not finish within 5ms") != std::string::npos, out);
  BOOST_TEST(aborted->load() == 2);
  BOOST_TEST(lifetime::alive == 0);
}

BOOST_AUTO_TEST_CASE(a_timed_out_operation_can_still_await_its_cleanup) {
  coral::event_loop loop;
  std::atomic<bool> cleaned{false};
  auto op = [&]() -> coral::task<> {
    std::exception_ptr failure;
    try {
      co_await coral::sleep_for(std::chrono::hours(1));
    } catch (const boost::system::system_error&) {
      failure = std::current_exception();
    }
    co_await coral::non_cancellable([&]() -> coral::task<> {
      co_await coral::sleep_for(5ms);
      cleaned = true;
    }());
    if (failure) std::rethrow_exception(failure);
  };
  auto j = coral::spawn(loop, [&]() -> coral::task<bool> {
    try {
      co_await coral::with_timeout(10ms, op());
    } catch (const coral::timeout_error&) {
      co_return cleaned.load();
    }
    co_return false;
  });
  BOOST_TEST(get_within(std::move(j)));
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
  auto lock = co_await m.lock();  // (a lock of a mutex in the parent's frame)
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

BOOST_AUTO_TEST_CASE_TEMPLATE(a_task_group_joins_every_task_spawned_so_far, Place, places) {
  Place place;
  std::atomic<int> done{0};
  auto j = coral::spawn(place.get_executor(), [&]() -> coral::task<int> {
    coral::task_group g(co_await coral::this_task::executor);
    for (int i = 0; i < 50; ++i) {
      g.spawn([&, i]() -> coral::task<int> {
        co_await coral::sleep_for(std::chrono::milliseconds(i % 5));
        ++done;
        co_return i;
      });
    }
    g.spawn(on_pool(1));  // a task with a bound executor runs there
    co_await g.join();
    const int after_first_join = done.load() + static_cast<int>(g.size());
    g.spawn([&]() -> coral::task<> {  // usable again after a join
      ++done;
      co_return;
    });
    co_await g.join();
    co_return after_first_join * 1000 + done.load();
  });
  BOOST_TEST(get_within(std::move(j)) == 50 * 1000 + 51);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_task_groups_first_failure_cancels_the_rest_and_is_rethrown_by_join, Place, places) {
  Place place;
  auto aborted = std::make_shared<std::atomic<int>>(0);
  auto j = coral::spawn(place.get_executor(), [&]() -> coral::task<std::string> {
    coral::task_group g(co_await coral::this_task::executor);
    g.spawn(sleeper(aborted));
    g.spawn(fail_after(2ms, "first"));
    g.spawn(sleeper(aborted));
    try {
      co_await g.join();
    } catch (const std::runtime_error& e) {
      co_return std::string(e.what()) + " " + std::to_string(aborted->load()) + " " + std::to_string(g.size());
    }
    co_return "no failure";
  });
  BOOST_TEST(get_within(std::move(j)) == "first 2 0");
  BOOST_TEST(lifetime::alive == 0);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(cancelling_a_task_group_or_its_joiner_ends_every_task, Place, places) {
  Place place;
  auto aborted = std::make_shared<std::atomic<int>>(0);
  auto j = coral::spawn(place.get_executor(), [&]() -> coral::task<int> {
    coral::task_group g(co_await coral::this_task::executor);
    g.spawn(sleeper(aborted));
    g.spawn(sleeper(aborted));
    g.cancel();
    co_await g.join();  // tasks ending with operation_aborted after cancel() are not failures
    co_return aborted->load();
  });
  BOOST_TEST(get_within(std::move(j)) == 2);

  std::promise<void> joining;
  auto joiner = coral::spawn(place.get_executor(), [&]() -> coral::task<> {
    coral::task_group g(co_await coral::this_task::executor);
    g.spawn(sleeper(aborted));
    g.spawn(sleeper(aborted));
    joining.set_value();
    co_await g.join();
  });
  BOOST_REQUIRE(joining.get_future().wait_for(patience) == std::future_status::ready);
  joiner.cancel();
  BOOST_TEST((failure_of(joiner) == asio::error::operation_aborted));
  BOOST_TEST(aborted->load() == 4);
  BOOST_TEST(lifetime::alive == 0);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_task_group_destroyed_without_join_cancels_its_tasks_and_reports_their_failure, Place,
                              places) {
  Place place;
  auto aborted = std::make_shared<std::atomic<int>>(0);
  stderr_capture capture;
  std::promise<void> failed;
  auto j = coral::spawn(place.get_executor(), [&]() -> coral::task<> {
    coral::task_group g(co_await coral::this_task::executor);
    g.spawn(sleeper(aborted));
    g.spawn([&]() -> coral::task<> {
      struct signal_on_exit {
        std::promise<void>& p;
        ~signal_on_exit() { p.set_value(); }
      } s{failed};
      throw std::runtime_error("nobody joins");
      co_return;
    });
    co_await coral::sleep_for(std::chrono::hours(1));  // the group's failure does not reach its owner
  });
  BOOST_REQUIRE(failed.get_future().wait_for(patience) == std::future_status::ready);
  j.cancel();  // the group goes with the frame, without a join
  BOOST_TEST((failure_of(j) == asio::error::operation_aborted));
  auto reported = [&] { return capture.text_so_far().find("nobody joins") != std::string::npos; };
  for (int i = 0; i < 3000 && (lifetime::alive != 0 || !reported()); ++i) thread_of(coral::pool_executor{});
  BOOST_TEST(aborted->load() == 1);
  BOOST_TEST(lifetime::alive == 0);
  const auto text = capture.text();
  BOOST_TEST(text.find("nobody observed its exception: nobody joins") != std::string::npos, text);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(when_all_awaits_locks_permits_and_events_with_tasks, Place, places) {
  Place place;
  coral::async_mutex m;
  coral::semaphore s(0);
  coral::event ev;
  auto j = coral::spawn(place.get_executor(), [&]() -> coral::task<bool> {
    auto [guard, permit, set, v] =
        co_await coral::when_all(m.lock(), s.acquire(), ev.wait(), [&]() -> coral::task<int> {
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

BOOST_AUTO_TEST_CASE_TEMPLATE(an_operation_started_after_the_deadline_is_cancelled_too, Place, places) {
  // asio #1574: with edge-triggered cancellation, a wait started after the cancel was missed.
  Place place;
  auto j = coral::spawn(place.get_executor(), []() -> coral::task<std::string> {
    auto stubborn = []() -> coral::task<> {
      try {
        co_await coral::sleep_for(std::chrono::hours(1));
      } catch (const boost::system::system_error&) {
      }
      co_await coral::sleep_for(std::chrono::hours(1));  // after the deadline: fails at once
    };
    try {
      co_await coral::with_timeout(10ms, stubborn());
    } catch (const coral::timeout_error& e) {
      co_return e.what();
    }
    co_return "no timeout";
  });
  BOOST_TEST(get_within(std::move(j)).find("within 10ms") != std::string::npos);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(an_operation_that_completes_after_the_deadline_all_the_same_returns_its_result, Place,
                              places) {
  // Its cancellation cannot reach it (non_cancellable): the value it makes is returned, not
  // dropped behind a timeout_error. (A channel receive handed a value just after the deadline is
  // the same case, with a race: stress_timeout counts those.)
  Place place;
  auto j = coral::spawn(place.get_executor(), []() -> coral::task<std::pair<int, bool>> {
    lifetime counted;
    auto late = []() -> coral::task<int> {
      co_await coral::non_cancellable([]() -> coral::task<> { co_await coral::sleep_for(30ms); }());
      co_return 42;
    };
    const auto start = std::chrono::steady_clock::now();
    const int v = co_await coral::with_timeout(5ms, late());
    co_return std::pair{v, std::chrono::steady_clock::now() - start >= 30ms};
  });
  BOOST_TEST((get_within(std::move(j)) == std::pair{42, true}));
  BOOST_TEST(lifetime::alive.load() == 0);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_cancel_that_comes_before_the_deadline_is_not_a_timeout_even_on_a_busy_executor, Place,
                              places) {
  // The executor is kept busy by a sibling from before the cancel until after the deadline, so
  // the timer's expiry and the cancellation are both queued when the timed task runs again.
  Place place;
  auto aborted = std::make_shared<std::atomic<int>>(0);
  auto heard = std::make_shared<std::string>();
  auto busy = std::make_shared<std::promise<void>>();
  auto cancel_sent = std::make_shared<std::atomic<bool>>(false);
  auto j = coral::spawn(place.get_executor(), [=]() -> coral::task<> {
    auto timed = [](auto aborted, auto heard) -> coral::task<> {
      try {
        co_await coral::with_timeout(5ms, sleeper(aborted));
        *heard = "a value";
      } catch (const coral::timeout_error&) {
        *heard = "timeout_error";
      } catch (const boost::system::system_error& e) {
        *heard = e.code() == asio::error::operation_aborted ? "operation_aborted" : e.what();
      }
    };
    auto hog = [](auto busy, auto cancel_sent) -> coral::task<> {
      const auto deadline_passed = std::chrono::steady_clock::now() + 10ms;
      busy->set_value();
      const auto give_up = std::chrono::steady_clock::now() + patience;
      while ((!*cancel_sent || std::chrono::steady_clock::now() < deadline_passed) &&
             std::chrono::steady_clock::now() < give_up) {
      }
      co_return;
    };
    co_await coral::when_all(timed(aborted, heard), hog(busy, cancel_sent));
  });
  BOOST_REQUIRE(busy->get_future().wait_for(patience) == std::future_status::ready);
  j.cancel();
  *cancel_sent = true;
  failure_of(j);
  BOOST_TEST(*heard == "operation_aborted");
  BOOST_TEST(aborted->load() == 1);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_context_destroyed_under_a_joining_task_group_reports_nothing, Context, owned_contexts) {
  // Nothing failed: the tasks were destroyed with their context, and the job says so.
  stderr_capture capture;
  auto aborted = std::make_shared<std::atomic<int>>(0);
  coral::job<> j;
  {
    Context context;
    j = coral::spawn(context.get_executor(), [aborted]() -> coral::task<> {
      coral::task_group g(co_await coral::this_task::executor);
      g.spawn(sleeper(aborted));
      g.spawn(sleeper(aborted));
      co_await g.join();
    });
    context.settle();
  }
  BOOST_TEST((failure_of(j) == asio::error::operation_aborted));
  BOOST_TEST(lifetime::alive == 0);
  const auto text = capture.text();
  BOOST_TEST(text.empty(), text);
}

// Lossless select: channel operations raced in when_any / with_timeout happen only if they win.

BOOST_AUTO_TEST_CASE_TEMPLATE(a_select_over_ready_channels_takes_exactly_one_value, Place, places) {
  Place place;
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

BOOST_AUTO_TEST_CASE_TEMPLATE(selects_over_channels_that_are_always_ready_serve_every_channel, Place, places) {
  // Ready operations are tried first, without child tasks, from a rotating start: a channel that
  // is first among the arguments must not win every time.
  Place place;
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

BOOST_AUTO_TEST_CASE_TEMPLATE(selects_that_alternate_on_a_thread_serve_every_channel, Place, places) {
  // Two selects of the same argument types taking turns (in one loop, and in two tasks that yield
  // between selects): a start position shared by the selects of a thread would make each of them
  // start at the same branch every time and starve the other channel.
  Place place;
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

BOOST_AUTO_TEST_CASE_TEMPLATE(channels_ready_at_once_win_equally_often_whatever_else_the_select_waits_for, Place,
                              places) {
  // Go's TestSelectFairness: two channels always ready, two never, 10,000 selects; each ready one
  // must win within 10 standard deviations of half. A first pass from a random start, rotating,
  // gives the first ready channel after the never-ready ones three quarters of the wins.
  Place place;
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

BOOST_AUTO_TEST_CASE_TEMPLATE(locks_permits_and_event_waits_ready_at_once_win_equally_often, Place, places) {
  // As Go's fairness bound above, for every kind of lossless operation a select tries first, each
  // pair beside a lock that is never free; what the winner took is given back each time.
  Place place;
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
        const auto locked = co_await coral::when_any(m1.lock(), held.lock(), m2.lock());
        first_wins[0] += locked.index() == 0;
      }
      {
        const auto acquired = co_await coral::when_any(s1.acquire(), held.lock(), s2.acquire());
        first_wins[1] += acquired.index() == 0;
      }
      const auto waited = co_await coral::when_any(e1.wait(), held.lock(), e2.wait());
      first_wins[2] += waited.index() == 0;
      (void)ch.try_send(i);
      const auto mixed = co_await coral::when_any(ch.receive(), held.lock(), s1.acquire());
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

BOOST_AUTO_TEST_CASE_TEMPLATE(a_cancelled_task_selecting_over_a_ready_channel_takes_nothing, Place, places) {
  Place place;
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

BOOST_AUTO_TEST_CASE_TEMPLATE(a_receive_that_loses_to_a_timer_consumes_nothing_and_stops_waiting, Place, places) {
  Place place;
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

BOOST_AUTO_TEST_CASE_TEMPLATE(a_send_that_loses_to_a_timer_delivers_nothing, Place, places) {
  Place place;
  coral::channel<int> ch;
  auto j = coral::spawn(place.get_executor(), [&]() -> coral::task<std::size_t> {
    auto r = co_await coral::when_any(ch.send(7), coral::sleep_for(5ms));
    co_return r.index();
  });
  BOOST_TEST(get_within(std::move(j)) == 1u);
  BOOST_TEST(!ch.try_receive().has_value());  // the send is not waiting any more either
}

BOOST_AUTO_TEST_CASE_TEMPLATE(two_selects_that_meet_agree_on_what_happened, Place, places) {
  Place place;
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

BOOST_AUTO_TEST_CASE_TEMPLATE(a_select_never_meets_itself, Place, places) {
  Place place;
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

BOOST_AUTO_TEST_CASE_TEMPLATE(a_closed_channel_ends_a_select_with_channel_closed, Place, places) {
  Place place;
  coral::channel<int> open, closed;
  closed.close();
  auto j = coral::spawn(place.get_executor(), [&]() -> coral::task<> {
    co_await coral::when_any(open.receive(), closed.receive(), std::chrono::hours(1));
  });
  BOOST_CHECK_THROW(get_within(std::move(j)), coral::channel_closed);
  BOOST_TEST(!open.try_send(1));
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
  // One spawn's completion used to leave its tracked work behind on the task's thread: the next
  // round's emit was then lost now and then when the rounds ran back to back on one thread.
  for (int round = 0; round < 3; ++round) {
    for (auto type :
         {asio::cancellation_type::terminal, asio::cancellation_type::partial, asio::cancellation_type::total}) {
      cancellation_through_the_token_reaches_every_child_of_a_join<Place>(type);
    }
  }
}

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

BOOST_AUTO_TEST_CASE_TEMPLATE(values_a_join_drops_are_destroyed_before_it_returns, Place, every_place) {
  Place place;
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

BOOST_AUTO_TEST_CASE_TEMPLATE(a_permit_or_lock_a_join_drops_is_given_back, Place, every_place) {
  Place place;
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

BOOST_AUTO_TEST_CASE_TEMPLATE(a_value_taken_from_a_child_on_another_executor_leaves_nothing_behind, Place,
                              every_place) {
  Place place;
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

BOOST_AUTO_TEST_CASE_TEMPLATE(a_job_reports_done_only_when_nothing_of_its_task_is_left, Place, every_place) {
  Place place;
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