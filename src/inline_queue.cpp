#include "coral/detail/core/inline_queue.hpp"

namespace coral::detail {

namespace {

struct thread_queue {
  std::unique_ptr<inline_queue::item> head;
  inline_queue::item* tail = nullptr;
  bool running = false;
};

thread_local thread_queue this_thread_queue;

void run_queued(thread_queue& queue) {
  // Flagged as running for the whole loop, so that work posted by an item waits its turn. If an
  // item throws, what is left stays queued for the next post on this thread.
  struct running_flag {
    thread_queue& queue;
    bool was_running;
    ~running_flag() { queue.running = was_running; }
  } flag{queue, queue.running};
  queue.running = true;
  while (queue.head) {
    std::unique_ptr<inline_queue::item> work = std::move(queue.head);
    queue.head = std::move(work->next);
    if (!queue.head) queue.tail = nullptr;
    work->run();
  }
}

}  // namespace

void inline_queue::push(std::unique_ptr<item> work) {
  thread_queue& queue = this_thread_queue;
  item* raw = work.get();
  if (queue.tail) {
    queue.tail->next = std::move(work);
  } else {
    queue.head = std::move(work);
  }
  queue.tail = raw;
  if (!queue.running) run_queued(queue);
}

void inline_queue::run_pending() {
  thread_queue& queue = this_thread_queue;
  if (queue.running) run_queued(queue);
}

}  // namespace coral::detail
