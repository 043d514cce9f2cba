#define BOOST_TEST_MODULE coral channel
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
// Boost 1.81's use_future trips g++ 12's -Wmaybe-uninitialized in its own header at -O1 with the
// sanitizers (an empty allocator passed by reference; plain Asio operations do the same).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <boost/asio/use_future.hpp>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#include <boost/test/unit_test.hpp>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "test_support.hpp"

using namespace coral_test;
namespace asio = boost::asio;

BOOST_AUTO_TEST_SUITE(channel)

namespace {

// A value that counts its live instances: the channel must neither leak nor duplicate values.
struct counted : lifetime {
  int value = 0;
  counted() = default;
  explicit counted(int v) : value(v) {}
};

template <class T>
coral::task<std::vector<T>> drain(coral::channel<T>& ch) {
  std::vector<T> out;
  while (auto v = co_await ch.next()) out.push_back(std::move(*v));
  co_return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(values_arrive_in_order_for_every_capacity) {
  for (std::size_t capacity : {0u, 1u, 3u, 64u}) {
    asio::io_context ctx(1);
    coral::channel<int> ch(capacity);
    coral::spawn(ctx, [&]() -> coral::task<> {
      for (int i = 0; i < 100; ++i) co_await ch.send(i);
      ch.close();
    });
    auto received = coral::spawn(ctx, drain(ch));
    ctx.run();
    std::vector<int> expected(100);
    for (int i = 0; i < 100; ++i) expected[i] = i;
    BOOST_TEST(received.get_result() == expected, boost::test_tools::per_element());
  }
}

BOOST_AUTO_TEST_CASE(waiting_receivers_are_served_first_come_first_served) {
  asio::io_context ctx(1);
  coral::channel<int> ch(0);
  std::vector<int> got;  // receiver * 100 + value
  for (int r = 0; r < 3; ++r) {
    coral::spawn(ctx, [&, r]() -> coral::task<> { got.push_back(r * 100 + co_await ch.receive()); });
  }
  ctx.poll();  // all three are waiting, in order
  ctx.restart();
  coral::spawn(ctx, [&]() -> coral::task<> {
    for (int v = 10; v < 13; ++v) co_await ch.send(v);
  });
  ctx.run();
  BOOST_TEST(got == (std::vector<int>{10, 111, 212}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(waiting_senders_are_served_first_come_first_served) {
  asio::io_context ctx(1);
  coral::channel<int> ch(1);
  for (int s = 0; s < 4; ++s) {
    coral::spawn(ctx, [&, s]() -> coral::task<> { co_await ch.send(s); });
  }
  ctx.poll();  // one buffered, three waiting
  ctx.restart();
  BOOST_TEST(ch.size() == 1u);
  std::vector<int> got;
  for (int i = 0; i < 4; ++i) got.push_back(*ch.try_receive());
  BOOST_TEST(got == (std::vector<int>{0, 1, 2, 3}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(close_keeps_buffered_values_then_fails_receivers) {
  // The articles' close() threw buffered values away, and so does Boost 1.81's channel.
  asio::io_context ctx(1);
  coral::channel<int> ch(8);
  for (int i = 0; i < 5; ++i) BOOST_TEST(ch.try_send(i));
  ch.close();
  BOOST_TEST(ch.closed());
  auto got = coral::spawn(ctx, drain(ch));
  auto after = coral::spawn(ctx, [&]() -> coral::task<std::string> {
    try {
      co_await ch.receive();
    } catch (const coral::channel_closed& e) {
      co_return e.code() == coral::make_error_code(coral::errc::channel_closed) ? "closed" : "wrong code";
    }
    co_return "received";
  });
  ctx.run();
  BOOST_TEST(got.get_result() == (std::vector<int>{0, 1, 2, 3, 4}), boost::test_tools::per_element());
  BOOST_TEST(after.get_result() == "closed");
  BOOST_TEST(!ch.try_send(9));
}

BOOST_AUTO_TEST_CASE(senders_waiting_at_close_fail_and_deliver_nothing) {
  for (std::size_t capacity : {0u, 2u}) {
    asio::io_context ctx(1);
    coral::channel<counted> ch(capacity);
    std::vector<coral::job<std::string>> senders;
    for (int i = 0; i < 2 + static_cast<int>(capacity); ++i) {
      senders.push_back(coral::spawn(ctx, [&, i]() -> coral::task<std::string> {
        try {
          co_await ch.send(counted(i));
        } catch (const coral::channel_closed& e) {
          co_return "failed";
        }
        co_return "sent";
      }));
    }
    ctx.poll();
    ctx.restart();
    ch.close();
    ctx.run();
    int sent = 0, failed = 0;
    for (auto& s : senders) (s.get_result() == "sent" ? sent : failed)++;
    BOOST_TEST(sent == static_cast<int>(capacity));  // only the buffered ones
    BOOST_TEST(failed == 2);
    BOOST_TEST(ch.size() == capacity);
    while (ch.try_receive()) {
    }
    BOOST_TEST(lifetime::alive == 0);  // the failed values were destroyed, not kept
  }
}

BOOST_AUTO_TEST_CASE(close_completes_a_pending_async_send_on_a_rendezvous_channel) {
  // Boost 1.81's channel never completed it.
  asio::io_context ctx(1);
  coral::channel<int> ch(0);
  boost::system::error_code result = asio::error::would_block;
  ch.async_send(1, asio::bind_executor(ctx, [&](boost::system::error_code e) { result = e; }));
  ch.close();
  ctx.run();
  BOOST_TEST((result == coral::errc::channel_closed));
}

BOOST_AUTO_TEST_CASE(async_operations_keep_their_state_in_the_handlers_allocator) {
  asio::io_context ctx(1);
  coral::channel<int> ch(0);
  allocation_counts counts;
  coral_test::counting_allocator<void> allocator(counts);
  int received = 0;
  boost::system::error_code send_result = asio::error::would_block;
  ch.async_receive(asio::bind_executor(ctx, asio::bind_allocator(allocator, [&](boost::system::error_code e, int v) {
                                         if (!e) received = v;
                                       })));  // waits: nobody sends yet
  BOOST_TEST(counts.allocations >= 1);
  ch.async_send(9, asio::bind_executor(
                       ctx, asio::bind_allocator(allocator, [&](boost::system::error_code e) { send_result = e; })));
  ctx.run();
  BOOST_TEST(received == 9);
  BOOST_TEST(!send_result, send_result.message());
  BOOST_TEST(counts.allocations >= 2);
  BOOST_TEST(counts.allocations == counts.deallocations);

  // One left pending when the context goes is freed with the same allocator.
  {
    asio::io_context doomed(1);
    ch.async_receive(
        asio::bind_executor(doomed, asio::bind_allocator(allocator, [](boost::system::error_code, int) {})));
  }
  BOOST_TEST(counts.allocations == counts.deallocations);
}

namespace {
// An allocator that knows when it has been moved from (a copy of a moved-from one is moved-from
// too), and records every use made of it after that: allocators need not survive a move.
struct allocator_uses {
  int allocations = 0;
  int deallocations = 0;
  int after_a_move = 0;
};

template <class T>
struct move_aware_allocator {
  using value_type = T;
  allocator_uses* uses;
  bool moved_from = false;

  explicit move_aware_allocator(allocator_uses& u) noexcept : uses(&u) {}
  move_aware_allocator(const move_aware_allocator&) noexcept = default;
  move_aware_allocator(move_aware_allocator&& other) noexcept
      : uses(other.uses), moved_from(std::exchange(other.moved_from, true)) {}
  template <class U>
  move_aware_allocator(const move_aware_allocator<U>& other) noexcept
      : uses(other.uses), moved_from(other.moved_from) {}
  move_aware_allocator& operator=(const move_aware_allocator&) noexcept = default;
  move_aware_allocator& operator=(move_aware_allocator&& other) noexcept {
    uses = other.uses;
    moved_from = std::exchange(other.moved_from, true);
    return *this;
  }

  T* allocate(std::size_t n) {
    if (moved_from) ++uses->after_a_move;
    ++uses->allocations;
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if (moved_from) ++uses->after_a_move;
    ++uses->deallocations;
    std::allocator<T>().deallocate(p, n);
  }
  template <class U>
  bool operator==(const move_aware_allocator<U>& other) const noexcept {
    return uses == other.uses;
  }
};

// A handler that keeps its allocator itself, and moves it along when it is moved.
template <class F>
struct carries_its_allocator {
  using allocator_type = move_aware_allocator<void>;
  allocator_type allocator;
  F f;
  allocator_type get_allocator() const noexcept { return allocator; }
  template <class... Args>
  void operator()(Args&&... args) {
    f(std::forward<Args>(args)...);
  }
};

// Runs a waiting receive completed by a send, a waiting send completed by a receive, two that
// complete at once and one that fails, each with the handler `with_allocator(ctx, f)` makes of f.
template <class WithAllocator>
void run_async_operations(WithAllocator with_allocator, std::vector<std::string>& completions) {
  asio::io_context ctx(1);
  coral::channel<int> ch(0);
  auto on_receive = [&](boost::system::error_code e, int v) {
    completions.push_back(e ? e.message() : "received " + std::to_string(v));
  };
  auto on_send = [&](boost::system::error_code e) { completions.push_back(e ? e.message() : "sent"); };
  ch.async_receive(with_allocator(ctx, on_receive));
  ch.async_send(1, with_allocator(ctx, on_send));
  ch.async_send(2, with_allocator(ctx, on_send));
  ch.async_receive(with_allocator(ctx, on_receive));
  ch.close();
  ch.async_receive(with_allocator(ctx, on_receive));
  ctx.run();
}
}  // namespace

BOOST_AUTO_TEST_CASE(async_operations_never_use_an_allocator_their_handler_was_moved_out_of) {
  allocator_uses uses;
  move_aware_allocator<void> allocator(uses);
  std::vector<std::string> completions;
  run_async_operations(
      [&](asio::io_context& ctx, auto f) { return asio::bind_executor(ctx, asio::bind_allocator(allocator, f)); },
      completions);
  run_async_operations(
      [&](asio::io_context& ctx, auto f) {
        return asio::bind_executor(ctx, carries_its_allocator<decltype(f)>{allocator, f});
      },
      completions);
  BOOST_TEST(completions.size() == 10u);
  BOOST_TEST(uses.allocations >= 10);
  BOOST_TEST(uses.allocations == uses.deallocations);
  BOOST_TEST(uses.after_a_move == 0);
}

// An async_receive that finds a value posts its completion, allocated with the handler's
// allocator. If that allocation fails, the exception reaches the caller and the receive did not
// happen: the value is still in the channel, and the handler never runs.
BOOST_AUTO_TEST_CASE(an_async_receive_whose_completion_cannot_be_posted_leaves_its_value_in_the_channel) {
  int failures = 0;
  for (int k = 0;; ++k) {
    allocation_counts counts;
    counts.until_failure = k;
    asio::io_context ctx(1);
    coral::channel<int> ch(1);
    BOOST_TEST_REQUIRE(ch.try_send(7));
    int handled = -1;
    bool thrown = false;
    try {
      ch.async_receive(asio::bind_executor(
          ctx, asio::bind_allocator(counting_allocator<void>(counts),
                                    [&](boost::system::error_code e, int v) { handled = e ? -2 : v; })));
    } catch (const std::bad_alloc&) {
      thrown = true;
    }
    BOOST_TEST(thrown == counts.failed.load(), "allocation " << k);
    ctx.run();
    BOOST_TEST(counts.allocations == counts.deallocations, "allocation " << k);
    if (!counts.failed) {
      BOOST_TEST(handled == 7);
      BOOST_TEST(ch.size() == 0u);
      break;
    }
    ++failures;
    BOOST_TEST(handled == -1, "allocation " << k << ": the handler ran");
    BOOST_TEST(ch.size() == 1u, "allocation " << k);
    BOOST_TEST(ch.try_receive().value_or(-1) == 7, "allocation " << k);
  }
  // The operation's own memory, and its completion's.
  BOOST_TEST(failures >= 2);
}

BOOST_AUTO_TEST_CASE(a_cancelled_receive_consumes_nothing_and_try_send_still_works) {
  coral::event_loop loop;
  coral::channel<int> ch(1);
  std::promise<void> waiting;
  auto receiver = coral::spawn(loop.get_executor(), [&]() -> coral::task<int> {
    asio::post(loop.get_executor(), [&] { waiting.set_value(); });
    co_return co_await ch.receive();
  });
  waiting.get_future().wait();
  receiver.cancel();
  BOOST_TEST(failure_of(receiver) == asio::error::operation_aborted);
  BOOST_TEST(ch.try_send(7));  // Boost 1.81's try_send failed after a cancel
  BOOST_TEST(*ch.try_receive() == 7);
}

BOOST_AUTO_TEST_CASE(a_cancelled_send_delivers_nothing) {
  coral::event_loop loop;
  coral::channel<counted> ch(0);
  std::promise<void> waiting;
  auto sender = coral::spawn(loop.get_executor(), [&]() -> coral::task<> {
    asio::post(loop.get_executor(), [&] { waiting.set_value(); });
    co_await ch.send(counted(1));
  });
  waiting.get_future().wait();
  sender.cancel();
  BOOST_TEST(failure_of(sender) == asio::error::operation_aborted);
  BOOST_TEST(!ch.try_receive().has_value());
  BOOST_TEST(lifetime::alive == 0);
}

BOOST_AUTO_TEST_CASE(a_cancelled_async_receive_through_its_slot_consumes_nothing) {
  asio::io_context ctx(1);
  coral::channel<int> ch(1);
  asio::cancellation_signal signal;
  boost::system::error_code result;
  ch.async_receive(asio::bind_cancellation_slot(
      signal.slot(), asio::bind_executor(ctx, [&](boost::system::error_code e, int) { result = e; })));
  signal.emit(asio::cancellation_type::all);
  ctx.run();
  BOOST_TEST(result == asio::error::operation_aborted);
  BOOST_TEST(ch.try_send(3));
  BOOST_TEST(*ch.try_receive() == 3);
}

BOOST_AUTO_TEST_CASE(waiters_resume_on_their_own_executors) {
  coral::channel<int> ch(0);
  auto receiver = coral::spawn([](coral::channel<int>& ch) -> coral::task<bool, coral::loop_executor> {
    int v = co_await ch.receive();
    co_return v == 1 && coral::loop_executor{}.running_in_this_thread();
  }(ch));
  auto sender = coral::spawn([](coral::channel<int>& ch) -> coral::task<bool, coral::pool_executor> {
    co_await ch.send(1);
    co_return coral::pool_executor{}.running_in_this_thread();
  }(ch));
  BOOST_TEST(get_within(receiver));
  BOOST_TEST(get_within(sender));
}

BOOST_AUTO_TEST_CASE(close_from_an_inline_resumed_waiter_does_not_hang) {
  // The articles' close() resumed an inline waiter while holding the channel's lock.
  coral::channel<int> ch(0);
  std::string outcome = "not resumed";
  // An inline_executor task starts inside spawn() and is now waiting in receive().
  auto receiver =
      coral::spawn([](coral::channel<int>& ch, std::string& out) -> coral::task<void, coral::inline_executor> {
        try {
          co_await ch.receive();
          out = "received";
        } catch (const coral::channel_closed&) {
          ch.close();  // re-enters the channel on the closing thread
          out = ch.try_send(1) ? "sent" : "closed";
        }
      }(ch, outcome));
  BOOST_TEST(outcome == "not resumed");
  ch.close();  // resumes the receiver right here, on this thread
  BOOST_TEST(outcome == "closed");
  BOOST_TEST(receiver.done());
}

BOOST_AUTO_TEST_CASE(destroying_a_channel_wakes_its_waiters_with_channel_closed) {
  asio::io_context ctx(1);
  auto ch = std::make_unique<coral::channel<int>>(0);
  auto receiver = coral::spawn(ctx, [&]() -> coral::task<std::string> {
    try {
      co_await ch->receive();
    } catch (const coral::channel_closed&) {
      co_return "closed";
    }
    co_return "received";
  });
  ctx.poll();
  ctx.restart();
  ch.reset();
  ctx.run();
  BOOST_TEST(receiver.get_result() == "closed");
}

BOOST_AUTO_TEST_CASE(move_only_values_pass_through) {
  asio::io_context ctx(1);
  coral::channel<std::unique_ptr<int>> ch(2);
  coral::spawn(ctx, [&]() -> coral::task<> {
    co_await ch.send(std::make_unique<int>(1));
    co_await (ch << std::make_unique<int>(2));
    ch.close();
  });
  auto sum = coral::spawn(ctx, [&]() -> coral::task<int> {
    std::unique_ptr<int> a;
    co_await (ch >> a);
    auto b = co_await ch.receive();
    co_return *a + *b;
  });
  ctx.run();
  BOOST_TEST(sum.get_result() == 3);
}

BOOST_AUTO_TEST_CASE(sockets_can_be_sent) {
  asio::io_context ctx(1);
  coral::channel<asio::ip::tcp::socket> ch(1);
  BOOST_TEST(ch.try_send(asio::ip::tcp::socket(ctx)));
  auto s = ch.try_receive();
  BOOST_TEST(s.has_value());
  BOOST_TEST(!s->is_open());
}

BOOST_AUTO_TEST_CASE(plain_asio_code_and_coral_tasks_share_a_channel) {
  coral::event_loop loop;
  auto ex = loop.get_executor();
  coral::channel<int> ch(0);

  // callback sender -> coral receiver
  std::promise<boost::system::error_code> sent;
  ch.async_send(5, [&](boost::system::error_code e) { sent.set_value(e); });
  auto received = coral::spawn(ex, [&]() -> coral::task<int> { co_return co_await ch.receive(); });
  BOOST_TEST(get_within(received) == 5);
  BOOST_TEST(!sent.get_future().get());

  // coral sender -> asio::awaitable receiver
  auto by_awaitable = asio::co_spawn(
      ex, [&]() -> asio::awaitable<int> { co_return co_await ch.async_receive(asio::use_awaitable); },
      asio::use_future);
  auto sender = coral::spawn(ex, [&]() -> coral::task<> { co_await ch.send(6); });
  BOOST_TEST(by_awaitable.get() == 6);
  get_within(sender);

  // use_future receiver, use_task sender
  auto future = ch.async_receive(asio::use_future);
  get_within(coral::spawn(ex, [&]() -> coral::task<> { co_await ch.async_send(7, coral::use_task); }));
  BOOST_TEST(future.get() == 7);
}

// ---------------------------------------------------------------------------------------------
// Asio's completion rules: a handler never runs inside the initiating call.

BOOST_AUTO_TEST_CASE(async_receive_and_async_send_never_run_the_handler_inside_the_initiating_call) {
  asio::io_context ctx(1);
  coral::channel<int> ch(1);
  BOOST_TEST(ch.try_send(1));
  struct record {
    bool ran = false;
    bool inside = false;
    bool returned = false;
  } bound_receive, bound_send;
  asio::post(ctx, [&] {  // on the handler's executor, with a value ready / room to send
    ch.async_receive(asio::bind_executor(ctx, [&](boost::system::error_code e, int v) {
      bound_receive.ran = !e && v == 1;
      bound_receive.inside = !bound_receive.returned;
    }));
    bound_receive.returned = true;
  });
  asio::post(ctx, [&] {
    ch.async_send(2, asio::bind_executor(ctx, [&](boost::system::error_code e) {
                    bound_send.ran = !e;
                    bound_send.inside = !bound_send.returned;
                  }));
    bound_send.returned = true;
  });
  ctx.run();
  BOOST_TEST(bound_receive.ran);
  BOOST_TEST(!bound_receive.inside, "async_receive ran its handler inside the call");
  BOOST_TEST(bound_send.ran);
  BOOST_TEST(!bound_send.inside, "async_send ran its handler inside the call");

  // A handler with no associated executor, from a plain thread.
  std::atomic<bool> returned{false};
  std::promise<bool> inside;
  const auto caller = std::this_thread::get_id();  // posted elsewhere, it may run before `returned` is set
  ch.async_receive([&](boost::system::error_code, int) {
    inside.set_value(std::this_thread::get_id() == caller && !returned.load());
  });
  returned = true;
  auto f = inside.get_future();
  BOOST_TEST_REQUIRE((f.wait_for(patience) == std::future_status::ready));
  BOOST_TEST(!f.get(), "async_receive ran an executor-less handler inside the call");
}

// Two callback stages pass a value back and forth through two rendezvous channels, each handler
// waiting for the next value and then sending: a completion run inside the call that completes
// it would nest every hop in the last one and overflow the stack.
thread_local int stage_handler_depth = 0;

template <class Bind>
int deepest_nesting_of_stages_passing_a_value(int hops, Bind bind) {
  struct stages {
    stages(int h, Bind b) : hops(h), bind(std::move(b)) {}
    coral::channel<int> a{0}, b{0};
    int hops;
    Bind bind;
    std::atomic<int> deepest{0};
    int last = -1;
    std::promise<void> finished;
    void arm(coral::channel<int>& in, coral::channel<int>& out) {
      in.async_receive(bind([this, &in, &out](boost::system::error_code e, int v) {
        if (e) return;
        const int depth = ++stage_handler_depth;
        for (int seen = deepest.load(); depth > seen && !deepest.compare_exchange_weak(seen, depth);) {
        }
        if (v < hops) {
          arm(in, out);
          out.async_send(v + 1, bind([](boost::system::error_code) {}));
        } else {
          last = v;
          finished.set_value();
        }
        --stage_handler_depth;
      }));
    }
  } s(hops, std::move(bind));
  auto done = s.finished.get_future();
  s.arm(s.a, s.b);
  s.arm(s.b, s.a);
  s.a.async_send(0, bind([](boost::system::error_code) {}));
  BOOST_TEST_REQUIRE((done.wait_for(workload_patience) == std::future_status::ready));
  BOOST_TEST(s.last == hops);
  s.a.close();
  s.b.close();
  return s.deepest.load();
}

BOOST_AUTO_TEST_CASE(callback_stages_passing_a_value_back_and_forth_never_nest_their_handlers) {
  constexpr int hops = 20'000;
  for (const int threads : {1, 4}) {
    running_io_context ctx(threads);
    const int deepest = deepest_nesting_of_stages_passing_a_value(
        hops, [&](auto handler) { return asio::bind_executor(ctx.get_executor(), std::move(handler)); });
    BOOST_TEST(deepest == 1, threads << " threads");
  }
  {
    asio::thread_pool pool(2);
    auto strand = asio::make_strand(pool);
    const int deepest = deepest_nesting_of_stages_passing_a_value(
        hops, [&](auto handler) { return asio::bind_executor(strand, std::move(handler)); });
    BOOST_TEST(deepest == 1);
    pool.join();
  }
  // No executor of their own: posted to the system executor.
  BOOST_TEST(deepest_nesting_of_stages_passing_a_value(hops, [](auto handler) { return handler; }) == 1);
}

// close() completes every waiting operation; a handler with no executor of its own that destroys
// the context of another operation of the same close() must not wait for close() to let go of it
// (run inside close(), it would wait for ever for its own thread).
BOOST_AUTO_TEST_CASE(a_handler_that_destroys_the_context_of_another_operation_the_same_close_completes) {
  coral::channel<int> ch(0);
  auto worker = std::make_unique<asio::io_context>(1);
  std::promise<boost::system::error_code> destroyed;
  ch.async_receive([&](boost::system::error_code e, int) {
    worker.reset();
    destroyed.set_value(e);
  });
  bool bound_ran = false;
  ch.async_receive(asio::bind_executor(*worker, [&](boost::system::error_code, int) { bound_ran = true; }));
  ch.close();
  auto f = destroyed.get_future();
  BOOST_TEST_REQUIRE((f.wait_for(patience) == std::future_status::ready));
  BOOST_TEST((f.get() == coral::errc::channel_closed));
  BOOST_TEST(!bound_ran);  // (its context never ran: its handler went with it)
}

// A handler that throws throws out of its executor's run(), as Asio's rules say, and never out of
// the call that completed its operation (here a try_send on the handler's own strand).
BOOST_AUTO_TEST_CASE(a_throwing_async_receive_handler_throws_out_of_run_and_never_out_of_the_sender) {
  asio::io_context ctx(1);
  auto strand = asio::make_strand(ctx);
  for (const bool on_strand : {true, false}) {
    coral::channel<int> ch(0);
    bool sender_returned = false, sent = false;
    auto handler = [](boost::system::error_code, int v) {
      throw std::runtime_error("handler got " + std::to_string(v));
    };
    if (on_strand) {
      ch.async_receive(asio::bind_executor(strand, handler));
      asio::post(strand, [&] {
        sent = ch.try_send(7);
        sender_returned = true;
      });
    } else {
      ch.async_receive(asio::bind_executor(ctx, handler));
      asio::post(ctx, [&] {
        sent = ch.try_send(7);
        sender_returned = true;
      });
    }
    std::string thrown;
    try {
      ctx.run();
    } catch (const std::runtime_error& e) {
      thrown = e.what();
    }
    BOOST_TEST(thrown == "handler got 7");
    BOOST_TEST(sent);
    BOOST_TEST(sender_returned);
    ctx.restart();
    ctx.run();
    ctx.restart();
  }
}

BOOST_AUTO_TEST_CASE(a_callback_receive_loop_over_a_hundred_thousand_buffered_values_keeps_the_stack_flat) {
  constexpr int total = 100'000;
  asio::io_context ctx(1);
  coral::channel<int> ch(total);
  for (int i = 0; i < total; ++i) BOOST_TEST_REQUIRE(ch.try_send(i));
  struct loop_state {
    coral::channel<int>& ch;
    asio::io_context& ctx;
    long long sum = 0;
    int received = 0;
    int ran_inside = 0;
    bool in_call = false;
  } s{ch, ctx};
  struct receive_next {
    loop_state* s;
    void start() const {
      s->in_call = true;
      s->ch.async_receive(asio::bind_executor(s->ctx, *this));
      s->in_call = false;
    }
    void operator()(boost::system::error_code e, int v) const {
      if (s->in_call) ++s->ran_inside;
      if (e) return;
      s->sum += v;
      if (++s->received < total) start();
    }
  };
  asio::post(ctx, [&] { receive_next{&s}.start(); });
  ctx.run();
  BOOST_TEST(s.received == total);
  BOOST_TEST(s.sum == static_cast<long long>(total) * (total - 1) / 2);
  BOOST_TEST(s.ran_inside == 0);
}

// ---------------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(move_assigning_over_a_channel_with_waiters_closes_it) {
  coral::event_loop loop;
  coral::channel<int> ch(0);
  coral::channel<counted> ch2(0);
  std::promise<void> waiting;
  auto receiver = coral::spawn(loop.get_executor(), [&]() -> coral::task<std::string> {
    lifetime l;
    try {
      co_await ch.receive();
    } catch (const coral::channel_closed&) {
      co_return "closed";
    }
    co_return "received";
  });
  auto sender = coral::spawn(loop.get_executor(), [&]() -> coral::task<std::string> {
    asio::post(loop.get_executor(), [&] { waiting.set_value(); });  // runs once both wait
    try {
      co_await ch2.send(counted(1));
    } catch (const coral::channel_closed&) {
      co_return "closed";
    }
    co_return "sent";
  });
  BOOST_TEST_REQUIRE((waiting.get_future().wait_for(patience) == std::future_status::ready));
  ch = coral::channel<int>(1);
  ch2 = coral::channel<counted>(1);
  BOOST_TEST(get_within(receiver) == "closed");
  BOOST_TEST(get_within(sender) == "closed");
  BOOST_TEST(lifetime::alive == 0);
  BOOST_TEST(ch.try_send(3));  // the new channel works
}

BOOST_AUTO_TEST_CASE(a_moved_from_channel_behaves_as_closed_and_empty) {
  asio::io_context ctx(1);
  coral::channel<counted> ch(4);
  BOOST_REQUIRE(ch.try_send(counted(1)));
  coral::channel<counted> other(std::move(ch));

  counted kept(2);
  BOOST_TEST(!ch.try_send(kept));
  BOOST_TEST(kept.value == 2);  // untouched, as by any failed try_send
  BOOST_TEST(!ch.try_send(counted(3)));
  BOOST_TEST(!ch.try_receive().has_value());
  BOOST_TEST(ch.closed());
  BOOST_TEST(ch.size() == 0u);
  BOOST_TEST(ch.capacity() == 0u);
  ch.close();
  ch.close(std::make_exception_ptr(std::runtime_error("ignored")));
  BOOST_TEST(ch.closed());

  boost::system::error_code async_sent, async_received;
  ch.async_send(counted(4), asio::bind_executor(ctx, [&](boost::system::error_code e) { async_sent = e; }));
  ch.async_receive(asio::bind_executor(ctx, [&](boost::system::error_code e, counted) { async_received = e; }));

  auto awaited = coral::spawn(ctx, [&]() -> coral::task<std::vector<std::string>> {
    std::vector<std::string> outcomes;
    auto record = [&](auto operation) -> coral::task<> {
      try {
        co_await operation();
        outcomes.push_back("happened");
      } catch (const coral::channel_closed&) {
        outcomes.push_back("closed");
      }
    };
    co_await record([&] { return ch.send(counted(5)); });
    co_await record([&] { return ch << counted(6); });
    co_await record([&] { return ch.receive(); });
    counted target(7);
    co_await record([&] { return ch >> target; });
    outcomes.push_back((co_await ch.next()).has_value() ? "value" : "nullopt");
    co_await record([&] { return coral::when_any(ch.receive(), std::chrono::hours(1)); });
    co_await record([&] { return coral::with_timeout(std::chrono::hours(1), ch.receive()); });
    co_return outcomes;
  });
  ctx.run();
  BOOST_TEST(awaited.get_result() ==
                 (std::vector<std::string>{"closed", "closed", "closed", "closed", "nullopt", "closed", "closed"}),
             boost::test_tools::per_element());
  BOOST_TEST((async_sent == coral::errc::channel_closed));
  BOOST_TEST((async_received == coral::errc::channel_closed));

  coral::channel<counted> moved_again(std::move(ch));  // a moved-from channel moves on as one
  BOOST_TEST(moved_again.closed());
  ch = std::move(moved_again);
  BOOST_TEST(ch.closed());
  BOOST_TEST(other.try_receive()->value == 1);  // the channel itself lives on in `other`
  ch = coral::channel<counted>(1);              // and a moved-from one can be given a new channel
  BOOST_TEST(ch.try_send(counted(8)));
  BOOST_TEST(ch.try_receive()->value == 8);
  BOOST_TEST(lifetime::alive == 1);  // `kept`
}

namespace {
// A value whose move throws while `fail` is set.
struct fragile : lifetime {
  static inline std::atomic<bool> fail{false};
  int value;
  explicit fragile(int v) : value(v) {}
  fragile(fragile&& other) : lifetime(), value(other.value) {
    if (fail) throw std::runtime_error("fragile: move failed");
  }
  fragile& operator=(fragile&& other) {
    if (fail) throw std::runtime_error("fragile: move failed");
    value = other.value;
    return *this;
  }
};
}  // namespace

BOOST_AUTO_TEST_CASE(a_send_whose_move_throws_keeps_its_value_and_the_waiting_receiver_stays_queued) {
  coral::event_loop loop;
  coral::channel<fragile> ch(0);
  std::promise<void> waiting;
  auto receiver = coral::spawn(loop.get_executor(), [&]() -> coral::task<int> {
    asio::post(loop.get_executor(), [&] { waiting.set_value(); });
    co_return (co_await ch.receive()).value;
  });
  BOOST_TEST_REQUIRE((waiting.get_future().wait_for(patience) == std::future_status::ready));
  {
    fragile first(1), second(2);
    fragile::fail = true;
    BOOST_CHECK_THROW(ch.try_send(first), std::runtime_error);
    fragile::fail = false;
    BOOST_TEST(first.value == 1);  // still the sender's
    const bool handed_on = ch.try_send(second);
    BOOST_TEST_REQUIRE(handed_on, "the receiver was dropped from the queue by the failed hand-over");
  }
  BOOST_TEST(get_within(receiver) == 2);
  BOOST_TEST(lifetime::alive == 0);
}

BOOST_AUTO_TEST_CASE(a_receive_whose_move_throws_leaves_the_waiting_sender_queued_with_its_value) {
  coral::event_loop loop;
  coral::channel<fragile> ch(0);
  std::promise<void> waiting;
  auto sender = coral::spawn(loop.get_executor(), [&]() -> coral::task<> {
    fragile v(1);
    asio::post(loop.get_executor(), [&] { waiting.set_value(); });
    co_await ch.send(std::move(v));
  });
  BOOST_TEST_REQUIRE((waiting.get_future().wait_for(patience) == std::future_status::ready));
  fragile::fail = true;
  BOOST_CHECK_THROW(ch.try_receive(), std::runtime_error);
  fragile::fail = false;
  auto v = ch.try_receive();
  BOOST_TEST_REQUIRE(v.has_value(), "the sender was dropped from the queue by the failed hand-over");
  BOOST_TEST(v->value == 1);
  get_within(sender);
  v.reset();
  BOOST_TEST(lifetime::alive == 0);
}

namespace {
// A value whose n-th move (construction or assignment) from now throws, wherever that move
// happens: a test makes each move of a hand-over fail in turn, whatever their number. It counts
// as a lifetime, and counts its moves. (Atomics: a value may be moved on any thread of the
// executor under test, one move at a time.)
struct brittle : lifetime {
  static inline std::atomic<int> moves_until_failure{0};  // 0: no move fails
  static inline std::atomic<int> moves{0};
  int value = 0;
  brittle() = default;
  explicit brittle(int v) : value(v) {}
  brittle(brittle&& other) : value(other.value) { count_move(); }
  brittle& operator=(brittle&& other) {
    count_move();
    value = other.value;
    return *this;
  }
  static void count_move() {
    ++moves;
    if (moves_until_failure.load() > 0 && --moves_until_failure == 0) throw std::runtime_error("brittle: move failed");
  }
};

bool is_brittle_failure(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::runtime_error& failure) {
    return std::string(failure.what()) == "brittle: move failed";
  }
}

// Sends 7 (buffered, or held by a waiting sender on a rendezvous channel), lets `attempt` receive
// it with the n-th move of a brittle failing, then drains the channel: what the attempt and the
// drain got, together.
template <class Attempt>
std::vector<int> receive_with_a_failing_move(std::size_t capacity, int failing_move, Attempt attempt) {
  asio::io_context ctx(1);
  coral::channel<brittle> ch(capacity);
  auto sender = coral::spawn(ctx, [&]() -> coral::task<> { co_await ch.send(brittle(7)); });
  ctx.poll();
  ctx.restart();
  brittle::moves_until_failure = failing_move;
  std::vector<int> got;
  std::exception_ptr failure;
  attempt(ctx, ch, got, failure);
  brittle::moves_until_failure = 0;
  if (failure) BOOST_TEST(is_brittle_failure(failure));
  while (auto v = ch.try_receive()) got.push_back(v->value);
  ctx.run_for(patience);
  get_within(std::move(sender));
  return got;
}

template <class Receive>
void check_a_failing_move_loses_nothing(const char* form, Receive receive) {
  for (std::size_t capacity : {0u, 1u}) {
    for (int failing_move = 1; failing_move <= 4; ++failing_move) {
      BOOST_TEST_CONTEXT(form << ", capacity " << capacity << ", move " << failing_move << " fails") {
        const auto got = receive_with_a_failing_move(capacity, failing_move,
                                                     [&](asio::io_context& ctx, coral::channel<brittle>& ch,
                                                         std::vector<int>& got, std::exception_ptr& failure) {
                                                       auto j = coral::spawn(ctx, receive(ch));
                                                       ctx.poll();
                                                       ctx.restart();
                                                       try {
                                                         got.push_back(get_within(j));
                                                       } catch (...) {
                                                         failure = std::current_exception();
                                                       }
                                                     });
        BOOST_TEST(got == std::vector<int>{7}, boost::test_tools::per_element());
        BOOST_TEST(lifetime::alive == 0);
      }
    }
  }
}
}  // namespace

BOOST_AUTO_TEST_CASE(a_receive_whose_last_move_throws_leaves_the_value_in_the_channel) {
  check_a_failing_move_loses_nothing(
      "receive()", [](coral::channel<brittle>& ch) -> coral::task<int> { co_return (co_await ch.receive()).value; });
  check_a_failing_move_loses_nothing(
      "next()", [](coral::channel<brittle>& ch) -> coral::task<int> { co_return (co_await ch.next())->value; });
  check_a_failing_move_loses_nothing("operator>>", [](coral::channel<brittle>& ch) -> coral::task<int> {
    brittle target;
    co_await (ch >> target);
    co_return target.value;
  });
  check_a_failing_move_loses_nothing(
      "try_receive()", [](coral::channel<brittle>& ch) -> coral::task<int> { co_return ch.try_receive()->value; });
}

BOOST_AUTO_TEST_CASE(an_async_receive_whose_move_throws_leaves_the_value_in_the_channel) {
  for (std::size_t capacity : {0u, 1u}) {
    for (int failing_move = 1; failing_move <= 4; ++failing_move) {
      BOOST_TEST_CONTEXT("capacity " << capacity << ", move " << failing_move << " fails") {
        const auto got = receive_with_a_failing_move(
            capacity, failing_move,
            [&](asio::io_context& ctx, coral::channel<brittle>& ch, std::vector<int>& got,
                std::exception_ptr& failure) {
              try {
                // The handler takes the value by reference: moving it further is the handler's
                // business, not the channel's.
                ch.async_receive(asio::bind_executor(ctx, [&](boost::system::error_code e, brittle&& v) {
                  if (!e) got.push_back(v.value);
                }));
              } catch (...) {
                failure = std::current_exception();
              }
              ctx.poll();
              ctx.restart();
            });
        BOOST_TEST(got == std::vector<int>{7}, boost::test_tools::per_element());
        BOOST_TEST(lifetime::alive == 0);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_value_whose_last_move_throws_goes_to_the_next_waiting_receiver) {
  asio::io_context ctx(1);
  coral::channel<brittle> ch(0);
  auto receive = [&]() -> coral::task<int> { co_return (co_await ch.receive()).value; };
  auto first = coral::spawn(ctx, receive);
  auto second = coral::spawn(ctx, receive);
  ctx.poll();  // both wait, `first` first in line
  ctx.restart();
  BOOST_REQUIRE(ch.try_send(brittle(7)));
  brittle::moves_until_failure = 1;
  while (!first.done()) ctx.run_one();
  brittle::moves_until_failure = 0;
  ctx.poll();
  ctx.restart();
  const bool second_received = second.done();
  BOOST_TEST(second_received, "the value was lost with the receive that could not take it");
  ch.close();
  ctx.run();
  BOOST_CHECK_THROW(first.get_result(), std::runtime_error);
  if (second_received) BOOST_TEST(second.get_result() == 7);
  BOOST_TEST(lifetime::alive == 0);
}

namespace {
// Races a receive of the brittle 7 in `race(ch, limit)` (which returns the value received) on
// `Place`, with the value sent before the race (it is ready when the race starts; `limit` is 10 ms)
// or after (the race waits for it, and its branch has it; `limit` is an hour), and the n-th move of
// the value on the receiving side failing, for every n up to 8: whether the race throws or not,
// the value is delivered once, or it is still in the channel, where a plain receive gets it; and
// no brittle is left, or made twice. A race in which no move fails moves the value `moves` times.
template <class Place, class Race>
void check_a_raced_receive_loses_nothing(const char* form, Race race, int moves) {
  Place place;
  auto ex = place.get_executor();
  for (bool ready : {true, false}) {
    for (int failing_move = 0; failing_move <= 8; ++failing_move) {
      BOOST_TEST_CONTEXT(form << (ready ? ", value ready" : ", value sent while the race waits")
                              << (failing_move ? ", move " + std::to_string(failing_move) + " fails"
                                               : std::string(", no move fails"))) {
        coral::channel<brittle> ch(1);
        brittle sent(7);
        if (ready) BOOST_TEST_REQUIRE(ch.try_send(sent));
        // A send moves its value once (into the channel, or to the waiting receiver), before the
        // receiving side does: that move never fails.
        const int send_moves = ready ? 0 : 1;
        brittle::moves = 0;
        brittle::moves_until_failure = failing_move == 0 ? 0 : send_moves + failing_move;
        std::exception_ptr failure;
        auto raced = run_a_raced_receive(
            ex, ready, [&] { return ch.try_send(sent); }, [&](std::chrono::milliseconds d) { return race(ch, d); },
            failure);
        std::vector<int> got;
        if (raced) got.push_back(*raced);
        if (failure) {
          BOOST_TEST(failing_move != 0);
          BOOST_TEST(is_brittle_failure(failure));
        }
        const int moved = brittle::moves - send_moves;
        brittle::moves_until_failure = 0;
        if (failing_move == 0) BOOST_TEST(moved == moves);
        BOOST_TEST(ch.size() + got.size() == 1u, "the value was lost, or received and left in the channel");
        if (ch.size() == 1) {
          auto receive = [&]() -> coral::task<int> {
            brittle v = co_await ch.receive();
            co_return v.value;
          };
          got.push_back(get_within(coral::spawn(ex, receive)));
        }
        BOOST_TEST(got == std::vector<int>{7}, boost::test_tools::per_element());
        BOOST_TEST(lifetime::alive == 1);  // `sent`, moved from
      }
    }
  }
}
}  // namespace

// Invariant 7 inside a select: the value a raced receive got is the channel's until the receiving
// task has it, however many results and tasks the race passes it through. So the receiving side
// moves it once, and if that move throws, the value goes back to the channel, first in line.
BOOST_AUTO_TEST_CASE_TEMPLATE(a_raced_receive_whose_move_throws_leaves_the_value_in_the_channel, Place, every_place) {
  check_a_raced_receive_loses_nothing<Place>(
      "when_any(ch.receive(), d)",
      [](coral::channel<brittle>& ch, std::chrono::milliseconds d) -> coral::task<int> {
        auto won = co_await coral::when_any(ch.receive(), d);
        co_return std::get<0>(won).value;
      },
      1);
  check_a_raced_receive_loses_nothing<Place>(
      "ch.receive() || sleep_for(d)",
      [](coral::channel<brittle>& ch, std::chrono::milliseconds d) -> coral::task<int> {
        auto won = co_await (ch.receive() || coral::sleep_for(d));
        co_return std::get<0>(won).value;
      },
      1);
  check_a_raced_receive_loses_nothing<Place>(
      "with_timeout(d, ch.receive())",
      [](coral::channel<brittle>& ch, std::chrono::milliseconds d) -> coral::task<int> {
        auto v = co_await coral::with_timeout(d, ch.receive());
        co_return v.value;
      },
      1);
  // And what is built of them.
  check_a_raced_receive_loses_nothing<Place>(
      "ch.next() || sleep_for(d)",
      [](coral::channel<brittle>& ch, std::chrono::milliseconds d) -> coral::task<int> {
        auto won = co_await (ch.next() || coral::sleep_for(d));
        co_return std::get<0>(won)->value;
      },
      1);
  check_a_raced_receive_loses_nothing<Place>(
      "(ch.receive() || sleep_for(d)) || sleep_for(d)",
      [](coral::channel<brittle>& ch, std::chrono::milliseconds d) -> coral::task<int> {
        auto won = co_await ((ch.receive() || coral::sleep_for(d)) || coral::sleep_for(d));
        co_return std::get<0>(won).value;
      },
      1);
  check_a_raced_receive_loses_nothing<Place>(
      "sleep_for(d) || (ch.receive() || sleep_for(d))",
      [](coral::channel<brittle>& ch, std::chrono::milliseconds d) -> coral::task<int> {
        auto won = co_await (coral::sleep_for(d) || (ch.receive() || coral::sleep_for(d)));
        co_return std::get<0>(std::get<1>(won)).value;
      },
      1);
  check_a_raced_receive_loses_nothing<Place>(
      "when_any(with_timeout(d, ch.receive()), d)",
      [](coral::channel<brittle>& ch, std::chrono::milliseconds d) -> coral::task<int> {
        auto won = co_await coral::when_any(coral::with_timeout(d, ch.receive()), d);
        co_return std::get<0>(won).value;
      },
      1);
  BOOST_TEST(lifetime::alive == 0);
}

// A job's result is read in place (then(), get_result()): a raced receive's value is taken out of
// the channel's box when the job's task ends, and if that move throws, the job fails with the
// exception and the value is back in the channel.
BOOST_AUTO_TEST_CASE_TEMPLATE(a_job_whose_raced_receive_cannot_take_its_value_leaves_it_in_the_channel, Place,
                              every_place) {
  {
    Place place;
    for (int failing_move : {0, 1}) {
      BOOST_TEST_CONTEXT((failing_move ? "the value's first move fails" : "no move fails")) {
        coral::channel<brittle> ch(1);
        BOOST_TEST_REQUIRE(ch.try_send(brittle(7)));
        brittle::moves_until_failure = failing_move;
        auto job = coral::spawn(place.get_executor(), coral::with_timeout(std::chrono::hours(1), ch.receive()));
        BOOST_TEST_REQUIRE(job.wait_for(patience));
        brittle::moves_until_failure = 0;
        if (failing_move) {
          try {
            job.get_result();
            BOOST_ERROR("the job did not fail");
          } catch (...) {
            BOOST_TEST(is_brittle_failure(std::current_exception()));
          }
          BOOST_TEST(ch.size() == 1u);
          BOOST_TEST(ch.try_receive()->value == 7);
        } else {
          BOOST_TEST(job.get_result().value == 7);
          BOOST_TEST(ch.size() == 0u);
        }
      }
    }
  }
  BOOST_TEST(lifetime::alive == 0);
}

// Shutdown: a task waiting on a channel goes away with its context, and a later close() does not
// touch the dead context.
BOOST_AUTO_TEST_CASE_TEMPLATE(destroying_a_context_frees_tasks_waiting_on_a_channel_and_a_later_close_leaves_it_alone,
                              Context, owned_contexts) {
  coral::channel<int> ch(0);
  coral::channel<counted> full(0);
  coral::job<int> receiver;
  coral::job<> sender;
  {
    Context ctx;
    receiver = coral::spawn(ctx.get_executor(), [&]() -> coral::task<int> {
      lifetime l;
      co_return co_await ch.receive();
    });
    sender = coral::spawn(ctx.get_executor(), [&]() -> coral::task<> {
      lifetime l;
      co_await full.send(counted(1));
    });
    ctx.settle();
    BOOST_TEST(lifetime::alive >= 3);  // two frames and the value being sent (and its moved-from source)
  }
  BOOST_TEST(lifetime::alive == 0);
  ch.close();
  full.close();
  BOOST_TEST(failure_of(receiver) == asio::error::operation_aborted);
  BOOST_TEST(failure_of(sender) == asio::error::operation_aborted);
}

// A plain Asio operation waiting on a channel goes away with the context of its handler, as Asio's
// own pending operations do, and a later close() does not touch the dead context (it must not
// dispatch into the destroyed io_context).
BOOST_AUTO_TEST_CASE(an_async_receive_is_destroyed_with_its_handlers_context_and_close_leaves_it_alone) {
  coral::channel<int> ch(0);
  auto probe = std::make_shared<int>(0);
  std::weak_ptr<int> handler_alive = probe;
  {
    asio::io_context ctx(1);
    ch.async_receive(asio::bind_executor(ctx, [p = std::move(probe)](boost::system::error_code, int) {}));
    ctx.run_for(1ms);
  }
  BOOST_TEST(handler_alive.expired());
  ch.close();
  BOOST_TEST(!ch.try_send(1));
}

namespace {

// Asio's allocation example: the memory of a session's operations is the session's own, and the
// handler keeps the session alive.
struct arena_session : std::enable_shared_from_this<arena_session> {
  alignas(std::max_align_t) unsigned char arena[1024];
  bool arena_used = false;
};
template <class T>
struct arena_allocator {
  using value_type = T;
  arena_session* session;
  explicit arena_allocator(arena_session* s) noexcept : session(s) {}
  template <class U>
  arena_allocator(const arena_allocator<U>& other) noexcept : session(other.session) {}
  T* allocate(std::size_t n) {
    if (!session->arena_used && n * sizeof(T) <= sizeof session->arena) {
      session->arena_used = true;
      return reinterpret_cast<T*>(session->arena);
    }
    return static_cast<T*>(::operator new(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t) noexcept {
    if (reinterpret_cast<unsigned char*>(p) == session->arena) {
      session->arena_used = false;
    } else {
      ::operator delete(p);
    }
  }
  bool operator==(const arena_allocator& other) const noexcept { return session == other.session; }
};

}  // namespace

BOOST_AUTO_TEST_CASE(an_async_receive_in_memory_its_handler_owns_is_freed_before_its_handler_at_shutdown) {
  coral::channel<int> ch(0);
  std::weak_ptr<arena_session> session_alive;
  {
    asio::io_context ctx(1);
    std::shared_ptr<arena_session> session(new arena_session);  // (its memory goes with it, not with the weak_ptr)
    session_alive = session;
    arena_session* s = session.get();
    ch.async_receive(
        asio::bind_allocator(arena_allocator<int>(s),
                             asio::bind_executor(ctx, [keep = std::move(session)](boost::system::error_code, int) {})));
    BOOST_TEST(s->arena_used);
  }  // (ASan: the operation is not touched once its handler, and with it its memory, is gone)
  BOOST_TEST(session_alive.expired());
}

// Plain Asio handlers waiting in async_receive and async_send on a context that is destroyed at a
// random moment while another thread completes them: each operation's handler ran at most once,
// nothing of the context is touched by the waking thread afterwards (ASan, TSan), and every
// operation is freed, its handler with it.
BOOST_AUTO_TEST_CASE(async_operations_woken_from_another_thread_while_their_context_is_destroyed_go_once) {
  std::mt19937 random(20261128);
  for (int round = 0; round < 1000; ++round) {
    coral::channel<int> in(0), out(1);
    auto alive = std::make_shared<int>(0);
    std::weak_ptr<int> handlers_alive = alive;
    std::atomic<int> ran{0};
    std::atomic<bool> stop{false};
    std::thread waker([&] {
      int v = 0;
      while (!stop.load()) {
        static_cast<void>(in.try_send(v++));
        static_cast<void>(out.try_receive());
      }
    });
    {
      asio::io_context ctx(1);
      for (int i = 0; i < 16; ++i) {
        in.async_receive(asio::bind_executor(ctx, [&, a = alive](boost::system::error_code, int) { ++ran; }));
        out.async_send(i, asio::bind_executor(ctx, [&, a = alive](boost::system::error_code) { ++ran; }));
      }
      alive.reset();
      ctx.run_for(std::chrono::microseconds(random() % 200));
    }
    stop = true;
    waker.join();
    BOOST_TEST(handlers_alive.expired(), "round " << round << ": an operation was never freed");
    BOOST_TEST(ran.load() <= 32);
  }
}

namespace {

// Two tasks trading values as fast as they can, until a third task's timer on the same
// executor says stop (or an iteration limit, far beyond what the timer needs, ends the test).
struct ping_pong_outcome {
  long round_trips = 0;
  bool stopped_by_timer = false;
};

ping_pong_outcome ping_pong_until_a_timer_fires(const asio::any_io_executor& ex) {
  auto stop = std::make_shared<std::atomic<bool>>(false);
  auto a = std::make_shared<coral::channel<int>>();
  auto b = std::make_shared<coral::channel<int>>();
  auto ping = coral::spawn(ex, [=]() -> coral::task<long> {
    long n = 0;
    while (!*stop && n < 20'000'000) {
      co_await a->send(1);
      co_await b->receive();
      ++n;
    }
    a->close();
    co_return n;
  });
  auto pong = coral::spawn(ex, [=]() -> coral::task<> {
    while (auto v = co_await a->next()) co_await b->send(*v);
  });
  auto timer = coral::spawn(ex, [=]() -> coral::task<> {
    co_await coral::sleep_for(std::chrono::milliseconds(5));
    *stop = true;
  });
  ping_pong_outcome out;
  out.round_trips = get_within(std::move(ping));
  get_within(std::move(pong));
  out.stopped_by_timer = timer.wait_for(patience);
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(tasks_trading_values_on_one_executor_let_everything_else_on_it_run) {
  // Waking a task on the waker's own executor resumes it on the spot: that must not turn into
  // an endless chain that keeps the executor's other work (here a timer) from ever running.
  coral::event_loop loop;
  running_io_context one_thread(1);
  asio::thread_pool pool(2);
  const std::vector<std::pair<const char*, asio::any_io_executor>> executors{
      {"event_loop", loop.get_executor()},
      {"io_context, 1 thread", one_thread.get_executor()},
      {"strand over thread_pool", asio::make_strand(pool.get_executor())}};
  for (const auto& [name, ex] : executors) {
    BOOST_TEST_CONTEXT(name) {
      const auto out = ping_pong_until_a_timer_fires(ex);
      BOOST_TEST(out.stopped_by_timer);
      BOOST_TEST(out.round_trips > 0);
      BOOST_TEST(out.round_trips < 20'000'000);
    }
  }
  pool.join();
}

// The chat-room pattern across contexts: sessions hold a socket and a timer of their own context
// and wait on a channel that a task on another context keeps feeding. Destroying their context at
// a random moment frees them on the thread destroying it, while it still exists (never on the
// sender's thread afterwards), and no value is lost: each was received, is still in the channel,
// or went with a receiver that was handed it and destroyed before it resumed (one per receiver).
BOOST_AUTO_TEST_CASE(destroying_a_context_whose_receivers_another_context_feeds_frees_them_there_and_loses_nothing) {
  coral::event_loop sender_loop;
  std::mt19937 random(5);
  for (int round = 0; round < 150; ++round) {
    auto ch = std::make_shared<coral::channel<int>>(round % 2);
    auto received = std::make_shared<std::atomic<long>>(0);
    auto sender = coral::spawn(sender_loop.get_executor(), [ch]() -> coral::task<long> {
      long sent = 0;
      try {
        for (;;) {
          co_await ch->send(1);
          ++sent;
        }
      } catch (const coral::channel_closed&) {
      }
      co_return sent;
    });
    {
      asio::io_context ctx(1);
      for (int i = 0; i < 4; ++i) {
        coral::spawn(ctx, [&ctx, ch, received]() -> coral::task<> {
          io_objects_of own(ctx);
          for (;;) *received += co_await ch->receive();
        });
      }
      ctx.run_for(std::chrono::microseconds(random() % 2000));
    }  // destroyed while the sender goes on
    BOOST_TEST_REQUIRE(lifetime::alive == 0);
    ch->close();
    const long sent = get_within(std::move(sender));
    long buffered = 0;
    while (ch->try_receive()) ++buffered;
    BOOST_TEST_REQUIRE(sent >= received->load() + buffered);
    BOOST_TEST_REQUIRE(sent <= received->load() + buffered + 4);
  }
}

BOOST_AUTO_TEST_SUITE_END()
