#define BOOST_TEST_MODULE coral generator
#include <coral/generator.hpp>
// generator.hpp is usable without Asio: it must not bring it in.
#ifdef BOOST_ASIO_VERSION
#error "coral/generator.hpp includes Asio"
#endif

#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <functional>
#include <limits>
#include <list>
#include <memory>
#include <ranges>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

// Opened before the using-declarations: the suite is a namespace named `generator`, which a
// `generator` declared at file scope would clash with.
BOOST_AUTO_TEST_SUITE(generator)

using coral::elements_of;
using coral::generator;

// clang before 15 cannot compile libstdc++'s views at all (std::views::iota(1, 5), or
// std::views::take of a std::vector, fail the same way): the checks with std::views are left out
// there.
#if defined(__clang__) && __clang_major__ < 15 && defined(__GLIBCXX__)
#define CORAL_TEST_STD_VIEWS 0
#else
#define CORAL_TEST_STD_VIEWS 1
#endif

namespace {

// A value that counts its live instances, copies and moves: the generator must neither leak nor
// copy values.
struct payload {
  static inline int alive = 0;
  static inline int copies = 0;
  static inline int moves = 0;
  int value = 0;
  explicit payload(int v) : value(v) { ++alive; }
  payload(const payload& other) : value(other.value) {
    ++alive;
    ++copies;
  }
  payload(payload&& other) noexcept : value(other.value) {
    ++alive;
    ++moves;
  }
  payload& operator=(const payload&) = delete;
  payload& operator=(payload&&) = delete;
  ~payload() { --alive; }
};

struct counters_reset {
  counters_reset() { payload::alive = payload::copies = payload::moves = 0; }
  ~counters_reset() { BOOST_TEST(payload::alive == 0); }
};

// Where the stack is now: the frame address of a function that is never inlined.
[[gnu::noinline]] std::uintptr_t stack_position() {
  return reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
}
std::uintptr_t distance(std::uintptr_t a, std::uintptr_t b) {
  return a > b ? a - b : b - a;
}
// A stack that grows by one frame per nesting level or transform would be far deeper than this.
constexpr std::uintptr_t flat_stack = 64 * 1024;

generator<int> count(int from, int to) {
  for (int i = from; i < to; ++i) co_yield i;
}

// Counts every value it computes (up to 1000, so that a regression fails instead of hanging).
generator<int> counting(int& computed) {
  for (int i = 0; i < 1000; ++i) {
    ++computed;
    co_yield i;
  }
}

template <class T>
std::vector<std::remove_cvref_t<T>> collect(generator<T> g) {
  std::vector<std::remove_cvref_t<T>> out;
  for (auto&& v : g) out.push_back(v);
  return out;
}

using ints = std::vector<int>;

}  // namespace

// ---- the range and the articles' interface

static_assert(std::ranges::input_range<generator<int>>);
static_assert(std::ranges::input_range<generator<std::unique_ptr<int>>>);
static_assert(std::ranges::input_range<generator<const std::string&>>);
static_assert(std::ranges::input_range<generator<int&>>);
static_assert(std::is_same_v<std::ranges::range_reference_t<generator<int>>, int&&>);
static_assert(std::is_same_v<std::ranges::range_value_t<generator<int>>, int>);
static_assert(std::is_same_v<std::ranges::range_reference_t<generator<const std::string&>>, const std::string&>);
static_assert(std::is_same_v<std::ranges::range_value_t<generator<const std::string&>>, std::string>);
static_assert(!std::is_copy_constructible_v<generator<int>> && std::is_nothrow_move_constructible_v<generator<int>>);
#if CORAL_TEST_STD_VIEWS
static_assert(std::ranges::input_range<decltype(count(0, 1) | std::views::take(1))>);
static_assert(
    std::ranges::input_range<decltype(std::declval<generator<int>&>() | std::views::filter([](int) { return true; }))>);
#endif

BOOST_AUTO_TEST_CASE(has_next_and_next_walk_the_values_then_next_throws_out_of_range) {
  auto g = count(0, 3);
  ints got;
  while (g.has_next()) got.push_back(g.next());
  BOOST_TEST(got == (ints{0, 1, 2}), boost::test_tools::per_element());
  BOOST_TEST(!g.has_next());
  BOOST_CHECK_THROW(g.next(), std::out_of_range);
}

BOOST_AUTO_TEST_CASE(range_for_visits_every_value_in_order) {
  ints got;
  for (int v : count(3, 7)) got.push_back(v);
  BOOST_TEST(got == (ints{3, 4, 5, 6}), boost::test_tools::per_element());
}

#if CORAL_TEST_STD_VIEWS
BOOST_AUTO_TEST_CASE(std_views_take_filter_and_transform_work_on_lvalue_and_rvalue_generators) {
  ints got;
  for (int v : count(0, 100) | std::views::filter([](int x) { return x % 3 == 0; }) |
                   std::views::transform([](int x) { return x * 10; }) | std::views::take(4)) {
    got.push_back(v);
  }
  BOOST_TEST(got == (ints{0, 30, 60, 90}), boost::test_tools::per_element());

  auto g = count(0, 10);
  got.clear();
  for (int v : g | std::views::take(3)) got.push_back(v);
  BOOST_TEST(got == (ints{0, 1, 2}), boost::test_tools::per_element());
  // take(3) stopped at the third value: the generator continues after it.
  BOOST_TEST(g.next() == 3);
}
#endif

BOOST_AUTO_TEST_CASE(has_next_does_not_skip_the_value_it_ran_up_to) {
  auto g = count(0, 3);
  BOOST_TEST(g.has_next());
  BOOST_TEST(g.has_next());
  BOOST_TEST(g.next() == 0);
  BOOST_TEST(g.has_next());
  ints rest;
  for (int v : g) rest.push_back(v);  // begin() starts at the value has_next() ran up to
  BOOST_TEST(rest == (ints{1, 2}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_default_constructed_or_moved_from_generator_is_empty) {
  generator<int> empty;
  BOOST_TEST(!empty.has_next());
  BOOST_TEST((empty.begin() == empty.end()));
  BOOST_CHECK_THROW(empty.next(), std::out_of_range);
  auto g = count(0, 2);
  auto taken = std::move(g);
  BOOST_TEST(!g.has_next());
  BOOST_TEST(taken.next() == 0);
  BOOST_TEST(std::move(g).map([](int x) { return x; }).sum() == 0);
}

BOOST_AUTO_TEST_CASE(a_generator_can_be_consumed_on_another_thread_between_calls) {
  auto g = count(0, 1000);
  long sum = 0;
  for (int i = 0; i < 500; ++i) sum += g.next();
  std::thread([&] { sum += std::move(g).map([](int x) { return x; }).sum(); }).join();
  BOOST_TEST(sum == 999 * 1000 / 2);
}

// ---- laziness

BOOST_AUTO_TEST_CASE(nothing_runs_before_the_first_value_is_asked_for) {
  int computed = 0;
  auto g = counting(computed);
  auto mapped = std::move(g).map([](int x) { return x + 1; }).filter([](int) { return true; }).take(5);
  BOOST_TEST(computed == 0);
  BOOST_TEST(mapped.has_next());
  BOOST_TEST(computed == 1);
}

BOOST_AUTO_TEST_CASE(the_body_runs_only_up_to_the_value_asked_for) {
  std::vector<std::string> log;
  auto g = [](std::vector<std::string>& log) -> generator<int> {
    log.push_back("start");
    co_yield 1;
    log.push_back("after 1");
    co_yield 2;
    log.push_back("after 2");
  }(log);
  BOOST_TEST(g.next() == 1);
  BOOST_TEST(log == (std::vector<std::string>{"start"}), boost::test_tools::per_element());
  BOOST_TEST(g.next() == 2);
  BOOST_TEST(log == (std::vector<std::string>{"start", "after 1"}), boost::test_tools::per_element());
  BOOST_TEST(!g.has_next());
  BOOST_TEST(log.size() == 3u);
}

// ---- no copies, no leaks

BOOST_FIXTURE_TEST_CASE(yielding_a_temporary_copies_and_moves_nothing, counters_reset) {
  auto g = []() -> generator<payload> {
    for (int i = 0; i < 3; ++i) co_yield payload(i);
  }();
  int sum = 0;
  for (auto&& p : g) sum += p.value;
  BOOST_TEST(sum == 3);
  BOOST_TEST(payload::copies == 0);
  BOOST_TEST(payload::moves == 0);
}

BOOST_FIXTURE_TEST_CASE(yielding_an_lvalue_hands_out_a_reference_to_that_object, counters_reset) {
  payload* address = nullptr;
  auto g = [](payload*& address) -> generator<payload> {
    payload mine(7);
    address = &mine;
    co_yield mine;
    co_yield mine;  // the consumer's change is visible here
  }(address);
  auto it = g.begin();
  payload&& first = *it;
  BOOST_TEST(&first == address);
  first.value = 8;
  ++it;
  BOOST_TEST((*it).value == 8);
  BOOST_TEST(payload::copies == 0);
  BOOST_TEST(payload::moves == 0);
}

BOOST_FIXTURE_TEST_CASE(next_moves_the_value_out_once, counters_reset) {
  auto g = []() -> generator<payload> { co_yield payload(5); }();
  payload p = g.next();
  BOOST_TEST(p.value == 5);
  BOOST_TEST(payload::copies == 0);
  BOOST_TEST(payload::moves == 1);
}

BOOST_FIXTURE_TEST_CASE(yielding_a_const_lvalue_copies_it_exactly_once, counters_reset) {
  auto g = []() -> generator<payload> {
    const payload fixed(3);
    co_yield fixed;
  }();
  for (auto&& p : g) BOOST_TEST(p.value == 3);
  BOOST_TEST(payload::copies == 1);
}

BOOST_AUTO_TEST_CASE(move_only_values_are_yielded_and_taken_without_copies) {
  auto g = []() -> generator<std::unique_ptr<int>> {
    auto mine = std::make_unique<int>(1);
    co_yield mine;  // a reference to `mine`: the consumer below takes it
    co_yield std::make_unique<int>(2);
  }();
  std::unique_ptr<int> first = g.next();
  std::unique_ptr<int> second = g.next();
  BOOST_TEST(*first == 1);
  BOOST_TEST(*second == 2);
  auto mapped = std::move(g).map([](std::unique_ptr<int> p) { return p; });
  BOOST_TEST(!mapped.has_next());
}

BOOST_AUTO_TEST_CASE(a_generator_of_references_hands_out_references_and_next_returns_them) {
  std::vector<std::string> words{"a", "b"};
  auto g = [](std::vector<std::string>& words) -> generator<std::string&> {
    for (auto& w : words) co_yield w;
  }(words);
  std::string& first = g.next();
  BOOST_TEST(&first == &words[0]);
  for (std::string& w : g) w += "!";
  BOOST_TEST(words[1] == "b!");

  auto c = [](const std::vector<std::string>& words) -> generator<const std::string&> {
    for (const auto& w : words) co_yield w;
    co_yield std::string("temporary");  // a temporary lives until the body resumes
  }(words);
  BOOST_TEST(&c.next() == &words[0]);
  BOOST_TEST(c.next() == "b!");
  BOOST_TEST(c.next() == "temporary");
}

BOOST_FIXTURE_TEST_CASE(destroying_an_unfinished_generator_frees_its_frames_and_runs_destructors, counters_reset) {
  auto body = []() -> generator<int> {
    payload local(1);
    co_yield 1;
    co_yield 2;
  };
  {
    auto g = body();
    BOOST_TEST(payload::alive == 0);  // lazy: the local does not exist yet
    BOOST_TEST(g.next() == 1);
    BOOST_TEST(payload::alive == 1);
  }
  BOOST_TEST(payload::alive == 0);
  {
    // Nested and chained frames too.
    auto nesting = [](auto body) -> generator<int> {
      payload outer(0);
      co_yield elements_of(body());
    }(body);
    auto chain = std::move(nesting).map([p = std::make_shared<payload>(9)](int x) { return x; }).take(5);
    BOOST_TEST(chain.next() == 1);
    BOOST_TEST(payload::alive == 3);
  }
  BOOST_TEST(payload::alive == 0);
}

// ---- exceptions

BOOST_AUTO_TEST_CASE(an_exception_in_the_body_reaches_the_consumer_when_it_asks_for_the_next_value) {
  auto body = []() -> generator<int> {
    co_yield 1;
    throw std::runtime_error("boom");
  };
  auto g = body();
  BOOST_TEST(g.next() == 1);  // nothing thrown yet
  BOOST_CHECK_THROW(g.has_next(), std::runtime_error);
  BOOST_TEST(!g.has_next());  // the generator has ended

  auto h = body();
  auto it = h.begin();
  BOOST_CHECK_THROW(++it, std::runtime_error);
  BOOST_CHECK_THROW(body().sum(), std::runtime_error);
  BOOST_CHECK_THROW(body().map([](int x) { return x; }).filter([](int) { return true; }).sum(), std::runtime_error);
}

BOOST_AUTO_TEST_CASE(an_exception_before_the_first_value_propagates_from_begin) {
  auto g = []() -> generator<int> {
    throw std::logic_error("early");
    co_return;
  }();
  BOOST_CHECK_THROW(g.begin(), std::logic_error);
  BOOST_TEST(!g.has_next());
}

BOOST_AUTO_TEST_CASE(an_exception_in_a_nested_generator_propagates_out_of_its_co_yield) {
  auto g = []() -> generator<int> {
    co_yield 1;
    bool caught = false;
    try {
      co_yield elements_of([]() -> generator<int> {
        co_yield 2;
        throw std::runtime_error("inner");
      }());
    } catch (const std::runtime_error&) {
      caught = true;  // caught by the parent, which carries on
    }
    if (caught) co_yield 3;
    co_yield 4;
  }();
  BOOST_TEST(collect(std::move(g)) == (ints{1, 2, 3, 4}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(an_exception_thrown_by_for_each_function_leaves_the_body_alone_and_the_generator_usable) {
  bool body_saw_it = false;
  auto g = [](bool& body_saw_it) -> generator<int> {
    for (int i = 0; i < 4; ++i) {
      try {
        co_yield i;
      } catch (...) {
        body_saw_it = true;
      }
    }
  }(body_saw_it);
  BOOST_CHECK_THROW(g.for_each([](int x) {
    if (x == 1) throw std::runtime_error("consumer");
  }),
                    std::runtime_error);
  BOOST_TEST(!body_saw_it);
  BOOST_TEST(g.next() == 2);  // 1 was taken by the function that threw
  BOOST_TEST(g.sum() == 3);
}

// ---- transforms

BOOST_AUTO_TEST_CASE(map_applies_its_function_to_each_value_in_order) {
  auto strings = count(1, 4).map([](int x) { return std::string(x, '*'); });
  static_assert(std::is_same_v<decltype(strings), generator<std::string>>);
  BOOST_TEST(collect(std::move(strings)) == (std::vector<std::string>{"*", "**", "***"}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(map_returning_a_reference_gives_a_generator_of_references) {
  struct point {
    int x, y;
  };
  std::vector<point> points{{1, 2}, {3, 4}};
  auto ys = generator<point&>::from(points).map([](point& p) -> int& { return p.y; });
  static_assert(std::is_same_v<decltype(ys), generator<int&>>);
  for (int& y : ys) y = 0;
  BOOST_TEST(points[1].y == 0);
  BOOST_TEST(points[1].x == 3);
}

BOOST_AUTO_TEST_CASE(flat_map_yields_all_elements_of_each_generator_in_order) {
  auto g = count(1, 4).flat_map([](int x) -> generator<int> {
    for (int i = 0; i < x; ++i) co_yield x;
  });
  BOOST_TEST(collect(std::move(g)) == (ints{1, 2, 2, 3, 3, 3}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(filter_keeps_the_values_its_predicate_accepts) {
  BOOST_TEST(collect(count(0, 10).filter([](int x) { return x % 4 == 1; })) == (ints{1, 5, 9}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(take_stops_after_n_values_and_never_computes_the_next) {
  int computed = 0;
  BOOST_TEST(collect(counting(computed).take(3)) == (ints{0, 1, 2}), boost::test_tools::per_element());
  BOOST_TEST(computed == 3);
  computed = 0;
  BOOST_TEST(collect(counting(computed).take(0)).empty());
  BOOST_TEST(computed == 0);  // not even started
  BOOST_TEST(collect(count(0, 2).take(5)) == (ints{0, 1}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(take_while_stops_at_the_first_rejected_value_and_pulls_no_further) {
  int computed = 0;
  BOOST_TEST(collect(counting(computed).take_while([](int x) { return x < 4; })) == (ints{0, 1, 2, 3}),
             boost::test_tools::per_element());
  BOOST_TEST(computed == 5);  // 0..3, and 4, which it rejected
}

BOOST_AUTO_TEST_CASE(for_each_fold_and_sum_consume_the_rest) {
  ints seen;
  auto g = count(0, 5);
  BOOST_TEST(g.next() == 0);
  g.for_each([&](int x) { seen.push_back(x); });
  BOOST_TEST(seen == (ints{1, 2, 3, 4}), boost::test_tools::per_element());
  BOOST_TEST(!g.has_next());
  BOOST_TEST(count(1, 6).fold(1, [](int acc, int x) { return acc * x; }) == 120);
  BOOST_TEST(count(1, 6).fold(std::string(), [](std::string acc, int x) { return acc + std::to_string(x); }) ==
             "12345");
  BOOST_TEST(count(1, 101).sum() == 5050);
  BOOST_TEST(generator<double>::from(0.5, 1.25).sum() == 1.75);
  auto h = count(0, 3);
  BOOST_TEST(h.has_next());  // the value waiting when sum() starts is counted
  BOOST_TEST(h.sum() == 3);
}

BOOST_AUTO_TEST_CASE(under_a_terminal_operation_take_and_take_while_never_compute_the_next_value) {
  int computed = 0;
  BOOST_TEST(counting(computed).take(3).sum() == 3);
  BOOST_TEST(computed == 3);
  computed = 0;
  BOOST_TEST(counting(computed).map([](int x) { return x * 2; }).take(2).take(5).sum() == 2);
  BOOST_TEST(computed == 2);
  computed = 0;
  BOOST_TEST(counting(computed).take_while([](int x) { return x < 3; }).filter([](int) { return true; }).sum() == 3);
  BOOST_TEST(computed == 4);
}

BOOST_AUTO_TEST_CASE(an_exception_thrown_by_a_transform_function_reaches_the_consumer) {
  auto failing = [](int x) {
    if (x == 2) throw std::runtime_error("transform");
    return x;
  };
  auto pred = [&](int x) { return failing(x) >= 0; };
  auto inner = [&](int x) -> generator<int> { co_yield failing(x); };
  for (int consume_by_sum = 0; consume_by_sum < 2; ++consume_by_sum) {
    auto run = [&](generator<int> g) {
      ints got;
      if (consume_by_sum) {
        g.for_each([&](int x) { got.push_back(x); });
      } else {
        for (int x : g) got.push_back(x);
      }
    };
    BOOST_CHECK_THROW(run(count(0, 5).map(failing)), std::runtime_error);
    BOOST_CHECK_THROW(run(count(0, 5).filter(pred)), std::runtime_error);
    BOOST_CHECK_THROW(run(count(0, 5).take_while(pred)), std::runtime_error);
    BOOST_CHECK_THROW(run(count(0, 5).flat_map(inner)), std::runtime_error);
    BOOST_CHECK_THROW(run(count(0, 5).map(failing).take(4).map([](int x) { return x; })), std::runtime_error);
  }
  // The values before the failure went through.
  auto g = count(0, 5).map(failing);
  BOOST_TEST(g.next() == 0);
  BOOST_TEST(g.next() == 1);
  BOOST_CHECK_THROW(g.next(), std::runtime_error);
  BOOST_TEST(!g.has_next());
}

BOOST_FIXTURE_TEST_CASE(map_constructs_its_result_in_place, counters_reset) {
  auto g = count(0, 3).map([](int x) { return payload(x); });
  int sum = 0;
  for (auto&& p : g) sum += p.value;
  BOOST_TEST(sum == 3);
  BOOST_TEST(count(0, 3).map([](int x) { return payload(x); }).fold(0, [](int acc, const payload& p) {
    return acc + p.value;
  }) == 3);
  BOOST_TEST(payload::copies == 0);
  BOOST_TEST(payload::moves == 0);
}

BOOST_FIXTURE_TEST_CASE(transforms_nest_with_elements_of_and_transform_nested_generators, counters_reset) {
  auto inner = []() -> generator<int> {
    payload alive(0);
    co_yield 1;
    co_yield elements_of(count(2, 6));
    co_yield 6;
  };
  auto outer = [](auto inner) -> generator<int> {
    co_yield 0;
    co_yield elements_of(inner().filter([](int x) { return x % 2 == 0; }).map([](int x) { return x * 10; }));
    co_yield 7;
  };
  BOOST_TEST(collect(outer(inner)) == (ints{0, 20, 40, 60, 7}), boost::test_tools::per_element());
  BOOST_TEST(outer(inner).sum() == 127);
  {
    auto unfinished = outer(inner).take(3);
    BOOST_TEST(unfinished.next() == 0);
    BOOST_TEST(unfinished.next() == 20);
    BOOST_TEST(payload::alive == 1);
  }
  BOOST_TEST(payload::alive == 0);
}

BOOST_AUTO_TEST_CASE(stages_of_a_pipeline_run_one_value_at_a_time) {
  std::vector<std::string> log;
  auto say = [&](std::string what, int x) { log.push_back(what + " " + std::to_string(x)); };
  generator<int>::from(1, 2, 3, 4)
      .filter([&](int x) {
        say("filter", x);
        return x % 2 == 0;
      })
      .map([&](int x) {
        say("map", x);
        return x * 10;
      })
      .take(1)
      .for_each([&](int x) { say("for_each", x); });
  BOOST_TEST(log == (std::vector<std::string>{"filter 1", "filter 2", "map 2", "for_each 20"}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_transform_of_a_partly_consumed_generator_starts_at_its_next_value) {
  auto g = count(0, 5);
  BOOST_TEST(g.next() == 0);
  BOOST_TEST(g.has_next());  // 1 is waiting
  BOOST_TEST(collect(std::move(g).map([](int x) { return -x; })) == (ints{-1, -2, -3, -4}),
             boost::test_tools::per_element());
}

BOOST_FIXTURE_TEST_CASE(transforms_copy_nothing, counters_reset) {
  auto source = []() -> generator<payload> {
    for (int i = 0; i < 6; ++i) co_yield payload(i);
  };
  int sum = 0;
  auto g = source()
               .filter([](const payload& p) { return p.value % 2 == 0; })
               .take(2)
               .map([](payload&& p) -> payload&& { return std::move(p); })
               .flat_map([](payload&& p) -> generator<payload> { co_yield std::move(p); });
  for (auto&& p : g) sum += p.value;
  BOOST_TEST(sum == 2);
  BOOST_TEST(payload::copies == 0);
  BOOST_TEST(payload::moves == 0);
}

// ---- factories

BOOST_FIXTURE_TEST_CASE(from_values_stores_them_moving_rvalues_and_copying_lvalues, counters_reset) {
  BOOST_TEST(collect(generator<int>::from(4, 5, 6)) == (ints{4, 5, 6}), boost::test_tools::per_element());
  BOOST_TEST(collect(generator<int>::from()).empty());
  payload kept(1);
  {
    auto g = generator<payload>::from(kept, payload(2));
    BOOST_TEST(payload::copies == 1);
    int sum = 0;
    for (auto&& p : g) sum += p.value;
    BOOST_TEST(sum == 3);
  }
  BOOST_TEST(payload::copies == 1);
  BOOST_TEST(payload::alive == 1);
  auto ptrs = generator<std::unique_ptr<int>>::from(std::make_unique<int>(1), std::make_unique<int>(2));
  BOOST_TEST(*ptrs.next() == 1);
}

BOOST_AUTO_TEST_CASE(from_an_initializer_list_yields_its_elements) {
  BOOST_TEST(collect(generator<int>::from({7, 8, 9})) == (ints{7, 8, 9}), boost::test_tools::per_element());
  auto g = generator<std::string>::from({"a", "b"});  // the list is gone; the generator has its copy
  BOOST_TEST(g.next() == "a");
  BOOST_TEST(g.next() == "b");
}

BOOST_FIXTURE_TEST_CASE(from_an_lvalue_range_copies_each_element_when_asked_and_leaves_the_range_intact,
                        counters_reset) {
  std::vector<payload> values;
  values.reserve(3);
  for (int i = 0; i < 3; ++i) values.emplace_back(i);
  auto g = generator<payload>::from(values);
  BOOST_TEST(payload::copies == 0);
  payload first = g.next();
  BOOST_TEST(payload::copies == 1);
  for (auto p : g) (void)p;  // takes the rest by value: from copies, values keeps its elements
  BOOST_TEST(payload::copies == 3);
  BOOST_TEST(values[2].value == 2);
  std::list<int> list{1, 2, 3};
  BOOST_TEST(generator<int>::from(list).sum() == 6);
  int array[] = {4, 5};
  BOOST_TEST(generator<int>::from(array).sum() == 9);
}

BOOST_FIXTURE_TEST_CASE(from_an_rvalue_range_owns_it_and_moves_elements_out, counters_reset) {
  std::vector<std::unique_ptr<int>> owned;
  owned.push_back(std::make_unique<int>(1));
  owned.push_back(std::make_unique<int>(2));
  auto g = generator<std::unique_ptr<int>>::from(std::move(owned));
  BOOST_TEST(*g.next() == 1);
  BOOST_TEST(*g.next() == 2);
  std::vector<payload> values;
  values.reserve(2);
  values.emplace_back(1);
  values.emplace_back(2);
  int sum = 0;
  for (auto p : generator<payload>::from(std::move(values))) sum += p.value;
  BOOST_TEST(sum == 3);
  BOOST_TEST(payload::copies == 0);
#if CORAL_TEST_STD_VIEWS
  BOOST_TEST(generator<int>::from(std::views::iota(1, 5)).sum() == 10);
#endif
}

BOOST_AUTO_TEST_CASE(from_a_range_into_a_generator_of_references_refers_to_its_elements) {
  std::vector<int> values{1, 2};
  auto g = generator<const int&>::from(values);
  BOOST_TEST(&g.next() == &values[0]);
}

// ---- nesting

BOOST_AUTO_TEST_CASE(elements_of_a_generator_runs_it_in_place_in_order) {
  auto g = []() -> generator<int> {
    co_yield 0;
    co_yield elements_of(count(1, 3));
    co_yield elements_of(generator<int>());  // empty
    co_yield 3;
  }();
  BOOST_TEST(collect(std::move(g)) == (ints{0, 1, 2, 3}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(elements_of_a_partly_consumed_generator_continues_from_its_next_value) {
  auto g = [](generator<int> sub) -> generator<int> { co_yield elements_of(std::move(sub)); };
  auto sub = count(0, 4);
  BOOST_TEST(sub.next() == 0);
  BOOST_TEST(collect(g(std::move(sub))) == (ints{1, 2, 3}), boost::test_tools::per_element());
  auto waiting = count(0, 4);
  BOOST_TEST(waiting.next() == 0);
  BOOST_TEST(waiting.has_next());  // 1 is waiting: it is the first value nested
  BOOST_TEST(collect(g(std::move(waiting))) == (ints{1, 2, 3}), boost::test_tools::per_element());
  auto pushed = count(0, 4);
  BOOST_TEST(pushed.has_next());
  BOOST_TEST(g(std::move(pushed)).sum() == 6);
}

BOOST_AUTO_TEST_CASE(elements_of_an_lvalue_generator_or_of_another_type_yields_its_values) {
  auto lvalue = count(0, 3);
  auto g = [](generator<int>& lvalue) -> generator<long> {
    co_yield elements_of(lvalue);
    co_yield elements_of(count(3, 5));  // generator<int> into generator<long>
  }(lvalue);
  std::vector<long> got;
  for (long v : g) got.push_back(v);
  BOOST_TEST(got == (std::vector<long>{0, 1, 2, 3, 4}), boost::test_tools::per_element());
  BOOST_TEST(!lvalue.has_next());  // consumed, still owned (and destroyed) by its owner
}

BOOST_AUTO_TEST_CASE(elements_of_a_container_or_view_yields_its_elements) {
  std::vector<int> values{1, 2};
  auto g = [](std::vector<int>& values) -> generator<int> {
    co_yield elements_of(values);
    co_yield elements_of(ints(values.begin(), values.end()));  // a temporary container
#if CORAL_TEST_STD_VIEWS
    co_yield elements_of(std::views::iota(5, 7));
#else
    co_yield elements_of(ints{5, 6});
#endif
  }(values);
  BOOST_TEST(collect(std::move(g)) == (ints{1, 2, 1, 2, 5, 6}), boost::test_tools::per_element());
}

// ---- depth: nothing grows the stack

namespace {

struct depth_probe {
  std::uintptr_t deepest = 0;  // the stack position seen furthest from the consumer's
  std::uintptr_t consumer = 0;
  void record() {
    const std::uintptr_t here = stack_position();
    if (distance(here, consumer) > distance(deepest, consumer)) deepest = here;
  }
  std::uintptr_t depth() const { return distance(deepest, consumer); }
};

generator<int> nested(int levels, depth_probe& probe) {
  probe.record();
  if (levels == 0) {
    co_yield 0;
    co_return;
  }
  co_yield levels;
  co_yield elements_of(nested(levels - 1, probe));
  probe.record();
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_million_nested_generators_run_without_growing_the_stack) {
  constexpr int levels = 1'000'000;
  depth_probe probe;
  probe.consumer = stack_position();
  probe.deepest = probe.consumer;
  long sum = 0;
  long n = 0;
  for (int v : nested(levels, probe)) {
    sum += v;
    ++n;
  }
  BOOST_TEST(n == levels + 1);
  BOOST_TEST(sum == long(levels) * (levels + 1) / 2);
  BOOST_TEST(probe.depth() < flat_stack);
  // The same, pushed to a terminal operation.
  probe.deepest = probe.consumer;
  BOOST_TEST(nested(levels, probe).fold(0L, [](long acc, int v) { return acc + v; }) == sum);
  BOOST_TEST(probe.depth() < flat_stack);
}

BOOST_FIXTURE_TEST_CASE(destroying_a_million_unfinished_nested_generators_frees_them_innermost_first, counters_reset) {
  struct level_guard {
    int level;
    std::vector<int>& order;
    ~level_guard() {
      if (order.empty() || level < 3) order.push_back(level);
    }
  };
  std::vector<int> order;
  std::function<generator<int>(int)> body = [&](int level) -> generator<int> {
    payload alive(level);
    level_guard guard{level, order};
    if (level == 0) {
      co_yield 0;
      co_return;
    }
    co_yield elements_of(body(level - 1));
  };
  {
    auto g = body(1'000'000);
    BOOST_TEST(g.next() == 0);  // a million and one frames are suspended
    BOOST_TEST(payload::alive == 1'000'001);
  }
  BOOST_TEST(payload::alive == 0);
  BOOST_TEST(order == (ints{0, 1, 2}), boost::test_tools::per_element());  // innermost first
}

BOOST_FIXTURE_TEST_CASE(a_million_chained_transforms_run_and_are_destroyed_without_growing_the_stack, counters_reset) {
  constexpr int chain = 1'000'000;
  depth_probe probe;
  probe.consumer = stack_position();
  probe.deepest = probe.consumer;
  auto g = [](depth_probe& probe) -> generator<int> {
    payload alive(0);
    for (int i = 0;; ++i) {
      probe.record();
      co_yield i;
    }
  }(probe);
  for (int i = 0; i < chain; ++i) g = std::move(g).map([](int x) { return x + 1; });
  BOOST_TEST(g.next() == chain);
  // The rest pushed to a terminal operation: each value goes through the chain in a loop.
  int pushed = 0;
  auto rest = std::move(g).take(2);
  rest.for_each([&](int v) {
    probe.record();
    BOOST_TEST(v == chain + 1 + pushed++);
  });
  BOOST_TEST(pushed == 2);
  BOOST_TEST(probe.depth() < flat_stack);
  BOOST_TEST(payload::alive == 1);  // the source is still there, suspended
  rest = generator<int>();          // destroys a million and two frames, one after the other
  BOOST_TEST(payload::alive == 0);
}

BOOST_AUTO_TEST_CASE(ten_million_values_flow_through_a_chain_of_transforms) {
  constexpr long n = 10'000'000;
  auto evens = count(0, std::numeric_limits<int>::max())
                   .map([](int x) { return long(x) * 2; })
                   .filter([](long x) { return x % 4 == 0; })
                   .map([](long x) { return x / 4; })
                   .take(n);
  long sum = 0;
  long seen = 0;
  for (long v : evens) {
    sum += v;
    ++seen;
  }
  BOOST_TEST(seen == n);
  BOOST_TEST(sum == n * (n - 1) / 2);
}

BOOST_AUTO_TEST_SUITE_END()
