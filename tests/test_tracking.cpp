#define BOOST_TEST_MODULE coral task tracking
#include <boost/json/src.hpp>  // (Boost.JSON compiled into this test alone: it parses the dumps)
#include <boost/test/unit_test.hpp>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "test_support.hpp"

using namespace coral_test;
namespace asio = boost::asio;
namespace json = boost::json;

namespace {

// Tracking on for one test case, and every task it started ended by its end.
struct tracking_on {
  tracking_on() { coral::set_task_tracking(true); }
  ~tracking_on() {
    coral::set_task_tracking(false);
    coral::set_stall_detector(std::chrono::nanoseconds(0));
  }
};

json::array tasks_now() {
  std::ostringstream out;
  coral::dump_tasks_json(out);
  return json::parse(out.str()).as_object().at("tasks").as_array();
}

const json::object* find_named(const json::array& tasks, std::string_view name) {
  for (const auto& t : tasks) {
    if (t.as_object().at("name").as_string() == name) return &t.as_object();
  }
  return nullptr;
}

// (A wait that completes while the test cancels its tasks is followed by another: every task
// ends with operation_aborted.)

// Waits (bounded) until the task named `name` is suspended on `kind`; returns its entry.
json::object suspended_named(std::string_view name, std::string_view kind) {
  const auto give_up = std::chrono::steady_clock::now() + patience;
  for (;;) {
    const auto tasks = tasks_now();
    if (const auto* t = find_named(tasks, name);
        t && t->at("state").as_string() == "suspended" && t->at("waits_on").as_string() == kind) {
      return *t;
    }
    if (std::chrono::steady_clock::now() > give_up) {
      std::ostringstream text;
      coral::dump_tasks(text);
      BOOST_FAIL("task " << name << " never suspended on " << kind << "; the dump:\n" << text.str());
    }
    std::this_thread::yield();
  }
}

// A line a task notes (as it runs, on its own thread) before its co_await.
using noted_line = std::atomic<int>;

// "file:line" of this file, once the task has noted the line.
std::string location(const noted_line& line) {
  const auto give_up = std::chrono::steady_clock::now() + patience;
  while (line.load() == 0 && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
  return std::string(__FILE__) + ":" + std::to_string(line.load());
}
std::string location(int line) {
  return std::string(__FILE__) + ":" + std::to_string(line);
}

// The innermost frame's file:line of a task entry.
std::string frame_at(const json::object& t, std::size_t i) {
  const auto& frames = t.at("frames").as_array();
  if (i >= frames.size()) return "(no frame " + std::to_string(i) + ")";
  const auto& f = frames[i].as_object();
  return std::string(f.at("file").as_string()) + ":" + std::to_string(f.at("line").as_int64());
}

}  // namespace

BOOST_AUTO_TEST_SUITE(dump_tasks)

BOOST_AUTO_TEST_CASE_TEMPLATE(a_dump_lists_every_suspended_task_with_where_and_what_it_waits_on, Place, every_place) {
  tracking_on tracking;
  Place place;
  auto ex = place.get_executor();
  running_io_context timers(1);
  coral::channel<int> nobody_sends(0), nobody_receives(0);
  coral::async_mutex mutex;
  coral::semaphore no_permits(0);
  coral::event never_set;
  noted_line line_sleep{0}, line_receive{0}, line_send{0}, line_lock{0}, line_acquire{0}, line_wait{0}, line_timer{0},
      line_child{0}, line_inner{0}, line_join{0};

  auto sleeper = [&]() -> coral::task<> {
    co_await coral::this_task::set_name("sleeper");
    auto held = co_await mutex.scoped_lock();
    line_sleep = __LINE__ + 1;
    co_await std::chrono::hours(1);
  };
  auto receiver = [&]() -> coral::task<> {
    co_await coral::this_task::set_name("receiver");
    line_receive = __LINE__ + 1;
    co_await nobody_sends.receive();
    co_await std::chrono::hours(1);
  };
  auto sender = [&]() -> coral::task<> {
    co_await coral::this_task::set_name("sender");
    line_send = __LINE__ + 1;
    co_await nobody_receives.send(1);
    co_await std::chrono::hours(1);
  };
  auto locker = [&]() -> coral::task<> {
    co_await coral::this_task::set_name("locker");
    line_lock = __LINE__ + 1;
    auto g = co_await mutex.scoped_lock();
    co_await std::chrono::hours(1);
  };
  auto acquirer = [&]() -> coral::task<> {
    co_await coral::this_task::set_name("acquirer");
    line_acquire = __LINE__ + 1;
    auto p = co_await no_permits.scoped_acquire();
    co_await std::chrono::hours(1);
  };
  auto waiter = [&]() -> coral::task<> {
    co_await coral::this_task::set_name("waiter");
    line_wait = __LINE__ + 1;
    co_await never_set.wait();
  };
  auto timer_user = [&]() -> coral::task<> {
    co_await coral::this_task::set_name("timer");
    asio::steady_timer timer(timers.get_executor(), std::chrono::hours(1));
    line_timer = __LINE__ + 1;
    co_await timer.async_wait(coral::use_task);
  };
  auto inner = [&]() -> coral::task<int> {
    line_inner = __LINE__ + 1;
    co_await never_set.wait();
    co_return 1;
  };
  auto parent = [&]() -> coral::task<> {
    co_await coral::this_task::set_name("parent");
    line_child = __LINE__ + 1;
    co_await inner();
  };
  auto joiner = [&]() -> coral::task<> {
    co_await coral::this_task::set_name("joiner");
    line_join = __LINE__ + 1;
    co_await coral::when_all(never_set.wait(), coral::sleep_for(std::chrono::hours(1)));
  };

  std::vector<coral::job<void>> jobs;
  jobs.push_back(coral::spawn(ex, sleeper));
  suspended_named("sleeper", "sleep");  // (it holds the mutex first)
  jobs.push_back(coral::spawn(ex, receiver));
  jobs.push_back(coral::spawn(ex, sender));
  jobs.push_back(coral::spawn(ex, locker));
  jobs.push_back(coral::spawn(ex, acquirer));
  jobs.push_back(coral::spawn(ex, waiter));
  jobs.push_back(coral::spawn(ex, timer_user));
  jobs.push_back(coral::spawn(ex, parent));
  const int line_spawn_joiner = __LINE__ + 1;
  jobs.push_back(coral::spawn(ex, joiner));

  const auto sleeping = suspended_named("sleeper", "sleep");
  BOOST_TEST(frame_at(sleeping, 0) == location(line_sleep));
  BOOST_TEST(sleeping.at("due_in_ns").as_int64() > 3000'000'000'000);
  // Each waits where its co_await is. (The entry is read before the line the task noted.)
  const std::tuple<const char*, const char*, const noted_line*> waits[] = {
      {"receiver", "channel receive", &line_receive}, {"sender", "channel send", &line_send},
      {"locker", "mutex lock", &line_lock},           {"acquirer", "semaphore acquire", &line_acquire},
      {"waiter", "event wait", &line_wait},           {"timer", "asio operation", &line_timer}};
  for (const auto& [name, kind, line] : waits) {
    const auto entry = suspended_named(name, kind);
    BOOST_TEST(frame_at(entry, 0) == location(*line), name);
  }
  // A child awaited on the task's executor is part of the task: its co_await, then its parent's.
  const auto awaiting = suspended_named("parent", "event wait");
  BOOST_TEST(frame_at(awaiting, 0) == location(line_inner));
  BOOST_TEST(frame_at(awaiting, 1) == location(line_child));
  // A join's branches are tasks of their own, awaited by it.
  const auto joining = suspended_named("joiner", "join");
  BOOST_TEST(frame_at(joining, 0) == location(line_join));
  BOOST_TEST(std::string(joining.at("spawned_at").as_string()).find(location(line_spawn_joiner)) == 0);
  const auto all = tasks_now();
  int branches = 0;
  for (const auto& t : all) {
    if (t.as_object().at("parent").as_int64() == joining.at("id").as_int64()) ++branches;
  }
  BOOST_TEST(branches == 2);
  // The text form says the same, one block per task.
  std::ostringstream text;
  coral::dump_tasks(text);
  for (auto* name : {"sleeper", "receiver", "sender", "locker", "acquirer", "waiter", "timer", "parent", "joiner"}) {
    BOOST_TEST(text.str().find(std::string("\"") + name + "\": suspended") != std::string::npos, name);
  }
  BOOST_TEST(text.str().find(location(line_inner)) != std::string::npos);

  for (auto& j : jobs) j.cancel();
  for (auto& j : jobs) BOOST_TEST(failure_of(j) == asio::error::operation_aborted);
  BOOST_TEST(coral::tracked_task_count() == 0u);
}

BOOST_AUTO_TEST_SUITE_END()

namespace tracking_test {
coral::task<int> named_waiter(coral::event& e, int value) {
  co_await e.wait();
  co_return value;
}
}  // namespace tracking_test

BOOST_AUTO_TEST_SUITE(async_stack)

BOOST_AUTO_TEST_CASE(a_frame_names_its_coroutine_as_written_without_return_type_or_parameters) {
  tracking_on tracking;
  coral::event_loop loop;
  coral::event release;
  auto job = coral::spawn(loop.get_executor(), [&]() -> coral::task<int> {
    co_await coral::this_task::set_name("named");
    co_return co_await tracking_test::named_waiter(release, 4);
  });
  const auto t = suspended_named("named", "event wait");
  const std::string function(t.at("frames").as_array().at(0).as_object().at("function").as_string());
  // (clang 14 has no std::source_location: its name is the unqualified one.)
  BOOST_TEST((function == "tracking_test::named_waiter" || function == "named_waiter"), function);
  release.set();
  BOOST_TEST(get_within(job) == 4);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_three_deep_chain_across_executors_shows_each_await_and_who_awaits_whom, Place, places) {
  tracking_on tracking;
  Place place;
  coral::event_loop other;
  coral::event release;
  noted_line line_root{0}, line_level1{0}, line_level2{0}, line_level3{0};
  auto level3 = [&]() -> coral::task<int> {
    line_level3 = __LINE__ + 1;
    co_await release.wait();
    co_return 3;
  };
  auto level2 = [&]() -> coral::task<int> {
    line_level2 = __LINE__ + 1;
    co_return co_await level3();
  };
  auto level1 = [&]() -> coral::task<int> {
    line_level1 = __LINE__ + 1;
    co_return co_await coral::on(other.get_executor(), level2());
  };
  auto root = [&]() -> coral::task<int> {
    co_await coral::this_task::set_name("root");
    line_root = __LINE__ + 1;
    co_return co_await level1();
  };
  auto job = coral::spawn(place.get_executor(), root);
  const auto r = suspended_named("root", "child task");
  BOOST_TEST(frame_at(r, 0) == location(line_level1));
  BOOST_TEST(frame_at(r, 1) == location(line_root));
  const json::object* child = nullptr;
  const auto give_up = std::chrono::steady_clock::now() + patience;
  json::array all;
  while (!child && std::chrono::steady_clock::now() < give_up) {
    all = tasks_now();
    for (const auto& t : all) {
      const auto& o = t.as_object();
      if (o.at("parent").as_int64() == r.at("id").as_int64() && o.at("waits_on").as_string() == "event wait") {
        child = &o;
      }
    }
  }
  BOOST_REQUIRE(child);
  BOOST_TEST(frame_at(*child, 0) == location(line_level3));
  BOOST_TEST(frame_at(*child, 1) == location(line_level2));
  BOOST_TEST(std::string(child->at("executor").as_string()).find("io_context") == 0);
  // In the text, the child's block is under its parent's, indented.
  std::ostringstream text;
  coral::dump_tasks(text);
  const auto s = text.str();
  const auto at_root = s.find("task " + std::to_string(r.at("id").as_int64()) + " \"root\"");
  const auto at_child = s.find("\n  task " + std::to_string(child->at("id").as_int64()) + ":");
  BOOST_TEST(at_root != std::string::npos);
  BOOST_TEST(at_child != std::string::npos);
  BOOST_TEST(at_root < at_child);
  BOOST_TEST(s.find("awaited by task " + std::to_string(r.at("id").as_int64())) != std::string::npos);
  release.set();
  BOOST_TEST(get_within(job) == 3);
  BOOST_TEST(coral::tracked_task_count() == 0u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(exception_traces)

// What an unobserved-exception handler saw: the exception's message and its trace.
struct reported_failure {
  std::string what;
  coral::exception_trace trace;
};

// Installs a handler that hands the first report to `reported` (restoring the previous handler
// at the end of the test).
struct catching_reports {
  std::promise<reported_failure> reported;
  std::atomic<bool> taken{false};
  coral::unobserved_exception_handler previous;
  catching_reports() {
    previous = coral::set_unobserved_exception_handler([this](std::exception_ptr e) {
      if (taken.exchange(true)) return;
      reported_failure r;
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& ex) {
        r.what = ex.what();
      }
      r.trace = coral::unobserved_exception_trace();
      reported.set_value(std::move(r));
    });
  }
  ~catching_reports() { coral::set_unobserved_exception_handler(std::move(previous)); }
  reported_failure next() {
    auto f = reported.get_future();
    if (f.wait_for(patience) != std::future_status::ready) throw std::runtime_error("test: nothing was reported");
    return f.get();
  }
};

bool at(const coral::exception_step& step, int line) {
  return step.location.rfind(location(line) + " in ", 0) == 0;
}

BOOST_AUTO_TEST_CASE_TEMPLATE(an_unobserved_failure_is_reported_with_every_co_await_it_came_out_of, Place, places) {
  tracking_on tracking;
  catching_reports reports;
  Place place;
  coral::event_loop other;
  noted_line line_root{0}, line_level1{0}, line_level2{0};
  auto level3 = [&]() -> coral::task<int> {
    co_await coral::yield();
    throw std::runtime_error("level 3 failed");
  };
  auto level2 = [&]() -> coral::task<int> {
    line_level2 = __LINE__ + 1;
    co_return co_await level3();
  };
  auto level1 = [&]() -> coral::task<int> {
    line_level1 = __LINE__ + 1;
    co_return co_await coral::on(other.get_executor(), level2());
  };
  auto root = [&]() -> coral::task<int> {
    co_await coral::this_task::set_name("root");
    line_root = __LINE__ + 1;
    co_return co_await level1();
  };
  const int line_spawn = __LINE__ + 1;
  coral::spawn(place.get_executor(), root);  // (its job is dropped: nobody observes the failure)
  const auto r = reports.next();
  BOOST_TEST(r.what == "level 3 failed");
  const auto& t = r.trace;
  BOOST_TEST_INFO("the trace:\n" << coral::to_string(t));
  BOOST_REQUIRE(t.size() == 5u);
  using kind = coral::exception_step::kind;
  // Out of level3, in the child task on `other`; the child ends with it and goes to the root task.
  BOOST_TEST((t[0].what == kind::came_out_of_co_await && at(t[0], line_level2)));
  BOOST_TEST((t[1].what == kind::ended_task && t[1].task_id == t[0].task_id));
  const auto root_id = t[1].awaited_by;
  BOOST_TEST(root_id != 0u);
  // In the root task: out of level1's co_await of the child, then out of the root's of level1.
  for (std::size_t i = 2; i < 5; ++i) {
    BOOST_TEST(t[i].task_id == root_id);
    BOOST_TEST(t[i].task_name == "root");
  }
  BOOST_TEST((t[2].what == kind::came_out_of_co_await && at(t[2], line_level1)));
  BOOST_TEST((t[3].what == kind::came_out_of_co_await && at(t[3], line_root)));
  BOOST_TEST((t[4].what == kind::ended_task && t[4].awaited_by == 0u));
  BOOST_TEST(t[4].location.rfind(location(line_spawn), 0) == 0);
  // The text form: one line per step.
  const auto text = coral::to_string(t);
  BOOST_TEST(std::count(text.begin(), text.end(), '\n') == static_cast<long>(t.size()));
  BOOST_TEST(text.find("task " + std::to_string(root_id) + " \"root\": ended the task, spawned at " +
                       location(line_spawn)) != std::string::npos);
  BOOST_TEST(coral::tracked_task_count() == 0u);
}
BOOST_AUTO_TEST_CASE_TEMPLATE(the_exception_hook_sees_each_coroutine_an_exception_leaves_until_it_is_caught, Place,
                              places) {
  tracking_on tracking;
  struct call {
    std::string what;
    std::size_t steps;
  };
  std::mutex mutex;
  std::vector<call> calls;
  coral::set_exception_hook([&](const std::exception_ptr& e, const coral::exception_trace& trace) {
    std::string what;
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      what = ex.what();
    }
    std::lock_guard lock(mutex);
    calls.push_back({what, trace.size()});
  });
  struct remove_hook {
    ~remove_hook() { coral::set_exception_hook({}); }
  } removing;
  Place place;
  coral::event_loop other;
  auto inner = [&]() -> coral::task<int> {
    co_await coral::yield();
    throw std::runtime_error("inner failed");
  };
  auto middle = [&]() -> coral::task<int> { co_return co_await inner(); };
  auto catcher = [&]() -> coral::task<int> {
    try {
      co_await coral::on(other.get_executor(), middle());
    } catch (const std::runtime_error&) {
      co_return 7;  // caught: the exception goes no further
    }
    co_return 0;
  };
  BOOST_TEST(get_within(coral::spawn(place.get_executor(), catcher)) == 7);
  std::lock_guard lock(mutex);
  // inner leaves (1 step), then middle, which ends the child task (2 steps); nothing after.
  BOOST_REQUIRE(calls.size() == 2u);
  BOOST_TEST(calls[0].what == "inner failed");
  BOOST_TEST(calls[0].steps == 1u);
  BOOST_TEST(calls[1].steps == 2u);
}

BOOST_AUTO_TEST_CASE(a_task_group_member_that_fails_unjoined_is_reported_with_where_it_was_spawned) {
  tracking_on tracking;
  catching_reports reports;
  coral::event_loop loop;
  int line_spawn = 0;
  {
    coral::task_group group(loop.get_executor());
    line_spawn = __LINE__ + 1;
    group.spawn([]() -> coral::task<> {
      co_await coral::yield();
      throw std::runtime_error("member failed");
    });
    // (Destroyed unjoined once the member has failed: the group reports the failure.)
    const auto give_up = std::chrono::steady_clock::now() + patience;
    while (group.size() != 0 && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
  }
  const auto r = reports.next();
  BOOST_TEST(r.what == "member failed");
  BOOST_REQUIRE(r.trace.size() == 1u);
  BOOST_TEST((r.trace[0].what == coral::exception_step::kind::ended_task));
  BOOST_TEST(r.trace[0].location.rfind(location(line_spawn), 0) == 0);
}

// An exception that counts its live copies of a payload.
struct counted_failure : std::runtime_error {
  static inline std::atomic<int> alive{0};
  counted_failure() : std::runtime_error("counted failure") { ++alive; }
  counted_failure(const counted_failure& other) : std::runtime_error(other) { ++alive; }
  ~counted_failure() override { --alive; }
};

BOOST_AUTO_TEST_CASE_TEMPLATE(caught_exceptions_and_their_traces_are_gone_once_their_tasks_have_ended, Place, places) {
  tracking_on tracking;
  {
    Place place;
    auto failing = []() -> coral::task<int> {
      co_await coral::yield();
      throw counted_failure();
    };
    std::vector<coral::job<int>> jobs;
    for (int i = 0; i < 50; ++i) {
      // Catches its child's exception and ends without another co_await.
      jobs.push_back(coral::spawn(place.get_executor(), [&]() -> coral::task<int> {
        try {
          co_return co_await failing();
        } catch (const counted_failure&) {
          co_return 1;
        }
      }));
    }
    for (auto& j : jobs) BOOST_TEST(get_within(j) == 1);
  }  // (the place's threads end here)
  BOOST_TEST(counted_failure::alive.load() == 0);
}

BOOST_AUTO_TEST_CASE(a_rethrown_exception_keeps_its_trace_through_a_catch_block_that_runs_tasks) {
  tracking_on tracking;
  catching_reports reports;
  coral::event_loop loop;
  int line_child = 0;
  auto child = []() -> coral::task<> {
    co_await coral::yield();
    throw std::runtime_error("child failed");
  };
  // Runs on the catching thread, inside the catch block: awaits, and fails and is handled too.
  auto side_task = []() -> coral::task<> {
    co_await coral::this_task::set_name("side");
    throw std::logic_error("side failed");
  };
  coral::spawn(loop.get_executor(), [&]() -> coral::task<> {
    try {
      line_child = __LINE__ + 1;
      co_await child();
    } catch (const std::runtime_error&) {
      auto side = coral::spawn(coral::inline_executor{}, side_task());
      BOOST_CHECK_THROW(side.get_result(), std::logic_error);
      throw;
    }
  });
  const auto r = reports.next();
  BOOST_TEST(r.what == "child failed");
  BOOST_TEST_INFO("the trace:\n" << coral::to_string(r.trace));
  BOOST_REQUIRE(r.trace.size() == 2u);
  BOOST_TEST(at(r.trace[0], line_child));
  BOOST_TEST((r.trace[1].what == coral::exception_step::kind::ended_task));
}

BOOST_AUTO_TEST_CASE(a_name_cannot_add_a_line_to_a_dump_or_break_its_json) {
  tracking_on tracking;
  coral::event_loop loop;
  coral::event release;
  auto job = coral::spawn(loop.get_executor(), [&]() -> coral::task<> {
    co_await coral::this_task::set_name("odd \xff\xfe\xc3 name\ntask 999: suspended");
    co_await release.wait();
  });
  const auto t = suspended_named("odd ??? name?task 999: suspended", "event wait");
  BOOST_TEST(t.at("name").as_string() == "odd ??? name?task 999: suspended");
  std::ostringstream text;
  coral::dump_tasks(text);
  BOOST_TEST(text.str().find("\ntask 999") == std::string::npos);
  release.set();
  get_within(job);
}

BOOST_AUTO_TEST_CASE(a_name_keeps_well_formed_utf8_and_each_byte_of_an_ill_formed_sequence_becomes_a_question_mark) {
  tracking_on tracking;
  coral::event_loop loop;
  coral::event release;
  // Each name as set, and as the dumps show it.
  const std::vector<std::pair<std::string, std::string>> names = {
      {"overlong NUL \xc0\x80", "overlong NUL ??"},
      {"overlong C1 \xc1\xbf", "overlong C1 ??"},
      {"overlong slash \xe0\x80\xaf", "overlong slash ???"},
      {"overlong four \xf0\x80\x80\xaf", "overlong four ????"},
      {"surrogate \xed\xa0\x80", "surrogate ???"},
      {"past U+10FFFF \xf4\x90\x80\x80", "past U+10FFFF ????"},
      {"lead F5 \xf5\x80\x80\x80", "lead F5 ????"},
      {"lead F7 \xf7\xbf\xbf\xbf", "lead F7 ????"},
      {"lead F8 \xf8\x88\x80\x80\x80", "lead F8 ?????"},
      {"lead FF \xff", "lead FF ?"},
      {"cut short \xe2\x82 end", "cut short ?? end"},
      {"U+00E9 \xc3\xa9", "U+00E9 \xc3\xa9"},
      {"U+20AC \xe2\x82\xac", "U+20AC \xe2\x82\xac"},
      {"U+1F600 \xf0\x9f\x98\x80", "U+1F600 \xf0\x9f\x98\x80"},
      {"U+10FFFF \xf4\x8f\xbf\xbf", "U+10FFFF \xf4\x8f\xbf\xbf"},
      {"U+D7FF \xed\x9f\xbf", "U+D7FF \xed\x9f\xbf"},
      {"U+E000 \xee\x80\x80", "U+E000 \xee\x80\x80"},
  };
  std::vector<coral::job<void>> jobs;
  for (const auto& name_and_shown : names) {
    // (A copy, not the structured binding: clang 14 cannot capture one.)
    jobs.push_back(coral::spawn(loop.get_executor(), [&, name = name_and_shown.first]() -> coral::task<> {
      co_await coral::this_task::set_name(name);
      co_await release.wait();
    }));
  }
  // (suspended_named parses each JSON dump with Boost.JSON, which rejects ill-formed UTF-8.)
  for (const auto& [name, shown] : names) suspended_named(shown, "event wait");
  const auto tasks = tasks_now();
  std::ostringstream text;
  coral::dump_tasks(text);
  for (const auto& [name, shown] : names) {
    BOOST_TEST_INFO("the name shown: " << shown);
    const auto* t = find_named(tasks, shown);
    BOOST_REQUIRE(t);
    BOOST_TEST(t->at("name").as_string() == shown);
    BOOST_TEST(text.str().find('"' + shown + "\":") != std::string::npos);
  }
  release.set();
  for (auto& j : jobs) get_within(j);
}

BOOST_AUTO_TEST_CASE(the_failure_of_a_task_started_while_tracking_is_off_has_no_trace) {
  catching_reports reports;
  coral::event_loop loop;
  coral::spawn(loop.get_executor(), []() -> coral::task<> {
    co_await coral::yield();
    throw std::runtime_error("untracked failure");
  });
  const auto r = reports.next();
  BOOST_TEST(r.what == "untracked failure");
  BOOST_TEST(r.trace.empty());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(registry)

BOOST_AUTO_TEST_CASE(tasks_that_ended_are_not_listed_and_a_million_tasks_leave_the_registry_as_it_was) {
  tracking_on tracking;
  const long total = workload_size("CORAL_TRACKING_TASKS", 1'000'000);
  asio::io_context io(1);
  std::size_t most = 0;
  long done = 0;
  constexpr long batch = 10'000;
  for (long spawned = 0; spawned < total; spawned += batch) {
    for (long i = 0; i < batch; ++i) {
      coral::spawn(io, [&]() -> coral::task<> {
        co_await coral::yield();
        ++done;
      });
    }
    most = std::max(most, coral::tracked_task_count());
    io.run();
    io.restart();
    BOOST_REQUIRE(coral::tracked_task_count() == 0u);
  }
  BOOST_TEST(done == total);
  BOOST_TEST(most == static_cast<std::size_t>(batch));
  BOOST_TEST(tasks_now().empty());
}

BOOST_AUTO_TEST_CASE(a_dump_lists_at_most_its_limit_and_always_says_how_many_there_are) {
  tracking_on tracking;
  coral::event_loop loop;
  coral::event release;
  std::vector<coral::job<void>> jobs;
  for (int i = 0; i < 10; ++i) {
    jobs.push_back(coral::spawn(loop.get_executor(), [&, i]() -> coral::task<> {
      co_await coral::this_task::set_name("waiter " + std::to_string(i));
      co_await release.wait();
    }));
    suspended_named("waiter " + std::to_string(i), "event wait");  // (each longer in its state than the next)
  }
  auto occurrences = [](const std::string& text, const std::string& part) {
    int n = 0;
    for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
    return n;
  };
  std::ostringstream three;
  coral::dump_tasks(three, 3);
  BOOST_TEST(three.str().starts_with("coral: 10 tasks, the first 3 listed\n"), three.str());
  BOOST_TEST(occurrences(three.str(), "\ntask ") == 3, three.str());
  for (int i = 0; i < 10; ++i) {  // the first in the dump's order: the longest in their state
    const bool listed = three.str().find("\"waiter " + std::to_string(i) + "\"") != std::string::npos;
    BOOST_TEST(listed == (i < 3), i << three.str());
  }
  std::ostringstream all, enough;
  coral::dump_tasks(all);
  coral::dump_tasks(enough, 10);
  BOOST_TEST(all.str().starts_with("coral: 10 tasks\n"), all.str());
  BOOST_TEST(occurrences(all.str(), "\ntask ") == 10, all.str());
  BOOST_TEST(occurrences(enough.str(), "\ntask ") == 10, enough.str());
  for (const std::size_t limit : {std::size_t{0}, std::size_t{3}, coral::all_tasks}) {
    std::ostringstream out;
    coral::dump_tasks_json(out, limit);
    const auto dump = json::parse(out.str()).as_object();
    BOOST_TEST(dump.at("total").as_int64() == 10);
    BOOST_TEST(dump.at("tasks").as_array().size() == std::min<std::size_t>(limit, 10));
  }
  release.set();
  for (auto& j : jobs) get_within(j);
}

BOOST_AUTO_TEST_CASE(a_task_started_while_tracking_is_off_is_not_listed) {
  coral::event_loop loop;
  coral::event release;
  auto untracked = coral::spawn(loop.get_executor(), [&]() -> coral::task<> {
    co_await coral::this_task::set_name("untracked");  // (does nothing)
    co_await release.wait();
  });
  tracking_on tracking;
  auto tracked = coral::spawn(loop.get_executor(), [&]() -> coral::task<> {
    co_await coral::this_task::set_name("tracked");
    co_await release.wait();
  });
  suspended_named("tracked", "event wait");
  BOOST_TEST(!find_named(tasks_now(), "untracked"));
  BOOST_TEST(coral::tracked_task_count() == 1u);
  release.set();
  get_within(untracked);
  get_within(tracked);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(dumps_from_other_threads_while_tasks_run_see_only_live_tasks, Place, places) {
  tracking_on tracking;
  Place place;
  auto ex = place.get_executor();
  const long rounds = workload_size("CORAL_TRACKING_ROUNDS", 2'000);
  coral::channel<int> ch(4);
  std::atomic<bool> over{false};
  std::atomic<long> dumps{0};
  // Dumping threads: every dump parses, and lists only tasks that exist.
  auto dumper = [&] {
    while (!over.load()) {
      std::ostringstream text;
      coral::dump_tasks(text);
      for (const auto& t : tasks_now()) {
        const auto state = t.as_object().at("state").as_string();
        if (state != "queued" && state != "running" && state != "suspended") throw std::runtime_error("bad state");
      }
      ++dumps;
    }
  };
  std::thread d1(dumper), d2(dumper);
  auto producer = coral::spawn(ex, [&]() -> coral::task<> {
    for (long i = 0; i < rounds; ++i) {
      co_await coral::when_all(ch.send(static_cast<int>(i)), coral::sleep_for(std::chrono::microseconds(0)));
      if (i % 16 == 0) co_await coral::sleep_for(std::chrono::microseconds(50));
    }
    ch.close();
  });
  auto consumer = coral::spawn(ex, [&]() -> coral::task<long> {
    long sum = 0;
    while (auto v = co_await ch.next()) {
      sum += *v;
      co_await coral::on(coral::pool_executor{}, [](int x) -> coral::task<int> {
        co_await coral::yield();
        co_return x;
      }(*v));
    }
    co_return sum;
  });
  get_within(producer, workload_patience);
  BOOST_TEST(get_within(consumer, workload_patience) == rounds * (rounds - 1) / 2);
  over = true;
  d1.join();
  d2.join();
  BOOST_TEST(dumps.load() > 0);
  BOOST_TEST(coral::tracked_task_count() == 0u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(stall_detector)

// The stall detector on, at 20 ms, collecting its reports.
struct stall_reports {
  std::mutex mutex;
  std::vector<coral::stall_report> reports;
  stall_reports() {
    coral::set_stall_detector(std::chrono::milliseconds(20), [this](const coral::stall_report& r) {
      std::lock_guard lock(mutex);
      reports.push_back(r);
    });
  }
  std::vector<coral::stall_report> made() {
    std::lock_guard lock(mutex);
    return reports;
  }
};

// Keeps the thread busy (a task that does not suspend, a handler that blocks).
void spin_for(std::chrono::milliseconds d) {
  const auto until = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < until) {
  }
}

BOOST_AUTO_TEST_CASE(a_task_that_busy_loops_is_reported_once_and_one_that_sleeps_is_not) {
  tracking_on tracking;
  stall_reports stalls;
  coral::event_loop loop, sleepers;
  noted_line line_busy_end{0};
  auto busy = coral::spawn(loop.get_executor(), [&]() -> coral::task<> {
    co_await coral::this_task::set_name("busy");
    co_await coral::yield();
    for (int round = 0; round < 2; ++round) {
      spin_for(std::chrono::milliseconds(50));
      line_busy_end = __LINE__ + 1;
      co_await coral::yield();
    }
  });
  // Queued behind the busy task on the same thread: it waits in the queue.
  auto queued = coral::spawn(loop.get_executor(), [&]() -> coral::task<> {
    co_await coral::this_task::set_name("queued");
    co_await coral::yield();
  });
  auto sleeper = coral::spawn(sleepers.get_executor(), [&]() -> coral::task<> {
    co_await coral::this_task::set_name("sleeper");
    co_await coral::sleep_for(std::chrono::milliseconds(100));
  });
  get_within(busy);
  get_within(queued);
  get_within(sleeper);
  const auto reports = stalls.made();
  int ran = 0, waited = 0;
  // (A loaded machine may hold any task up in a queue, the sleeper's timer too: only the queued
  // task's wait is this test's.)
  for (const auto& r : reports) {
    if (r.what == coral::stall_report::kind::ran_too_long) {
      ++ran;
      BOOST_TEST(r.task_name == "busy");
      BOOST_TEST(r.duration >= std::chrono::milliseconds(50));
      BOOST_TEST(r.to.find(location(line_busy_end)) == 0);
      BOOST_TEST(r.executor.find("io_context") == 0);
      BOOST_TEST(coral::to_string(r).find("ran ") != std::string::npos);
    } else if (r.task_name == "queued") {
      ++waited;
      BOOST_TEST(r.duration >= std::chrono::milliseconds(20));
      // The busy task, which yielded meanwhile, is queued behind it on the same loop.
      BOOST_TEST(r.also_queued.size() == 1u);
      BOOST_TEST(r.also_queued != std::vector<std::uint64_t>{r.task_id});
      BOOST_TEST(coral::to_string(r).find("; queued there too: task ") != std::string::npos);
    }
  }
  BOOST_TEST(ran == 1);  // once, though it blocked twice
  BOOST_TEST(waited == 1);
}

BOOST_AUTO_TEST_CASE(a_sleep_held_up_past_its_deadline_by_a_blocking_handler_is_reported_as_queued) {
  tracking_on tracking;
  stall_reports stalls;
  asio::io_context io(1);
  auto sleeper = coral::spawn(io, []() -> coral::task<> {
    co_await coral::this_task::set_name("late sleeper");
    co_await coral::sleep_for(std::chrono::milliseconds(5));
  });
  // A plain Asio handler that keeps the thread 60 ms, once the sleeper sleeps.
  asio::post(io, [] { spin_for(std::chrono::milliseconds(60)); });
  io.run();
  get_within(sleeper);
  const auto reports = stalls.made();
  int late = 0;
  for (const auto& r : reports) {
    if (r.task_name == "late sleeper" && r.what == coral::stall_report::kind::queued_too_long) {
      ++late;
      BOOST_TEST(r.duration >= std::chrono::milliseconds(20));
    }
  }
  BOOST_TEST(late == 1);
}

BOOST_AUTO_TEST_CASE(a_stall_report_runs_outside_coral_locks_and_may_use_what_the_task_waits_on) {
  tracking_on tracking;
  coral::event_loop loop;
  coral::event release;
  std::optional<coral::task_group> group;
  group.emplace(loop.get_executor());
  std::atomic<int> reported{0};
  // The report asks the group the task is joining (it would deadlock under the group's lock).
  coral::set_stall_detector(std::chrono::milliseconds(20), [&](const coral::stall_report&) {
    static_cast<void>(group->size());
    ++reported;
  });
  auto root = coral::spawn(loop.get_executor(), [&]() -> coral::task<> {
    group->spawn([&]() -> coral::task<> { co_await release.wait(); });
    spin_for(std::chrono::milliseconds(50));
    co_await group->join();  // suspends (the member waits): the run that ends here was too long
  });
  const auto give_up = std::chrono::steady_clock::now() + patience;
  while (reported.load() == 0 && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
  BOOST_TEST(reported.load() >= 1);
  release.set();
  get_within(root);
}

BOOST_AUTO_TEST_SUITE_END()
