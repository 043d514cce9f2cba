#pragma once

#include <unistd.h>

#include <atomic>
#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <coral/coral.hpp>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "running_io_context.hpp"

namespace coral_test {

using namespace std::chrono_literals;

// Counts live instances, to prove frames and values are freed (or not copied).
struct lifetime {
  static inline std::atomic<int> alive{0};
  lifetime() { ++alive; }
  lifetime(const lifetime&) { ++alive; }
  lifetime(lifetime&&) noexcept { ++alive; }
  lifetime& operator=(const lifetime&) = default;
  lifetime& operator=(lifetime&&) noexcept = default;
  ~lifetime() { --alive; }
};

// I/O objects of a context, as a session holds them (an open socket, a timer with a wait pending),
// whose destructors touch the context's services: frames holding them must be freed while the
// context still exists. Counts as a lifetime.
struct io_objects_of : lifetime {
  boost::asio::ip::tcp::socket socket;
  boost::asio::steady_timer timer;
  explicit io_objects_of(boost::asio::io_context& ctx) : socket(ctx), timer(ctx, std::chrono::hours(1)) {
    socket.open(boost::asio::ip::tcp::v4());
    timer.async_wait([](boost::system::error_code) {});
  }
};

// An allocator that counts what goes through it, to prove an operation uses its handler's
// associated allocator (and gives back all it took); its until_failure-th allocation (counted
// from 0 across its copies) throws std::bad_alloc, if set.
struct allocation_counts {
  std::atomic<int> allocations{0};
  std::atomic<int> deallocations{0};
  std::atomic<int> until_failure{-1};  // negative: never
  std::atomic<bool> failed{false};
};

template <class T>
struct counting_allocator {
  using value_type = T;
  allocation_counts* counts;
  explicit counting_allocator(allocation_counts& c) noexcept : counts(&c) {}
  template <class U>
  counting_allocator(const counting_allocator<U>& other) noexcept : counts(other.counts) {}
  T* allocate(std::size_t n) {
    if (counts->until_failure.fetch_sub(1) == 0) {
      counts->failed = true;
      throw std::bad_alloc();
    }
    ++counts->allocations;
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, std::size_t n) noexcept {
    ++counts->deallocations;
    std::allocator<T>().deallocate(p, n);
  }
  template <class U>
  bool operator==(const counting_allocator<U>& other) const noexcept {
    return counts == other.counts;
  }
};

// The bound on every wait in the tests: long enough for a loaded sanitizer build, short enough
// that a hang fails instead of stalling CI.
inline constexpr auto patience = 30s;
// For a job that is a whole stress workload (a million values through TSan on a shared machine).
inline constexpr auto workload_patience = 300s;

// A stress workload's size: the environment variable `name` if it is set (to run longer by hand),
// else `fallback`.
inline long workload_size(const char* name, long fallback) {
  const char* v = std::getenv(name);
  return v ? std::atol(v) : fallback;
}

template <class T>
T get_within(coral::job<T> j, std::chrono::seconds bound = patience) {
  if (!j.wait_for(bound)) throw std::runtime_error("test: job did not finish in time");
  return j.get_result();
}

// The error a job failed with (an empty code if it succeeded), waiting at most `patience`.
template <class T>
boost::system::error_code failure_of(coral::job<T> j) {
  try {
    get_within(j);
  } catch (const boost::system::system_error& e) {
    return e.code();
  }
  return {};
}

// A race that receives a value (`race(limit)`, a task yielding what it received) in a task on
// `ex`: the value was sent before (`ready`; `limit` is 10 ms), or `send()` sends it from another
// task while the race waits (`limit` is an hour; on a pool the race may find it ready). What the
// race yielded, or nullopt with its exception in `failure`.
template <class Executor, class Send, class Race>
std::optional<int> run_a_raced_receive(Executor ex, bool ready, Send send, Race race, std::exception_ptr& failure) {
  coral::job<> sender;
  std::atomic<bool> sent_later{false};
  auto received = coral::spawn(ex, [&]() -> coral::task<int> {
    if (!ready) {
      sender = coral::spawn(ex, [&]() -> coral::task<> {
        co_await coral::yield();
        sent_later = send();
      });
    }
    co_return co_await race(ready ? std::chrono::milliseconds(10) : std::chrono::hours(1));
  });
  std::optional<int> got;
  try {
    got = get_within(received);
  } catch (...) {
    failure = std::current_exception();
  }
  if (!ready) {
    get_within(sender);
    if (!sent_later) throw std::runtime_error("test: the value could not be sent while the race waited");
  }
  return got;
}

// The thread a executor runs its work on (for a single-threaded executor).
template <class Executor>
std::thread::id thread_of(const Executor& ex) {
  std::promise<std::thread::id> p;
  auto f = p.get_future();
  boost::asio::post(ex, [&] { p.set_value(std::this_thread::get_id()); });
  if (f.wait_for(patience) != std::future_status::ready) throw std::runtime_error("test: executor does not run");
  return f.get();
}

// Tasks to await in a test: each says what it makes and how long it takes.
inline coral::task<int> value_after(std::chrono::milliseconds d, int v) {
  co_await coral::sleep_for(d);
  co_return v;
}

inline coral::task<int> fail_after(std::chrono::milliseconds d, std::string what) {
  co_await coral::sleep_for(d);
  throw std::runtime_error(what);
}

// Sleeps for an hour unless cancelled; records that it was cancelled and that its frame is gone.
inline coral::task<int> sleeper(std::shared_ptr<std::atomic<int>> aborted) {
  lifetime alive;
  try {
    co_await coral::sleep_for(std::chrono::hours(1));
  } catch (const boost::system::system_error& e) {
    if (e.code() == boost::asio::error::operation_aborted) ++*aborted;
    throw;
  }
  co_return 0;
}

// A task bound to the default pool: it starts there, and its awaiter resumes on its own executor.
inline coral::task<int, coral::pool_executor> on_pool(int v) {
  co_await coral::yield();
  co_return v;
}

// "aborted" if `e` is operation_aborted, else its message: what a test records about an await.
inline std::string outcome_of(const boost::system::system_error& e) {
  return e.code() == boost::asio::error::operation_aborted ? "aborted" : e.code().message();
}

// Captures what coral writes to stderr while it is alive.
class stderr_capture {
 public:
  stderr_capture() : file_(std::tmpfile()), saved_(dup(2)) {
    std::fflush(stderr);
    dup2(fileno(file_), 2);
  }
  ~stderr_capture() {
    restore();
    std::fclose(file_);
  }
  // What was written so far (capture goes on).
  std::string text_so_far() {
    std::fflush(stderr);
    std::rewind(file_);
    std::string s;
    char buf[256];
    while (std::size_t n = std::fread(buf, 1, sizeof buf, file_)) s.append(buf, n);
    return s;
  }
  // Everything written, once the capture has ended.
  std::string text() {
    restore();
    return text_so_far();
  }

 private:
  void restore() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    dup2(saved_, 2);
    close(saved_);
    saved_ = -1;
  }
  std::FILE* file_;
  int saved_;
};

// Execution contexts a test can own and destroy while tasks are suspended on them.
// settle(): returns once the work queued so far has run (the tasks have reached their suspension).
struct owned_io_context {
  static constexpr const char* name = "io_context";
  boost::asio::io_context context;
  boost::asio::io_context::executor_type get_executor() { return context.get_executor(); }
  void settle() {
    context.poll();
    context.restart();
  }
};

struct owned_event_loop {
  static constexpr const char* name = "event_loop";
  coral::event_loop loop;
  coral::event_loop::executor_type get_executor() { return loop.get_executor(); }
  void settle() {
    for (int i = 0; i < 2; ++i) thread_of(loop.get_executor());
  }
};

#define CORAL_TEST_OWNED_CONTEXTS
using owned_contexts = std::tuple<owned_io_context, owned_event_loop>;

// Where a test's tasks run, as a test body sees it.
struct place {
  virtual ~place() = default;
  virtual boost::asio::any_io_executor get_executor() = 0;
};

// A test case run on each place of `place_list` (a std::tuple of places below), whose body sees
// its place as `place` (a coral_test::place&): the body is compiled once, not once per place.
#define CORAL_TEST_CASE_ON_EACH_PLACE(test_name, place_list)    \
  static void test_name##_on(::coral_test::place& place);       \
  BOOST_AUTO_TEST_CASE_TEMPLATE(test_name, Place, place_list) { \
    Place on;                                                   \
    test_name##_on(on);                                         \
  }                                                             \
  static void test_name##_on(::coral_test::place& place)

// Where a test's tasks run: every executor kind the rules must hold on.
struct on_event_loop : place {
  static constexpr const char* name = "event_loop";
  coral::event_loop loop;
  boost::asio::any_io_executor get_executor() override { return loop.get_executor(); }
};
struct on_io_context_2_threads : place {
  running_io_context context{2};
  boost::asio::any_io_executor get_executor() override { return context.get_executor(); }
};
struct on_thread_pool : place {
  boost::asio::thread_pool pool{2};
  boost::asio::any_io_executor get_executor() override { return pool.get_executor(); }
  ~on_thread_pool() {
    pool.stop();
    pool.join();
  }
};
struct on_pool_strand : place {
  boost::asio::thread_pool pool{2};
  boost::asio::any_io_executor get_executor() override { return boost::asio::make_strand(pool.get_executor()); }
  ~on_pool_strand() {
    pool.stop();
    pool.join();
  }
};
struct on_default_pool : place {
  boost::asio::any_io_executor get_executor() override { return coral::pool_executor{}; }
};
using places = std::tuple<on_event_loop, on_io_context_2_threads, on_thread_pool, on_pool_strand, on_default_pool>;

// The rest of the executor kinds, for rules that must hold on all of them.
struct on_io_context_1_thread : place {
  running_io_context context{1};
  boost::asio::any_io_executor get_executor() override { return context.get_executor(); }
};
struct on_inline_executor : place {
  boost::asio::any_io_executor get_executor() override { return coral::inline_executor{}; }
};
struct on_loop_executor : place {
  boost::asio::any_io_executor get_executor() override { return coral::loop_executor{}; }
};
struct on_new_thread_executor : place {
  boost::asio::any_io_executor get_executor() override { return coral::new_thread_executor{}; }
};
using every_place =
    std::tuple<on_event_loop, on_io_context_1_thread, on_io_context_2_threads, on_thread_pool, on_pool_strand,
               on_default_pool, on_inline_executor, on_loop_executor, on_new_thread_executor>;

}  // namespace coral_test
