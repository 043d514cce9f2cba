#define BOOST_TEST_MODULE coral awaitable operators
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/test/unit_test.hpp>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <variant>

#include "test_support.hpp"

using namespace coral_test;
namespace asio = boost::asio;
// As code ported from asio::awaitable has it: Asio's operators must not get in the way.
using namespace asio::experimental::awaitable_operators;

namespace {

coral::task<int> value_after(std::chrono::milliseconds d, int v) {
  co_await coral::sleep_for(d);
  co_return v;
}
coral::task<> nothing_after(std::chrono::milliseconds d) {
  co_await coral::sleep_for(d);
}
coral::task<std::string> text(std::string s) {
  co_return s;
}
coral::task<int> failing_after(std::chrono::milliseconds d) {
  co_await coral::sleep_for(d);
  throw std::runtime_error("failed");
}
// Sleeps for an hour unless cancelled; counts its cancellation.
coral::task<int> sleeper(std::shared_ptr<std::atomic<int>> aborted) {
  try {
    co_await coral::sleep_for(std::chrono::hours(1));
  } catch (const boost::system::system_error&) {
    ++*aborted;
    throw;
  }
  co_return 0;
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

BOOST_AUTO_TEST_CASE_TEMPLATE(a_failure_in_and_cancels_the_other_operand_and_is_rethrown, Place, places) {
  Place place;
  auto aborted = std::make_shared<std::atomic<int>>(0);
  auto j = coral::spawn(place.get_executor(),
                        [aborted]() -> coral::task<> { co_await (sleeper(aborted) && failing_after(1ms)); });
  BOOST_CHECK_THROW(get_within(std::move(j)), std::runtime_error);
  BOOST_TEST(aborted->load() == 1);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(or_ends_with_the_first_operand_to_end_even_a_failure_and_cancels_the_other, Place,
                              places) {
  Place place;
  auto aborted = std::make_shared<std::atomic<int>>(0);
  auto j = coral::spawn(place.get_executor(),
                        [aborted]() -> coral::task<> { co_await (sleeper(aborted) || failing_after(1ms)); });
  BOOST_CHECK_THROW(get_within(std::move(j)), std::runtime_error);
  BOOST_TEST(aborted->load() == 1);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(or_over_asio_operations_cancels_the_loser_as_asio_does, Place, places) {
  // The Asio idiom `op(use_awaitable) || timer.async_wait(use_awaitable)`, with use_task.
  Place place;
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

BOOST_AUTO_TEST_CASE_TEMPLATE(or_over_channel_operations_is_a_lossless_select, Place, places) {
  Place place;
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
