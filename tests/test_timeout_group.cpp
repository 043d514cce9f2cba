#define BOOST_TEST_MODULE coral with_timeout with_deadline and task_group
#include <boost/test/unit_test.hpp>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "test_support.hpp"

using namespace coral_test;
namespace asio = boost::asio;

BOOST_AUTO_TEST_SUITE(with_timeout)

CORAL_TEST_CASE_ON_EACH_PLACE(with_timeout_returns_the_result_or_throws_timeout_error_after_cancelling_the_operation,
                              places) {
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
CORAL_TEST_CASE_ON_EACH_PLACE(a_task_s_timeouts_in_a_row_each_keep_their_own_deadline, places) {
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

CORAL_TEST_CASE_ON_EACH_PLACE(nested_timeouts_the_nearest_deadline_wins_and_outer_cancellation_is_not_a_timeout,
                              places) {
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

CORAL_TEST_CASE_ON_EACH_PLACE(nested_timeouts_on_a_busy_executor_report_the_nearest_deadline, every_place) {
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
CORAL_TEST_CASE_ON_EACH_PLACE(nested_timeouts_report_the_deadline_that_came_first_whatever_the_load, every_place) {
  auto stop = std::make_shared<std::atomic<bool>>(false);
  std::vector<coral::job<>> busy;
  // (An inline executor has no queue to share: busy tasks there would keep the spawning thread.)
  if (!dynamic_cast<on_inline_executor*>(&place)) {
    for (unsigned i = 0; i < 3; ++i) busy.push_back(coral::spawn(place.get_executor(), keep_busy(stop, i)));
  }
  std::mt19937 random(20261124);
  // (Rounds go on until 30 could be judged, or 600 were run: on a slow build, such as one with a
  // sanitizer and without optimisation, on a loaded machine, few rounds can be.)
  int checked = 0;
  for (int round = 0; checked < 30 && round < 600; ++round) {
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

CORAL_TEST_CASE_ON_EACH_PLACE(with_deadline_returns_the_result_or_throws_timeout_error_at_the_deadline, places) {
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

CORAL_TEST_CASE_ON_EACH_PLACE(an_operation_started_after_the_deadline_is_cancelled_too, places) {
  // asio #1574: with edge-triggered cancellation, a wait started after the cancel was missed.
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

CORAL_TEST_CASE_ON_EACH_PLACE(an_operation_that_completes_after_the_deadline_all_the_same_returns_its_result, places) {
  // Its cancellation cannot reach it (non_cancellable): the value it makes is returned, not
  // dropped behind a timeout_error. (A channel receive handed a value just after the deadline is
  // the same case, with a race: stress_timeout counts those.)
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

CORAL_TEST_CASE_ON_EACH_PLACE(a_cancel_that_comes_before_the_deadline_is_not_a_timeout_even_on_a_busy_executor,
                              places) {
  // The executor is kept busy by a sibling from before the cancel until after the deadline, so
  // the timer's expiry and the cancellation are both queued when the timed task runs again.
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

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(task_group)

CORAL_TEST_CASE_ON_EACH_PLACE(a_task_group_joins_every_task_spawned_so_far, places) {
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

CORAL_TEST_CASE_ON_EACH_PLACE(a_task_groups_first_failure_cancels_the_rest_and_is_rethrown_by_join, places) {
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

CORAL_TEST_CASE_ON_EACH_PLACE(cancelling_a_task_group_or_its_joiner_ends_every_task, places) {
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

CORAL_TEST_CASE_ON_EACH_PLACE(a_task_group_destroyed_without_join_cancels_its_tasks_and_reports_their_failure, places) {
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

BOOST_AUTO_TEST_SUITE_END()
