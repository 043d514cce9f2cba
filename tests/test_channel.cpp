#define BOOST_TEST_MODULE coral channel
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/test/unit_test.hpp>
#include <memory>
#include <string>
#include <vector>

#include "test_support.hpp"

using namespace coral_test;
namespace asio = boost::asio;

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
  ch.async_send(1, [&](boost::system::error_code e) { result = e; });
  ch.close();
  ctx.run();
  BOOST_TEST((result == coral::errc::channel_closed));
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
  ch.async_receive(asio::bind_cancellation_slot(signal.slot(), [&](boost::system::error_code e, int) { result = e; }));
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
