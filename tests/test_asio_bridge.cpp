#define BOOST_TEST_MODULE coral use_task and asio::awaitable interop
#include <boost/asio/append.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/as_single.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/prepend.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/asio/write.hpp>
#include <boost/test/unit_test.hpp>
#include <random>
#include <string>

#include "test_support.hpp"

using namespace coral_test;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

BOOST_AUTO_TEST_SUITE(use_task)

BOOST_AUTO_TEST_CASE(use_task_awaits_timers_and_throws_their_errors) {
  coral::event_loop loop;
  auto t = [&]() -> coral::task<std::string> {
    asio::steady_timer timer(co_await coral::this_task::executor, 5ms);
    co_await timer.async_wait(coral::use_task);
    bool on_loop = std::this_thread::get_id() == loop.thread_id();
    timer.expires_after(1h);
    asio::post(loop.get_executor(), [&] { timer.cancel(); });
    try {
      co_await timer.async_wait(coral::use_task);
    } catch (const boost::system::system_error& e) {
      co_return std::string(on_loop ? "on loop, " : "elsewhere, ") +
          (e.code() == asio::error::operation_aborted ? "aborted" : "?");
    }
    co_return "not aborted";
  };
  BOOST_TEST(get_within(coral::spawn(loop.get_executor(), t())) == "on loop, aborted");
}

BOOST_AUTO_TEST_CASE(as_tuple_use_task_returns_errors_instead_of_throwing) {
  auto t = []() -> coral::task<bool> {
    asio::steady_timer timer(co_await coral::this_task::executor, 1h);
    timer.cancel();
    asio::post(co_await coral::this_task::executor, [&] { timer.cancel(); });
    auto [error] = co_await timer.async_wait(asio::as_tuple(coral::use_task));
    co_return error == asio::error::operation_aborted;
  };
  BOOST_TEST(coral::sync_wait(t()));
}

BOOST_AUTO_TEST_CASE(use_task_as_default_completion_token) {
  auto t = []() -> coral::task<bool> {
    coral::use_task_t::as_default_on_t<asio::steady_timer> timer(co_await coral::this_task::executor, 1ms);
    co_await timer.async_wait();
    auto other = coral::use_task_t::as_default_on(asio::steady_timer(co_await coral::this_task::executor, 1ms));
    co_await other.async_wait();
    co_return true;
  };
  BOOST_TEST(coral::sync_wait(t()));
}

BOOST_AUTO_TEST_CASE(every_token_adapter_asio_users_combine_with_use_awaitable_works_with_use_task) {
  coral::event_loop loop;
  auto j = coral::spawn(loop, [&loop]() -> coral::task<std::string> {
    const auto ex = co_await coral::this_task::executor;
    std::string log;
    asio::steady_timer timer(ex, 1h);
    // redirect_error: the error lands in `ec` instead of being thrown.
    boost::system::error_code ec;
    timer.expires_after(1ms);
    co_await timer.async_wait(asio::redirect_error(coral::use_task, ec));
    log += ec ? "redirect:" + ec.message() : "redirect:ok";
    timer.expires_after(1h);
    asio::post(ex, [&timer] { timer.cancel(); });
    co_await timer.async_wait(asio::redirect_error(coral::use_task, ec));
    log += ec == asio::error::operation_aborted ? " redirect:aborted" : " redirect:?";
    // as_single: several arguments become one tuple, and an error is not thrown.
    tcp::acceptor acceptor(ex, {asio::ip::make_address("127.0.0.1"), 0});
    tcp::socket client(ex);
    co_await client.async_connect(acceptor.local_endpoint(), asio::experimental::as_single(coral::use_task));
    auto server = co_await acceptor.async_accept(coral::use_task);
    co_await asio::async_write(client, asio::buffer("ab", 2), coral::use_task);
    char data[2];
    auto [read_error, n] =
        co_await server.async_read_some(asio::buffer(data), asio::experimental::as_single(coral::use_task));
    log += " single:" + std::to_string(n) + (read_error ? "!" : "");
    // bind_cancellation_slot: the caller's signal cancels the operation.
    asio::cancellation_signal signal;
    timer.expires_after(1h);
    asio::post(ex, [&signal] { signal.emit(asio::cancellation_type::terminal); });
    auto [slot_error] =
        co_await timer.async_wait(asio::bind_cancellation_slot(signal.slot(), asio::as_tuple(coral::use_task)));
    log += slot_error == asio::error::operation_aborted ? " slot:aborted" : " slot:?";
    try {
      timer.expires_after(1h);
      asio::post(ex, [&signal] { signal.emit(asio::cancellation_type::terminal); });
      co_await timer.async_wait(asio::bind_cancellation_slot(signal.slot(), coral::use_task));
    } catch (const boost::system::system_error& e) {
      log += e.code() == asio::error::operation_aborted ? " slot-throws:aborted" : " slot-throws:?";
    }
    // prepend, append, bind_executor, the handler-tracking constructor.
    timer.expires_after(1ms);
    auto [x, e1] = co_await timer.async_wait(asio::prepend(asio::as_tuple(coral::use_task), 7));
    timer.expires_after(1ms);
    auto [e2, y] = co_await timer.async_wait(asio::append(asio::as_tuple(coral::use_task), 8));
    timer.expires_after(1ms);
    co_await timer.async_wait(asio::bind_executor(ex, coral::use_task));
    timer.expires_after(1ms);
    co_await timer.async_wait(coral::use_task_t(__FILE__, __LINE__, __func__));
    const bool on_loop = std::this_thread::get_id() == loop.thread_id();
    log += " " + std::to_string(x) + std::to_string(y) + (e1 || e2 ? "!" : "") + (on_loop ? " loop" : " elsewhere");
    co_return log;
  });
  BOOST_TEST(get_within(std::move(j)) ==
             "redirect:ok redirect:aborted single:2 slot:aborted slot-throws:aborted 78 loop");
}

BOOST_AUTO_TEST_CASE(deferred_operations_are_awaited_in_a_task) {
  coral::event_loop loop;
  auto j = coral::spawn(loop, []() -> coral::task<int> {
    asio::steady_timer timer(co_await coral::this_task::executor, 1ms);
    co_await timer.async_wait(asio::deferred);
    // A composed deferred operation: a wait, then a value computed from its outcome.
    timer.expires_after(1ms);
    auto composed = timer.async_wait(
        asio::deferred([](boost::system::error_code e) { return asio::deferred.values(e ? -1 : 42); }));
    co_return co_await std::move(composed);
  });
  BOOST_TEST(get_within(std::move(j)) == 42);
}

BOOST_AUTO_TEST_CASE(sockets_over_loopback_resume_on_the_tasks_executor) {
  coral::event_loop server_loop, client_loop;
  tcp::acceptor acceptor(server_loop.get_executor(), {asio::ip::make_address("127.0.0.1"), 0});
  auto port = acceptor.local_endpoint().port();
  auto server = [&]() -> coral::task<int> {
    auto socket = co_await acceptor.async_accept(coral::use_task);
    int on_loop = std::this_thread::get_id() == server_loop.thread_id();
    char data[5];
    co_await asio::async_read(socket, asio::buffer(data), coral::use_task);
    on_loop += std::this_thread::get_id() == server_loop.thread_id();
    co_await asio::async_write(socket, asio::buffer(data), coral::use_task);
    co_return on_loop;
  };
  auto client = [&]() -> coral::task<std::string> {
    tcp::socket socket(co_await coral::this_task::executor);
    co_await socket.async_connect({asio::ip::make_address("127.0.0.1"), port}, coral::use_task);
    co_await asio::async_write(socket, asio::buffer("hello", 5), coral::use_task);
    std::string reply(5, '\0');
    std::size_t n = co_await asio::async_read(socket, asio::buffer(reply), coral::use_task);
    if (std::this_thread::get_id() != client_loop.thread_id()) co_return "wrong thread";
    co_return reply.substr(0, n);
  };
  auto s = coral::spawn(server_loop.get_executor(), server());
  auto c = coral::spawn(client_loop.get_executor(), client());
  BOOST_TEST(get_within(c) == "hello");
  BOOST_TEST(get_within(s) == 2);
}

BOOST_AUTO_TEST_CASE(cancelling_a_job_cancels_the_socket_read_it_waits_on) {
  coral::event_loop loop;
  tcp::acceptor acceptor(loop.get_executor(), {asio::ip::make_address("127.0.0.1"), 0});
  tcp::socket peer(loop.get_executor());
  std::promise<void> reading;
  auto j = coral::spawn(loop.get_executor(), [&]() -> coral::task<> {
    tcp::socket socket(loop.get_executor());
    co_await socket.async_connect(acceptor.local_endpoint(), coral::use_task);
    char byte;
    reading.set_value();
    co_await socket.async_read_some(asio::buffer(&byte, 1), coral::use_task);  // nothing is ever sent
  });
  acceptor.accept(peer);
  reading.get_future().wait();
  j.cancel();
  BOOST_TEST(failure_of(j) == asio::error::operation_aborted);
}

BOOST_AUTO_TEST_CASE(use_task_awaits_an_asio_awaitable_via_co_spawn) {
  auto t = []() -> coral::task<int> {
    auto ex = co_await coral::this_task::executor;
    co_return co_await asio::co_spawn(
        ex, []() -> asio::awaitable<int> { co_return 9; }, coral::use_task);
  };
  BOOST_TEST(coral::sync_wait(t()) == 9);
}

namespace {

// A value whose moved-from shell takes a while to go, as one that frees a buffer or logs would.
struct slow_to_go : lifetime {
  int id = -1;
  slow_to_go() = default;  // (async_receive passes one with an error)
  explicit slow_to_go(int i) : id(i) {}
  slow_to_go(slow_to_go&& other) noexcept : lifetime(other), id(std::exchange(other.id, -1)) {}
  slow_to_go& operator=(slow_to_go&&) = delete;
  ~slow_to_go() {
    if (id == -1) std::this_thread::sleep_for(std::chrono::microseconds(100));  // widens the window
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(what_an_operation_hands_over_is_gone_before_the_job_reports_done) {
  // The operation destroys the values it passed (moved-from shells, Asio's tuple for as_tuple)
  // after the handler returns: the task must not end inside that call.
  running_io_context two_threads(2);
  asio::thread_pool pool(2);
  auto check = [](auto ex, const char* kind, bool as_tuple) {
    BOOST_TEST_CONTEXT("executor: " << kind << (as_tuple ? ", as_tuple(use_task)" : ", use_task")) {
      for (int i = 0; i < 100; ++i) {
        coral::channel<slow_to_go> ch(1);
        auto j = coral::spawn(ex, [&]() -> coral::task<int> {
          if (as_tuple) {
            auto [e, v] = co_await ch.async_receive(asio::as_tuple(coral::use_task));
            co_return v.id;
          }
          slow_to_go v = co_await ch.async_receive(coral::use_task);
          co_return v.id;
        });
        BOOST_TEST_REQUIRE(ch.try_send(slow_to_go(i)));
        BOOST_TEST_REQUIRE(get_within(j) == i);
        BOOST_TEST_REQUIRE(lifetime::alive == 0);
      }
    }
  };
  for (bool as_tuple : {false, true}) {
    check(two_threads.get_executor(), "io_context, 2 threads", as_tuple);
    check(pool.get_executor(), "thread_pool", as_tuple);
    check(asio::make_strand(pool), "strand on a thread_pool", as_tuple);
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(awaitable_interop)

namespace {

asio::awaitable<int> legacy_value(int v) {
  asio::steady_timer timer(co_await asio::this_coro::executor, 1ms);
  co_await timer.async_wait(asio::use_awaitable);
  co_return v;
}
asio::awaitable<int> legacy_failure() {
  co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
  throw std::runtime_error("legacy failed");
}
asio::awaitable<void> legacy_sleeper(std::shared_ptr<std::promise<void>> started) {
  asio::steady_timer timer(co_await asio::this_coro::executor, 1h);
  started->set_value();
  co_await timer.async_wait(asio::use_awaitable);
}

coral::task<int> coral_value(int v) {
  co_await coral::sleep_for(1ms);
  co_return v;
}
coral::task<int, coral::pool_executor> coral_on_pool(int v) {
  co_return v;
}
coral::task<> coral_void() {
  co_await coral::sleep_for(1ms);
}
coral::task<> coral_failure() {
  co_await coral::yield();
  throw std::runtime_error("coral failed");
}
coral::task<int> coral_value_failure() {
  co_await coral::yield();
  throw std::runtime_error("coral value failed");
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_task_awaits_an_asio_awaitable_directly) {
  coral::event_loop loop;
  auto j = coral::spawn(loop, [&loop]() -> coral::task<std::string> {
    const int v = co_await legacy_value(5);
    std::string log = std::to_string(v) + (std::this_thread::get_id() == loop.thread_id() ? " loop" : " elsewhere");
    try {
      co_await legacy_failure();
    } catch (const std::runtime_error& e) {
      log += std::string(" ") + e.what();
    }
    co_return log;
  });
  BOOST_TEST(get_within(std::move(j)) == "5 loop legacy failed");
}

BOOST_AUTO_TEST_CASE(cancelling_a_task_reaches_the_asio_awaitable_it_awaits) {
  coral::event_loop loop;
  auto started = std::make_shared<std::promise<void>>();
  auto j = coral::spawn(loop, [started]() -> coral::task<> { co_await legacy_sleeper(started); });
  BOOST_REQUIRE(started->get_future().wait_for(patience) == std::future_status::ready);
  j.cancel();
  BOOST_TEST((failure_of(j) == asio::error::operation_aborted));
}

namespace {

// Awaitables of every shape a server's helpers have: ready at once, waiting on their executor,
// void, move-only, failing after a wait, asking for their executor.
asio::awaitable<int> ready_value(int v) {
  co_return v;
}
asio::awaitable<int> posted_value(int v) {
  co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
  co_return v;
}
asio::awaitable<void> ready_void() {
  co_return;
}
asio::awaitable<std::unique_ptr<lifetime>> owned_payload() {
  co_return std::make_unique<lifetime>();
}
asio::awaitable<int> failing_after_post() {
  co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
  throw std::runtime_error("late failure");
}
asio::awaitable<asio::any_io_executor> executor_seen() {
  co_return co_await asio::this_coro::executor;
}

// Whether this thread runs `ex` now, where the executor can tell (io_context, thread_pool and
// their strands); true for the others.
bool running_in(const asio::any_io_executor& ex) {
  using io = asio::io_context::executor_type;
  using pool = asio::thread_pool::executor_type;
  if (auto* e = ex.target<io>()) return e->running_in_this_thread();
  if (auto* e = ex.target<pool>()) return e->running_in_this_thread();
  if (auto* e = ex.target<asio::strand<io>>()) return e->running_in_this_thread();
  if (auto* e = ex.target<asio::strand<pool>>()) return e->running_in_this_thread();
  if (auto* e = ex.target<asio::strand<asio::any_io_executor>>()) return e->running_in_this_thread();
  return true;
}

// Each await of the round, checked: the sum of the indexes whose await behaved, and how many
// times the task found itself off its executor after one.
coral::task<std::pair<long, int>> await_every_shape(int rounds) {
  const asio::any_io_executor own = co_await coral::this_task::executor;
  long sum = 0;
  int off_executor = 0;
  for (int i = 0; i < rounds; ++i) {
    switch (i % 6) {
      case 0:
        sum += co_await ready_value(i);
        break;
      case 1:
        sum += co_await posted_value(i);
        break;
      case 2:
        co_await ready_void();
        sum += i;
        break;
      case 3:
        if (auto p = co_await owned_payload(); p && lifetime::alive >= 1) sum += i;
        break;
      case 4:
        try {
          co_await failing_after_post();
        } catch (const std::runtime_error& e) {
          if (std::string(e.what()) == "late failure") sum += i;
        }
        break;
      default:
        if (co_await executor_seen() == own) sum += i;
    }
    if (!running_in(own)) ++off_executor;
  }
  co_return std::pair{sum, off_executor};
}

// An operation that completes only when it is cancelled: with operation_aborted, through its
// handler's executor. Without a cancellation slot it never completes (its handler goes at once).
template <class Token>
auto async_wait_for_cancellation(Token&& token) {
  return asio::async_initiate<Token, void(boost::system::error_code)>(
      [](auto handler) {
        auto slot = asio::get_associated_cancellation_slot(handler);
        if (!slot.is_connected()) return;
        slot.assign([h = std::move(handler)](asio::cancellation_type) mutable {
          auto ex = asio::get_associated_executor(h);
          asio::post(ex, [h = std::move(h)]() mutable {
            std::move(h)(boost::system::error_code(asio::error::operation_aborted));
          });
        });
      },
      token);
}

asio::awaitable<int> waiting_until_cancelled(std::shared_ptr<std::promise<void>> started) {
  lifetime held;
  started->set_value();
  co_await async_wait_for_cancellation(asio::use_awaitable);
  co_return 1;
}

}  // namespace

CORAL_TEST_CASE_ON_EACH_PLACE(a_task_awaits_asio_awaitables_of_every_shape_and_stays_on_its_executor, every_place) {
  auto j = coral::spawn(place.get_executor(), await_every_shape(300));
  const auto [sum, off_executor] = get_within(std::move(j));
  BOOST_TEST(sum == 299L * 300 / 2);
  BOOST_TEST(off_executor == 0);
  BOOST_TEST(lifetime::alive == 0);
}

// Spawned with a token that cannot cancel, a task on a multi-threaded executor runs without a
// strand: the awaitable's end and the task's suspension race on different threads.
CORAL_TEST_CASE_ON_EACH_PLACE(a_task_nothing_can_cancel_awaits_asio_awaitables_on_any_thread, every_place) {
  for (int round = 0; round < 8; ++round) {
    auto f = coral::spawn(place.get_executor(), await_every_shape(120), asio::use_future);
    BOOST_REQUIRE(f.wait_for(patience) == std::future_status::ready);
    const auto [sum, off_executor] = f.get();
    BOOST_TEST(sum == 119L * 120 / 2);
    BOOST_TEST(off_executor == 0);
  }
  BOOST_TEST(lifetime::alive == 0);
}

// An awaitable may move itself to another executor (bind_executor) and end there, on another
// thread, racing the task's own suspension; the task still resumes on its executor.
CORAL_TEST_CASE_ON_EACH_PLACE(an_asio_awaitable_that_ends_on_another_executor_resumes_the_task_on_its_own,
                              every_place) {
  asio::thread_pool elsewhere(2);
  // Counts the awaits that did not start on the task's executor.
  auto hop_and_return = [](asio::thread_pool::executor_type to, int v, int& off) -> asio::awaitable<int> {
    if (!running_in(co_await asio::this_coro::executor)) ++off;
    co_await asio::post(asio::bind_executor(to, asio::use_awaitable));
    co_return v;
  };
  auto j = coral::spawn(place.get_executor(), [&]() -> coral::task<std::pair<long, int>> {
    const asio::any_io_executor own = co_await coral::this_task::executor;
    long sum = 0;
    int off_executor = 0;
    for (int i = 0; i < 400; ++i) {
      sum += co_await hop_and_return(elsewhere.get_executor(), i, off_executor);
      if (!running_in(own)) ++off_executor;
      sum += co_await ready_value(1);  // the thread parked where the awaitable ended
    }
    co_return std::pair{sum, off_executor};
  });
  const auto [sum, off_executor] = get_within(std::move(j));
  BOOST_TEST(sum == 399L * 400 / 2 + 400);
  BOOST_TEST(off_executor == 0);
  elsewhere.join();
}

CORAL_TEST_CASE_ON_EACH_PLACE(cancelling_a_task_reaches_the_asio_awaitable_it_waits_in_and_later_awaits_fail,
                              every_place) {
  auto started = std::make_shared<std::promise<void>>();
  auto j = coral::spawn(place.get_executor(), [started]() -> coral::task<std::string> {
    std::string log = std::to_string(co_await ready_value(1));
    try {
      co_await waiting_until_cancelled(started);
      log += " finished";
    } catch (const boost::system::system_error& e) {
      log += " " + outcome_of(e);
    }
    try {
      co_await ready_value(2);
      log += " then ran";
    } catch (const boost::system::system_error& e) {
      log += " then " + outcome_of(e);
    }
    co_return log;
  });
  BOOST_REQUIRE(started->get_future().wait_for(patience) == std::future_status::ready);
  j.cancel();
  BOOST_TEST(get_within(std::move(j)) == "1 aborted then aborted");
  BOOST_TEST(lifetime::alive == 0);
}

CORAL_TEST_CASE_ON_EACH_PLACE(cancelling_tasks_at_random_moments_of_their_asio_awaits_loses_nothing, places) {
  std::mt19937 random(std::random_device{}());
  for (int round = 0; round < 60; ++round) {
    auto j = coral::spawn(place.get_executor(), await_every_shape(400));
    std::this_thread::sleep_for(std::chrono::microseconds(random() % 500));  // a random moment, not a wait
    j.cancel();
    try {
      const auto [sum, off_executor] = get_within(j);
      BOOST_TEST(sum == 399L * 400 / 2);  // finished before the cancel
      BOOST_TEST(off_executor == 0);
    } catch (const boost::system::system_error& e) {
      BOOST_TEST(outcome_of(e) == "aborted");
    }
  }
  BOOST_TEST(lifetime::alive == 0);
}

// Shutdown: a task waiting in an awaitable, and one whose awaitable thread is parked while it
// waits elsewhere, are freed with their context, the awaitables' frames with them.
BOOST_AUTO_TEST_CASE_TEMPLATE(destroying_a_context_frees_tasks_in_asio_awaits_and_their_awaitable_threads, Context,
                              owned_contexts) {
  coral::event never;
  coral::job<int> in_await, parked;
  {
    Context ctx;
    auto started = std::make_shared<std::promise<void>>();
    in_await = coral::spawn(ctx.get_executor(), [](auto started) -> coral::task<int> {
      lifetime held;
      co_return co_await [](auto started) -> asio::awaitable<int> {
        lifetime held_inside;
        asio::steady_timer timer(co_await asio::this_coro::executor, 1h);
        started->set_value();
        co_await timer.async_wait(asio::use_awaitable);
        co_return 1;
      }(started);
    }(started));
    parked = coral::spawn(ctx.get_executor(), [&never]() -> coral::task<int> {
      lifetime held;
      const int v = co_await ready_value(2) + co_await posted_value(3);
      co_await never.wait();
      co_return v;
    });
    ctx.settle();
    BOOST_REQUIRE(started->get_future().wait_for(patience) == std::future_status::ready);
    ctx.settle();
    BOOST_TEST(lifetime::alive == 3);
  }
  BOOST_TEST(lifetime::alive == 0);
  BOOST_TEST(failure_of(in_await) == asio::error::operation_aborted);
  BOOST_TEST(failure_of(parked) == asio::error::operation_aborted);
}

namespace {

// An awaitable whose operation's initiation throws (a failed allocation in Asio's timer queue
// throws std::bad_alloc from async_wait the same way). Asio does not hand the exception to the
// awaitable: it leaves the call that resumed the awaitable, and the awaitable's frames are
// destroyed through their executor. (The exception is made in the initiation: a copy of a
// std::runtime_error shares its message with the original, and libstdc++ counts the sharers where
// ThreadSanitizer does not see it.)
struct initiation_error : std::runtime_error {
  initiation_error() : std::runtime_error("initiation threw") {}
};
struct inner_initiation_error : std::runtime_error {
  inner_initiation_error() : std::runtime_error("inner initiation threw") {}
};
template <class Error>
asio::awaitable<void> operation_whose_initiation_throws() {
  return asio::async_initiate<decltype(asio::use_awaitable), void()>([](auto&&) { throw Error(); },
                                                                     asio::use_awaitable);
}
template <class Error>
asio::awaitable<int> initiation_throws() {
  lifetime held;
  co_await operation_whose_initiation_throws<Error>();
  co_return 1;
}
// The same one level down, after an await that completes at once.
asio::awaitable<int> initiation_throws_inside() {
  lifetime held;
  const int v = co_await ready_value(1);
  co_return v + co_await initiation_throws<inner_initiation_error>();
}

// Awaits throwing initiations between ordinary awaits (a thread of the segment starting, parked,
// just replaced); the log says what each await did.
coral::task<std::string> await_initiations_that_throw(int rounds) {
  std::string log;
  for (int round = 0; round < rounds; ++round) {
    log += std::to_string(co_await ready_value(round));
    try {
      co_await initiation_throws<initiation_error>();
      log += " finished";
    } catch (const std::runtime_error& e) {
      log += std::string(" ") + e.what();
    }
    try {
      co_await initiation_throws<std::bad_alloc>();
      log += " finished";
    } catch (const std::bad_alloc&) {
      log += " bad_alloc";
    }
    try {
      co_await initiation_throws_inside();
      log += " finished";
    } catch (const std::runtime_error& e) {
      log += std::string(" ") + e.what();
    }
    log += " " + std::to_string(co_await posted_value(round)) + ";";
  }
  co_return log;
}

std::string expected_initiation_log(int rounds) {
  std::string log;
  for (int round = 0; round < rounds; ++round) {
    const auto r = std::to_string(round);
    log += r + " initiation threw bad_alloc inner initiation threw " + r + ";";
  }
  return log;
}

// The awaitables' frames are destroyed through their executor after the task has moved on: waits
// for that executor's queue (round trips through it), at most `patience`.
template <class Executor>
bool lifetimes_end(const Executor& executor) {
  for (auto until = std::chrono::steady_clock::now() + patience; lifetime::alive != 0;) {
    if (std::chrono::steady_clock::now() > until) return false;
    thread_of(executor);
  }
  return true;
}

}  // namespace

// The exception an initiation throws ends the task's await: the task catches it, and nothing of
// the await (the awaitable thread, the task's frame) is touched after it is gone. Spawned with a
// token that cannot cancel too: a task on a multi-threaded executor then has no strand.
CORAL_TEST_CASE_ON_EACH_PLACE(an_asio_awaitable_whose_initiation_throws_fails_the_await_with_that_exception,
                              every_place) {
  BOOST_TEST(get_within(coral::spawn(place.get_executor(), await_initiations_that_throw(4))) ==
             expected_initiation_log(4));
  auto f = coral::spawn(place.get_executor(), await_initiations_that_throw(4), asio::use_future);
  BOOST_REQUIRE(f.wait_for(patience) == std::future_status::ready);
  BOOST_TEST(f.get() == expected_initiation_log(4));
  BOOST_TEST(lifetimes_end(place.get_executor()));
}

CORAL_TEST_CASE_ON_EACH_PLACE(an_initiation_that_throws_fails_the_job_when_the_task_does_not_catch_it, every_place) {
  auto first = coral::spawn(place.get_executor(),
                            []() -> coral::task<int> { co_return co_await initiation_throws<initiation_error>(); });
  BOOST_CHECK_EXCEPTION(get_within(std::move(first)), std::runtime_error,
                        [](const std::runtime_error& e) { return std::string(e.what()) == "initiation threw"; });
  auto later = coral::spawn(place.get_executor(), []() -> coral::task<int> {
    const int v = co_await ready_value(1);  // (the thread is parked when the failing await starts)
    co_return v + co_await initiation_throws<std::bad_alloc>();
  });
  BOOST_CHECK_THROW(get_within(std::move(later)), std::bad_alloc);
  BOOST_TEST(lifetimes_end(place.get_executor()));
}

BOOST_AUTO_TEST_CASE(an_asio_awaitable_awaits_coral_tasks_directly) {
  asio::thread_pool pool(2);
  auto strand = asio::make_strand(pool.get_executor());
  auto body = [strand]() -> asio::awaitable<std::string> {
    co_await coral_void();
    std::string log = strand.running_in_this_thread() ? "strand" : "elsewhere";
    const int a = co_await coral::to_awaitable(coral_value(1));
    log += " " + std::to_string(a) + (strand.running_in_this_thread() ? " strand" : " elsewhere");
    const int b = co_await coral::to_awaitable(coral_on_pool(2));
    log += " " + std::to_string(b) + (strand.running_in_this_thread() ? " strand" : " elsewhere");
    try {
      co_await coral_failure();
    } catch (const std::runtime_error& e) {
      log += std::string(" ") + e.what();
    }
    try {
      co_await coral::to_awaitable(coral_value_failure());
    } catch (const std::runtime_error& e) {
      log += std::string(" ") + e.what();
    }
    co_return log;
  };
  auto f = asio::co_spawn(strand, body(), asio::use_future);
  BOOST_REQUIRE(f.wait_for(patience) == std::future_status::ready);
  BOOST_TEST(f.get() == "strand 1 strand 2 strand coral failed coral value failed");
}

BOOST_AUTO_TEST_CASE(an_asio_awaitable_waiting_on_a_task_elsewhere_may_have_its_context_destroyed) {
  // The awaitable's completion handler must go with its io_context (destroying it posts to the
  // context), not when the task on the pool ends afterwards.
  for (int round = 0; round < 20; ++round) {
    coral::event release;
    auto waiting = std::make_shared<std::promise<void>>();
    // The task must be over before the round's event goes: its frame says so as it is destroyed.
    auto ended = std::make_shared<std::promise<void>>();
    struct signal_end {
      std::shared_ptr<std::promise<void>> p;
      ~signal_end() { p->set_value(); }
    };
    auto far = [](coral::event& release, std::shared_ptr<std::promise<void>> waiting,
                  std::shared_ptr<std::promise<void>> ended) -> coral::task<int, coral::pool_executor> {
      signal_end on_end{std::move(ended)};
      waiting->set_value();
      co_await release.wait();
      co_return 1;
    };
    {
      asio::io_context ctx(1);
      asio::co_spawn(
          ctx,
          [&]() -> asio::awaitable<void> {
            if (round % 2) {
              co_await coral::to_awaitable(far(release, waiting, ended));
            } else {
              co_await [](coral::task<int, coral::pool_executor> t) -> coral::task<void, coral::pool_executor> {
                co_await std::move(t);
              }(far(release, waiting, ended));
            }
          },
          asio::detached);
      auto waits = waiting->get_future();
      std::thread runner([&ctx] { ctx.run(); });
      const bool started = waits.wait_for(patience) == std::future_status::ready;
      ctx.stop();
      runner.join();
      BOOST_REQUIRE(started);
    }               // destroyed while the awaitable waits
    release.set();  // the task ends now, its context's completion finds the handler gone
    BOOST_REQUIRE(ended->get_future().wait_for(patience) == std::future_status::ready);
  }
}

BOOST_AUTO_TEST_CASE(cancelling_an_asio_awaitable_reaches_the_coral_task_it_awaits) {
  coral::event_loop loop;
  asio::cancellation_signal signal;
  auto aborted = std::make_shared<std::promise<std::string>>();
  auto started = std::make_shared<std::promise<void>>();
  asio::co_spawn(
      loop.get_executor(),
      [started]() -> asio::awaitable<void> {
        co_await [](auto started) -> coral::task<> {
          started->set_value();
          co_await coral::sleep_for(1h);
        }(started);
      },
      asio::bind_cancellation_slot(signal.slot(), [aborted](std::exception_ptr e) {
        try {
          if (e) std::rethrow_exception(e);
          aborted->set_value("finished");
        } catch (const boost::system::system_error& error) {
          aborted->set_value(error.code() == asio::error::operation_aborted ? "aborted" : error.what());
        }
      }));
  BOOST_REQUIRE(started->get_future().wait_for(patience) == std::future_status::ready);
  asio::post(loop.get_executor(), [&signal] { signal.emit(asio::cancellation_type::terminal); });
  auto f = aborted->get_future();
  BOOST_REQUIRE(f.wait_for(patience) == std::future_status::ready);
  BOOST_TEST(f.get() == "aborted");
}

BOOST_AUTO_TEST_CASE(asio_this_coro_cancellation_helpers_work_in_a_task) {
  coral::event_loop loop;
  coral::channel<int> never;
  auto started = std::make_shared<std::promise<void>>();
  auto j = coral::spawn(loop, [&never, started]() -> coral::task<std::string> {
    co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
    co_await asio::this_coro::reset_cancellation_state(asio::enable_partial_cancellation(),
                                                       asio::enable_terminal_cancellation());
    co_await asio::this_coro::reset_cancellation_state();
    co_await asio::this_coro::throw_if_cancelled(true);
    std::string log = (co_await asio::this_coro::throw_if_cancelled()) ? "throws" : "?";
    auto state = co_await asio::this_coro::cancellation_state;
    log += state.cancelled() == asio::cancellation_type::none ? " not-cancelled" : " ?";
    try {
      started->set_value();
      co_await never.receive();
    } catch (const boost::system::system_error&) {
      log += " aborted";
    }
    state = co_await asio::this_coro::cancellation_state;
    log += state.cancelled() != asio::cancellation_type::none ? " cancelled" : " ?";
    try {
      co_await asio::this_coro::throw_if_cancelled(false);
    } catch (const std::logic_error&) {
      log += " refused";
    }
    co_return log;
  });
  BOOST_REQUIRE(started->get_future().wait_for(patience) == std::future_status::ready);
  j.cancel();
  BOOST_TEST(get_within(std::move(j)) == "throws not-cancelled aborted cancelled refused");
}

BOOST_AUTO_TEST_SUITE_END()
