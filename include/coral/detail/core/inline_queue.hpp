#pragma once

#include <memory>
#include <type_traits>
#include <utility>

namespace coral::detail {

// Work posted to an inline_executor. Run on the spot, a chain of posts (a task that yields a
// million times, two tasks passing a value back and forth) would nest one call per step until
// the stack overflows. So work posted while the thread is already running posted inline work
// waits in a queue of that thread and runs when the running work returns: the first post on a
// thread runs at once, and the stack stays as deep as one step, however long the chain.
class inline_queue {
 public:
  // Runs `f` now if this thread runs no posted inline work, otherwise once that work returns.
  template <class F>
  static void post(F&& f) {
    push(std::make_unique<item_of<std::decay_t<F>>>(std::forward<F>(f)));
  }

  // Runs what is queued on this thread, here: for a thread about to block inside posted work
  // until something happens that queued work may be needed for.
  static void run_pending();

  struct item {
    virtual ~item() = default;
    virtual void run() = 0;
    std::unique_ptr<item> next;
  };
  template <class F>
  struct item_of final : item {
    explicit item_of(F&& f) : function(std::move(f)) {}
    explicit item_of(const F& f) : function(f) {}
    void run() override { function(); }
    F function;
  };

 private:
  static void push(std::unique_ptr<item> work);
};

}  // namespace coral::detail
