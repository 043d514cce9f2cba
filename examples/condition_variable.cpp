// A condition variable: two workers take jobs from a queue guarded by an async_mutex, waiting on
// the condition while it is empty (as with std::condition_variable and std::mutex); the producer
// notifies one worker per job and every worker once the queue is closed. The producer then waits,
// with a timeout, for the workers to report that every job is done.
//
// Everything runs on one event loop thread and waiters are woken first come, first served, so the
// order of the lines below never depends on timing.
#include <chrono>
#include <coral/coral.hpp>
#include <cstdio>
#include <deque>

using namespace std::chrono_literals;

namespace {

struct job_queue {
  coral::async_mutex mutex;
  coral::condition_variable changed;
  std::deque<int> jobs;
  bool closed = false;
  int done = 0;
};

coral::task<> worker(job_queue& q, const char* name) {
  co_await q.mutex.lock();
  for (;;) {
    // Unlocks the mutex while it waits; returns holding it, with the predicate true.
    co_await q.changed.wait(q.mutex, [&] { return !q.jobs.empty() || q.closed; });
    if (q.jobs.empty()) break;  // closed, and nothing left
    const int job = q.jobs.front();
    q.jobs.pop_front();
    q.mutex.unlock();
    std::printf("%s: job %d\n", name, job);
    co_await coral::yield();  // working, without the lock
    co_await q.mutex.lock();
    ++q.done;
    q.changed.notify_all();  // the producer waits for `done`
  }
  q.mutex.unlock();
  std::printf("%s: queue closed\n", name);
}

coral::task<> produce(job_queue& q) {
  for (int job = 1; job <= 4; ++job) {
    co_await q.mutex.lock();
    q.jobs.push_back(job);
    q.mutex.unlock();
    q.changed.notify_one();
  }
  co_await q.mutex.lock();
  try {
    co_await coral::with_timeout(1s, q.changed.wait(q.mutex, [&] { return q.done == 4; }));
    std::printf("producer: all 4 jobs done\n");
  } catch (const coral::timeout_error&) {
    std::printf("producer: timed out, %d jobs done\n", q.done);  // (holding the mutex all the same)
  }
  q.closed = true;
  q.mutex.unlock();
  q.changed.notify_all();
}

}  // namespace

int main() {
  coral::event_loop loop;
  coral::sync_wait(loop.get_executor(), []() -> coral::task<> {
    job_queue q;
    co_await coral::when_all(worker(q, "worker 1"), worker(q, "worker 2"), produce(q));
    std::printf("jobs left: %zu\n", q.jobs.size());
  }());
}
