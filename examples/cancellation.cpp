// Cleanup that must finish after a cancellation, with coral::non_cancellable.
//
// A session collects records from its client and keeps them until it saves them. When it is
// cancelled (here by with_timeout, because the client went quiet), the records it holds must
// still be saved and the client told goodbye. Cancellation in coral is level-triggered: once a
// task is cancelled, every co_await in it fails at once with operation_aborted, so cleanup that
// itself waits is awaited through coral::non_cancellable(...), which the task's cancellation does
// not reach. That cleanup can still give up on its own terms: the goodbye has a time limit of its
// own.
#include <boost/asio/error.hpp>
#include <boost/system/system_error.hpp>
#include <chrono>
#include <coral/coral.hpp>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

using namespace std::chrono_literals;

namespace {

struct store {
  std::vector<std::string> unsaved;
  std::vector<std::string> saved;
};

coral::task<> save_all(store& records) {
  for (auto& record : records.unsaved) {
    co_await coral::sleep_for(5ms);  // one write per record
    records.saved.push_back(std::move(record));
  }
  records.unsaved.clear();
  std::printf("cleanup: %zu records saved\n", records.saved.size());
}

// Nobody reads `client` any more (the client went away), so the goodbye would wait forever.
coral::task<> say_goodbye(coral::channel<std::string>& client) {
  try {
    co_await coral::with_timeout(50ms, client.send("goodbye"));
    std::printf("cleanup: goodbye delivered\n");
  } catch (const coral::timeout_error&) {
    std::printf("cleanup: the client took no goodbye within 50ms, giving up on it\n");
  }
}

coral::task<> clean_up(store& records, coral::channel<std::string>& client) {
  co_await save_all(records);
  co_await say_goodbye(client);
}

coral::task<> session(coral::channel<std::string>& requests, coral::channel<std::string>& client, store& records) {
  std::exception_ptr cancelled;
  try {
    for (;;) {
      records.unsaved.push_back(co_await requests.receive());
      std::printf("session: got %s\n", records.unsaved.back().c_str());
    }
  } catch (const boost::system::system_error& e) {
    if (e.code() != boost::asio::error::operation_aborted) throw;
    cancelled = std::current_exception();  // (C++ allows no co_await inside a catch block)
  }
  std::printf("session: cancelled with %zu records unsaved\n", records.unsaved.size());
  // The task stays cancelled: a plain co_await fails at once...
  try {
    co_await clean_up(records, client);
  } catch (const boost::system::system_error&) {
    std::printf("session: a plain co_await of the cleanup fails at once, nothing saved\n");
  }
  // ...while the cleanup awaited through non_cancellable runs to its end.
  co_await coral::non_cancellable(clean_up(records, client));
  std::printf("session: cleaned up\n");
  std::rethrow_exception(cancelled);  // the session still ends as cancelled
}

}  // namespace

int main() {
  coral::event_loop loop;
  coral::sync_wait(loop.get_executor(), []() -> coral::task<> {
    coral::channel<std::string> requests(8);
    coral::channel<std::string> client(0);  // a rendezvous: a send waits for a receiver
    store records;
    for (auto r : {"record 1", "record 2", "record 3"}) requests.try_send(r);
    // Three records are waiting, then the client goes quiet. The session gets 100ms in all: then
    // it is cancelled, and with_timeout returns once the session has ended, cleanup included.
    try {
      co_await coral::with_timeout(100ms, session(requests, client, records));
    } catch (const coral::timeout_error&) {
      std::printf("main: the session timed out; saved: %zu records, unsaved: %zu\n", records.saved.size(),
                  records.unsaved.size());
    }
  }());
}
