// coral::scheduler runs plain functions (not coroutines) later, at a given time, or periodically,
// on an executor: the housekeeping of a server, such as retrying a call in a moment, sweeping idle
// sessions every so often, or writing a report on another thread. It uses Asio timers on that
// executor (no timer thread), and every submit returns a handle whose cancel() keeps the work
// from starting.
//
// Here the scheduler and the task driving the example share one event loop thread, so a scheduled
// function (but the one sent to a thread pool) never runs at the same time as the task; the task
// waits for the functions with coral::event. Work due at different times runs in the order of its due times.
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <coral/coral.hpp>
#include <cstdio>
#include <stdexcept>

using namespace std::chrono_literals;

namespace {

using clock_type = coral::scheduler::clock;  // the steady clock

// submit_at: the due times are counted from one time point, so their order is certain.
coral::task<> at_given_times(coral::scheduler& s) {
  coral::event last_ran;
  const auto start = clock_type::now();
  s.submit_at([] { std::printf("at: start + 30ms: write the statistics\n"); }, start + 30ms);
  s.submit_at([] { std::printf("at: start + 10ms: retry the call\n"); }, start + 10ms);
  s.submit_at(
      [&last_ran] {
        std::printf("at: start + 50ms: rotate the log\n");
        last_ran.set();
      },
      start + 50ms);
  s.submit_at([] { std::printf("at: start + 20ms: refresh the token\n"); }, start + 20ms);
  co_await last_ran.wait();
}

// submit_after: due a duration from now. A cancelled handle's function never runs.
coral::task<> after_a_delay(coral::scheduler& s) {
  coral::event reminded;
  auto unwanted = s.submit_after([] { std::printf("after: this reminder was cancelled and never prints\n"); }, 10ms);
  s.submit_after(
      [&reminded] {
        std::printf("after: reminder sent 20ms later\n");
        reminded.set();
      },
      20ms);
  unwanted.cancel();
  co_await reminded.wait();
}

// every: a periodic sweep that cancels itself on its third run. A function already running
// finishes; it is not started again.
coral::task<> periodically(coral::scheduler& s) {
  coral::event done;
  int sweeps = 0;
  coral::scheduler::handle sweeper;
  // The first sweep is due one period from now, and it runs on this thread, after this task
  // suspends: `sweeper` is set by then.
  sweeper = s.every(10ms, [&] {
    std::printf("every: sweep %d\n", ++sweeps);
    if (sweeps == 3) {
      sweeper.cancel();
      done.set();
    }
  });
  co_await done.wait();
  co_await coral::sleep_for(50ms);  // five more periods: no sweep comes
  std::printf("every: stopped after %d sweeps\n", sweeps);
}

// on(executor): the same scheduler, with the function run elsewhere (here a thread pool).
coral::task<> on_another_executor(coral::scheduler& s, boost::asio::thread_pool& pool) {
  coral::event written;
  bool on_pool = false;
  s.on(pool.get_executor()).after(10ms).submit([&] {
    on_pool = pool.get_executor().running_in_this_thread();
    written.set();  // event is thread-safe: this task resumes on its own executor
  });
  co_await written.wait();
  std::printf("on: the report was written on the thread pool: %s\n", on_pool ? "yes" : "no");
}

// close(): drops everything still pending; a submit afterwards throws.
void closing(coral::scheduler& s) {
  s.submit_after([] { std::printf("close: dropped by close(), never prints\n"); }, 10ms);
  s.close();
  try {
    s.submit([] {});
  } catch (const std::logic_error& e) {
    std::printf("close: %s\n", e.what());
  }
}

}  // namespace

int main() {
  coral::event_loop loop;
  boost::asio::thread_pool pool(1);
  coral::sync_wait(loop.get_executor(), [](coral::event_loop& loop, boost::asio::thread_pool& pool) -> coral::task<> {
    coral::scheduler s(loop.get_executor());
    co_await at_given_times(s);
    co_await after_a_delay(s);
    co_await periodically(s);
    co_await on_another_executor(s, pool);
    closing(s);
    co_await coral::sleep_for(30ms);  // past the dropped function's due time
  }(loop, pool));
}
