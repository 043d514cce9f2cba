#define BOOST_TEST_MODULE coral linearizability
#include <boost/test/unit_test.hpp>
#include <tuple>

#include "../test_support.hpp"
#include "async_mutex.hpp"
#include "barrier.hpp"
#include "broadcast_channel.hpp"
#include "channel.hpp"
#include "condition_variable.hpp"
#include "event.hpp"
#include "latch.hpp"
#include "lincheck.hpp"
#include "select.hpp"
#include "semaphore.hpp"
#include "shared_mutex.hpp"
#include "watch.hpp"

// Every shared object is linearizable on every executor kind: random scenarios over each object,
// each run many times, every outcome explained by its sequential model (lincheck.hpp). The checker
// can fail: objects with planted bugs are caught.
//
// CI runs a few scenarios; LINCHECK_SCENARIOS=n LINCHECK_RUNS=m runs longer, LINCHECK_SEED=s
// replays the scenario a failure names.

using namespace coral_test;

namespace {

// The executor kinds, named for the failure reports.
struct lc_event_loop : on_event_loop {};
struct lc_io_context_1_thread : on_io_context_1_thread {
  static constexpr const char* name = "io_context, 1 thread";
};
struct lc_io_context_2_threads : on_io_context_2_threads {
  static constexpr const char* name = "io_context, 2 threads";
};
struct lc_thread_pool : on_thread_pool {
  static constexpr const char* name = "thread_pool";
};
struct lc_pool_strand : on_pool_strand {
  static constexpr const char* name = "thread_pool, a strand per thread";
};
struct lc_default_pool : on_default_pool {
  static constexpr const char* name = "pool_executor";
};
struct lc_loop_executor : on_loop_executor {
  static constexpr const char* name = "loop_executor";
};
struct lc_inline_executor : on_inline_executor {
  static constexpr const char* name = "inline_executor";
};
struct lc_new_thread_executor : on_new_thread_executor {
  static constexpr const char* name = "new_thread_executor";
};
// Each thread of a scenario on another kind: an event loop, a strand of a pool, the default pool.
struct lc_mixed {
  static constexpr const char* name = "mixed: event_loop, a pool's strand, pool_executor";
  coral::event_loop loop;
  on_pool_strand pool;
  int next = 0;
  boost::asio::any_io_executor get_executor() {
    switch (next++ % 3) {
      case 0:
        return loop.get_executor();
      case 1:
        return pool.get_executor();
      default:
        return coral::pool_executor{};
    }
  }
};
using lc_places =
    std::tuple<lc_event_loop, lc_io_context_1_thread, lc_io_context_2_threads, lc_thread_pool, lc_pool_strand,
               lc_default_pool, lc_loop_executor, lc_inline_executor, lc_new_thread_executor, lc_mixed>;

// CI's share: a few seconds under the sanitizers for all the objects together.
lincheck::options ci_options() {
  lincheck::options o;
  o.scenarios = 4;
  o.runs = 8;
  return lincheck::options_from_environment(o);
}

template <class Spec, class... Places>
void check_on_each(const lincheck::options& opt, lincheck::report& rep, std::tuple<Places...>*) {
  (lincheck::check_on<Spec, Places>(opt, rep), ...);
}

template <class Spec>
lincheck::report check_everywhere(const lincheck::options& opt) {
  lincheck::report rep;
  check_on_each<Spec>(opt, rep, static_cast<lc_places*>(nullptr));
  return rep;
}

template <class Spec>
void check_linearizable() {
  const auto opt = ci_options();
  const auto rep = check_everywhere<Spec>(opt);
  std::string failures;
  for (const auto& f : rep.failures) failures += f;
  BOOST_CHECK_MESSAGE(rep.failures.empty(), failures);
  BOOST_TEST_MESSAGE(Spec::name << ": " << opt.scenarios << " scenarios on each of "
                                << std::tuple_size_v<lc_places> << " executor kinds, " << rep.runs << " runs, "
                                << rep.distinct_outcomes << " distinct outcomes checked");
}

// Runs scenarios of a buggy object on a thread pool until the checker reports one; the report
// must come.
template <class Spec>
void check_caught(long scenarios) {
  lincheck::options opt;
  opt.scenarios = scenarios;
  opt.runs = 10;
  lincheck::report rep;
  lincheck::check_on<Spec, lc_thread_pool>(opt, rep);
  BOOST_REQUIRE_MESSAGE(!rep.failures.empty(), "the checker did not catch " << Spec::name);
  BOOST_TEST_MESSAGE("caught after " << rep.scenarios << " scenarios:\n" << rep.failures.front());
}

// Planted bugs.

// A receive that takes a value after it was cancelled (and loses it): as if a cancelled waiter
// stayed queued in the channel for a moment and swallowed the next value sent.
struct receive_takes_after_cancel : lincheck::channel_spec {
  static constexpr const char* name = "channel<int> whose cancelled receive takes a value";
  static coral::task<> swallow_next(object& ch) {
    try {
      (void)co_await coral::with_timeout(std::chrono::milliseconds(1), ch.receive());
    } catch (const std::exception&) {
    }
  }
  static coral::task<lincheck::result> run(object& ch, const lincheck::op& o) {
    if (o.kind != receive) co_return co_await channel_spec::run(ch, o);
    try {
      co_return std::to_string(co_await ch.receive());
    } catch (const boost::system::system_error& e) {
      if (e.code() != boost::asio::error::operation_aborted) throw;
    }
    co_await coral::non_cancellable(swallow_next(ch));
    throw boost::system::system_error(boost::asio::error::operation_aborted);
  }
};

// A mutex that lets a second holder in: a lock that finds the mutex taken enters anyway.
struct mutex_with_two_holders : lincheck::async_mutex_spec {
  static constexpr const char* name = "async_mutex that admits two holders";
  static coral::task<lincheck::result> run(object& m, const lincheck::op& o) {
    if (o.kind != lock) co_return co_await async_mutex_spec::run(m, o);
    (void)m.try_lock();
    co_return "ok";
  }
};

// A shared_mutex that lets a reader in beside a writer: a lock_shared that finds a writer enters
// anyway.
struct reader_beside_a_writer : lincheck::shared_mutex_spec {
  static constexpr const char* name = "shared_mutex that lets a reader in beside a writer";
  static coral::task<lincheck::result> run(object& m, const lincheck::op& o) {
    if (o.kind != lock_shared) co_return co_await shared_mutex_spec::run(m, o);
    (void)m.try_lock_shared();
    co_return "ok";
  }
};

// A watch that loses the latest value: a send made while a changed() is in progress is dropped.
struct watch_losing_a_send : lincheck::watch_spec {
  static constexpr const char* name = "watch<int> that drops a send while a changed() waits";
  struct object : lincheck::watch_and_receivers {
    std::atomic<int> changing{0};
  };
  static std::unique_ptr<object> make(int) { return std::make_unique<object>(); }
  static std::optional<lincheck::result> run_now(object& x, const lincheck::op& o) {
    if (o.kind == send && x.changing.load() > 0) return "ok";
    return watch_spec::run_now(x, o);
  }
  static coral::task<lincheck::result> run(object& x, const lincheck::op& o) {
    ++x.changing;
    std::exception_ptr failure;
    try {
      auto r = co_await watch_spec::run(x, o);
      --x.changing;
      co_return r;
    } catch (...) {
      failure = std::current_exception();
    }
    --x.changing;
    std::rethrow_exception(failure);
  }
};

// A parallel part written by hand: each thread's operations and results; every operation began
// before any other returned (no real-time order), unless `torn` names threads the teardown
// cancelled once the others had completed what they did.
struct hand_written {
  lincheck::scenario s;
  lincheck::outcome o;
  hand_written(int config, std::vector<std::vector<std::pair<lincheck::op, lincheck::result>>> threads,
               std::vector<int> torn = {}) {
    s.config = config;
    s.parts[0].resize(1);
    s.parts[2].resize(1);
    o.parts[0].threads.resize(1);
    o.parts[2].threads.resize(1);
    for (const auto& ops : threads) {
      s.parts[1].emplace_back();
      o.parts[1].threads.emplace_back();
      for (const auto& [op, value] : ops) {
        s.parts[1].back().push_back(op);
        o.parts[1].threads.back().push_back({value, std::vector<int>(threads.size(), 0), false});
      }
    }
    if (!torn.empty()) {
      o.parts[1].torn_down = true;
      o.parts[1].torn_threads = torn;
      for (std::size_t t = 0; t < threads.size(); ++t) {
        const bool cancelled = std::count(torn.begin(), torn.end(), static_cast<int>(t)) != 0;
        o.parts[1].teardown_clock.push_back(static_cast<int>(threads[t].size()) - (cancelled ? 1 : 0));
      }
    }
  }
  template <class Spec>
  bool explained() const {
    return lincheck::checker<Spec>(s, o).explained();
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(the_checker)

BOOST_AUTO_TEST_CASE(explains_a_lock_that_waits_until_the_teardown_but_not_two_holders) {
  using m = lincheck::async_mutex_spec;
  const lincheck::op lock{m::lock, 0, 0}, unlock{m::unlock, 0, 0};
  BOOST_TEST(hand_written(0, {{{lock, "ok"}}, {{lock, "aborted"}}}, {1}).explained<m>());
  BOOST_TEST(hand_written(0, {{{lock, "ok"}, {unlock, "ok"}}, {{lock, "ok"}}}).explained<m>());
  BOOST_TEST(!hand_written(0, {{{lock, "ok"}}, {{lock, "ok"}}}).explained<m>());
  // Without a teardown or a cancel, nothing explains an aborted lock.
  BOOST_TEST(!hand_written(0, {{{lock, "ok"}}, {{lock, "aborted"}}}).explained<m>());
}

BOOST_AUTO_TEST_CASE(explains_a_cancelled_receive_only_if_it_took_nothing) {
  using c = lincheck::channel_spec;
  const int rendezvous = 0;
  const lincheck::op receive{c::receive, 0, 0}, send{c::send, 1, 0}, cancel{lincheck::cancel_kind, 0, 0};
  // thread 1 cancels thread 0's receive, then sends: nobody can take the value.
  BOOST_TEST(
      hand_written(rendezvous, {{{receive, "aborted"}}, {{cancel, "ok"}, {send, "aborted"}}}, {1}).explained<c>());
  BOOST_TEST(!hand_written(rendezvous, {{{receive, "aborted"}}, {{cancel, "ok"}, {send, "ok"}}}).explained<c>());
  // ... unless the receive took it before the cancellation reached it.
  BOOST_TEST(hand_written(rendezvous, {{{receive, "1"}}, {{cancel, "ok"}, {send, "ok"}}}).explained<c>());
}

BOOST_AUTO_TEST_CASE(explains_a_cancelled_condition_wait_only_once_it_holds_the_mutex_again) {
  using cv = lincheck::condition_variable_spec;
  const lincheck::op lock0{cv::lock, 0, 0}, wait0{cv::wait, 0, 0}, lock1{cv::lock, 0, 1}, unlock1{cv::unlock, 0, 1};
  // Thread 0 waits, thread 1 takes the mutex; the teardown cancels the wait, which locks it again.
  BOOST_TEST(
      hand_written(0, {{{lock0, "ok"}, {wait0, "aborted"}}, {{lock1, "ok"}, {unlock1, "ok"}}}, {0}).explained<cv>());
  // ... which it cannot while thread 1 holds it.
  BOOST_TEST(!hand_written(0, {{{lock0, "ok"}, {wait0, "aborted"}}, {{lock1, "ok"}}}, {0}).explained<cv>());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(linearizable)

BOOST_AUTO_TEST_CASE(channels_of_every_flavour) {
  check_linearizable<lincheck::channel_spec>();
}
BOOST_AUTO_TEST_CASE(selects_over_two_channels) {
  check_linearizable<lincheck::select_spec>();
}
BOOST_AUTO_TEST_CASE(async_mutex_in_the_std_style) {
  check_linearizable<lincheck::async_mutex_spec>();
}
BOOST_AUTO_TEST_CASE(semaphore_in_the_std_style) {
  check_linearizable<lincheck::semaphore_spec>();
}
BOOST_AUTO_TEST_CASE(latch) {
  check_linearizable<lincheck::latch_spec>();
}
BOOST_AUTO_TEST_CASE(event) {
  check_linearizable<lincheck::event_spec>();
}
BOOST_AUTO_TEST_CASE(shared_mutex_in_the_std_style) {
  check_linearizable<lincheck::shared_mutex_spec>();
}
BOOST_AUTO_TEST_CASE(condition_variable_with_its_mutex) {
  check_linearizable<lincheck::condition_variable_spec>();
}
BOOST_AUTO_TEST_CASE(barrier_with_a_completion) {
  check_linearizable<lincheck::barrier_spec>();
}
BOOST_AUTO_TEST_CASE(watch_with_a_receiver_per_thread) {
  check_linearizable<lincheck::watch_spec>();
}
BOOST_AUTO_TEST_CASE(broadcast_channel_in_both_overflow_modes) {
  check_linearizable<lincheck::broadcast_channel_spec>();
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(the_checker_catches_planted_bugs)

BOOST_AUTO_TEST_CASE(a_receive_that_takes_a_value_after_it_was_cancelled) {
  check_caught<receive_takes_after_cancel>(1500);
}
BOOST_AUTO_TEST_CASE(a_mutex_that_lets_two_holders_in) {
  check_caught<mutex_with_two_holders>(1500);
}
BOOST_AUTO_TEST_CASE(a_shared_mutex_that_lets_a_reader_in_beside_a_writer) {
  check_caught<reader_beside_a_writer>(1500);
}
BOOST_AUTO_TEST_CASE(a_watch_that_loses_the_latest_value) {
  check_caught<watch_losing_a_send>(1500);
}

BOOST_AUTO_TEST_SUITE_END()
