#define BOOST_TEST_MODULE coral cancellation stress
#include <algorithm>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/test/unit_test.hpp>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "../test_support.hpp"

// Tasks on a mix of executors wait on sleeps, channel sends and receives, a socket read and
// children on other executors; another thread cancels them at random moments. Every job must end
// (normally or with operation_aborted) within patience, every channel value must be accounted for
// exactly once, and every frame and value must be freed.

using namespace coral_test;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

struct item : lifetime {
  long id = 0;
  item() = default;
  explicit item(long i) : id(i) {}
};

coral::task<int> sleepy(int rounds) {
  lifetime l;
  for (int i = 0; i < rounds; ++i) co_await 1ms;
  co_return rounds;
}

coral::task<int, coral::pool_executor> sleepy_on_pool(int rounds) {
  lifetime l;
  for (int i = 0; i < rounds; ++i) co_await 1ms;
  co_return rounds;
}

enum class work { sleep, receive, send, socket_read, child_on, bound_child, yield_loop, count };
const char* const work_names[] = {"sleep",          "receive",          "send",  "socket read",
                                  "child via on()", "bound pool child", "yields"};

struct round_state {
  coral::channel<item> ch;
  std::vector<std::vector<long>> sent, received;  // per task; read only after the task ended
  explicit round_state(std::size_t capacity, std::size_t tasks) : ch(capacity), sent(tasks), received(tasks) {}
};

coral::task<int> body(work w, int index, round_state& st, asio::any_io_executor other,
                      std::shared_ptr<tcp::socket> socket, int amount) {
  lifetime l;
  switch (w) {
    case work::sleep:
      for (int i = 0; i < amount; ++i) co_await 1ms;
      co_return amount;
    case work::receive:
      for (int i = 0; i < amount; ++i) {
        item v = co_await st.ch.receive();
        st.received[index].push_back(v.id);
      }
      co_return amount;
    case work::send:
      for (int i = 0; i < amount; ++i) {
        const long id = index * 100'000L + i;
        co_await st.ch.send(item(id));
        st.sent[index].push_back(id);
      }
      co_return amount;
    case work::socket_read: {
      char byte = 0;
      std::size_t n = co_await socket->async_read_some(asio::buffer(&byte, 1), coral::use_task);
      co_return static_cast<int>(n);
    }
    case work::child_on:
      co_return co_await coral::on(other, sleepy(amount));
    case work::bound_child:
      co_return co_await sleepy_on_pool(amount);
    case work::yield_loop:
      for (int i = 0; i < amount * 20; ++i) co_await coral::yield();
      co_return amount;
    case work::count:
      break;
  }
  co_return -1;
}

}  // namespace

BOOST_AUTO_TEST_CASE(random_cancellation_across_executors_ends_every_job_and_loses_nothing) {
  const int rounds = 30;
  const int tasks_per_round = 36;
  for (int round = 0; round < rounds; ++round) {
    std::mt19937 rng(1000 + round);
    asio::thread_pool pool(2);
    coral::event_loop loop;
    // Declared after the contexts the tasks run on, so that it stops first: a socket read on it
    // may still hold, inside Asio, a task's executor (a strand of the pool, counted as work) just
    // after the task ended, and destroying that executor needs its context alive.
    running_io_context io(2);
    std::vector<std::pair<std::string, asio::any_io_executor>> executors{
        {"io_context, 2 threads", io.get_executor()},
        {"thread_pool", pool.get_executor()},
        {"strand over thread_pool", asio::make_strand(pool.get_executor())},
        {"pool_executor", coral::pool_executor{}},
        {"new_thread_executor", coral::new_thread_executor{}},
        {"event_loop", loop.get_executor()},
    };
    const std::size_t capacity = std::vector<std::size_t>{0, 1, 4}[round % 3];
    round_state st(capacity, tasks_per_round);
    tcp::acceptor acceptor(io.get_executor(), {asio::ip::make_address("127.0.0.1"), 0});
    std::vector<tcp::socket> peers;

    struct spawned {
      coral::job<int> job;
      std::string what;
    };
    std::vector<spawned> jobs;
    for (int i = 0; i < tasks_per_round; ++i) {
      const auto w = static_cast<work>(rng() % static_cast<unsigned>(work::count));
      const auto& [ex_name, ex] = executors[rng() % executors.size()];
      const auto& other = executors[rng() % executors.size()].second;
      // A third of the tasks would run for seconds: only cancellation ends them.
      const int amount = rng() % 3 == 0 ? 5000 : 1 + static_cast<int>(rng() % 8);
      std::shared_ptr<tcp::socket> socket;
      if (w == work::socket_read) {
        peers.emplace_back(io.get_executor());
        peers.back().connect(acceptor.local_endpoint());
        socket = std::make_shared<tcp::socket>(acceptor.accept());
        if (rng() % 2) asio::write(peers.back(), asio::buffer("x", 1));  // this one can complete
      }
      jobs.push_back({coral::spawn(ex, body(w, i, st, other, std::move(socket), amount)),
                      std::string(work_names[static_cast<int>(w)]) + " on " + ex_name});
    }

    // Cancel a random half at random moments from another thread, then everything still running.
    std::thread canceller([&, seed = rng()] {
      std::mt19937 r(seed);
      std::vector<std::size_t> order(jobs.size());
      for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::shuffle(order.begin(), order.end(), r);
      for (std::size_t k = 0; k < order.size() / 2; ++k) {
        std::this_thread::sleep_for(std::chrono::microseconds(r() % 700));  // a random moment, not a wait
        jobs[order[k]].job.cancel();
      }
    });
    canceller.join();
    for (auto& j : jobs) j.job.cancel();

    std::map<std::string, int> outcomes;
    for (auto& j : jobs) {
      BOOST_TEST_CONTEXT("round " << round << ": " << j.what) {
        const bool ended = j.job.wait_for(patience);
        BOOST_TEST_REQUIRE(ended, "the job did not end after cancel()");
        try {
          j.job.get_result();
          ++outcomes["completed"];
        } catch (const boost::system::system_error& e) {
          BOOST_TEST(outcome_of(e) == "aborted");
          ++outcomes[outcome_of(e)];
        } catch (const std::exception& e) {
          BOOST_ERROR("unexpected exception: " << e.what());
        }
      }
    }
    BOOST_TEST_MESSAGE("round " << round << ": completed " << outcomes["completed"] << ", aborted "
                                << outcomes["aborted"]);

    // Every value reported sent was received exactly once or is still in the channel.
    std::vector<long> sent, received;
    for (auto& s : st.sent) sent.insert(sent.end(), s.begin(), s.end());
    for (auto& r : st.received) received.insert(received.end(), r.begin(), r.end());
    st.ch.close();
    while (auto v = st.ch.try_receive()) received.push_back(v->id);
    std::sort(sent.begin(), sent.end());
    std::sort(received.begin(), received.end());
    BOOST_TEST(received == sent, boost::test_tools::per_element());

    peers.clear();
  }
  BOOST_TEST(lifetime::alive == 0);
}

namespace {

coral::task<item> leaf(int us) {
  co_await coral::sleep_for(std::chrono::microseconds(us));
  co_return item(us);
}

coral::task<item, coral::pool_executor> pool_leaf(int us) {
  co_return co_await leaf(us);
}

// A parent on the dying context waits on children that end on a live pool.
coral::task<> waiting_parent(int kind, asio::thread_pool::executor_type pool, int us) {
  lifetime alive;
  switch (kind) {
    case 0:
      co_await coral::on(pool, leaf(us));
      break;
    case 1:
      co_await coral::when_all(pool_leaf(us), pool_leaf(us / 2));
      break;
    case 2:
      co_await coral::when_any(pool_leaf(us), pool_leaf(us + 500));
      break;
    case 3:
      co_await coral::with_timeout(std::chrono::seconds(1), pool_leaf(us));
      break;
    default: {
      coral::task_group g(pool);
      g.spawn(leaf(us));
      co_await g.join();
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(destroying_a_context_while_its_tasks_children_end_on_a_pool_frees_everything) {
  // The children's ends race the context's shutdown: resuming the parent fails (the context is
  // closing) while the shutdown abandons that same parent; waiting on the jobs afterwards must
  // not touch the dead context.
  std::mt19937 rng(7);
  asio::thread_pool pool(2);
  for (int round = 0; round < 200; ++round) {
    const int kind = round % 5;
    std::vector<coral::job<>> jobs;
    {
      asio::io_context ctx(1);
      for (int k = 0; k < 40; ++k) {
        jobs.push_back(
            coral::spawn(ctx, waiting_parent(kind, pool.get_executor(), 500 + static_cast<int>(rng() % 1000))));
      }
      std::thread runner([&] { ctx.run_for(std::chrono::milliseconds(1)); });
      runner.join();
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 1500));  // a random moment, not a wait
    }
    for (auto& j : jobs) {
      BOOST_TEST_CONTEXT("round " << round << ", kind " << kind) {
        BOOST_TEST_REQUIRE(j.wait_for(patience));
        const auto code = failure_of(j);
        BOOST_TEST((!code || code == asio::error::operation_aborted), code.message());
      }
    }
  }
  for (int i = 0; i < 3000 && lifetime::alive != 0; ++i) thread_of(pool.get_executor());
  BOOST_TEST(lifetime::alive == 0);
}

namespace {

// Completed by a thread that knows nothing of coral.
struct outside_value : coral::awaiter<item> {};

coral::task<long> await_outside(std::shared_ptr<outside_value> wait) {
  lifetime alive;
  // An I/O object of the task's context, as a session holds one: the frame must be freed while
  // the context still exists.
  asio::steady_timer pending(co_await coral::this_task::executor, std::chrono::hours(1));
  pending.async_wait([](boost::system::error_code) {});
  co_await coral::yield();  // a moment for a cancel or the resume to come before the await
  item v = co_await *wait;
  co_return v.id;
}

// An execution context of one kind, with its threads, destroyed on request.
class arena {
 public:
  explicit arena(int kind) {
    switch (kind) {
      case 0:
      case 1:
        io_.emplace(kind + 1, kind + 1);  // (one thread: the concurrency hint says so)
        executor_ = io_->get_executor();
        name_ = kind == 0 ? "io_context, 1 thread" : "io_context, 2 threads";
        break;
      case 2:
      case 3:
        pool_ = std::make_unique<asio::thread_pool>(2);
        executor_ = kind == 2 ? asio::any_io_executor(pool_->get_executor())
                              : asio::any_io_executor(asio::make_strand(pool_->get_executor()));
        name_ = kind == 2 ? "thread_pool" : "strand over thread_pool";
        break;
      default:
        loop_ = std::make_unique<coral::event_loop>();
        executor_ = loop_->get_executor();
        name_ = "event_loop";
    }
  }
  const asio::any_io_executor& executor() const { return executor_; }
  const char* name() const { return name_; }

  void destroy() {
    executor_ = {};
    io_.reset();
    if (pool_) {
      pool_->stop();
      pool_->join();
      pool_.reset();
    }
    loop_.reset();
  }

 private:
  std::optional<running_io_context> io_;
  std::unique_ptr<asio::thread_pool> pool_;
  std::unique_ptr<coral::event_loop> loop_;
  asio::any_io_executor executor_;
  const char* name_ = "";
};

}  // namespace

BOOST_AUTO_TEST_CASE(an_awaiter_resumed_from_outside_at_any_moment_of_its_contexts_destruction_frees_everything) {
  // Another thread resumes awaiters (and cancels some of their tasks) while the tasks' context is
  // destroyed: before the await began, while it waits, while the shutdown runs, after it. Every
  // job ends, every value is freed, and no frame is freed after its context.
  constexpr int kinds = 5;
  for (int round = 0; round < 300; ++round) {
    std::mt19937 rng(static_cast<unsigned>(round));
    std::vector<std::shared_ptr<outside_value>> waits;
    std::vector<coral::job<long>> jobs;
    const char* name = "";
    {
      arena context(round % kinds);
      name = context.name();
      for (int k = 0; k < 30; ++k) {
        waits.push_back(std::make_shared<outside_value>());
        jobs.push_back(coral::spawn(context.executor(), await_outside(waits.back())));
      }
      std::thread outside([&, seed = rng()] {
        std::mt19937 r(seed);
        std::vector<std::size_t> order(waits.size());
        for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
        std::shuffle(order.begin(), order.end(), r);
        for (auto k : order) {
          if (r() % 4 == 0) std::this_thread::sleep_for(std::chrono::microseconds(r() % 200));  // a random moment
          if (r() % 8 == 0) jobs[k].cancel();
          waits[k]->resume(item(static_cast<long>(k)));
        }
      });
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 1500));  // a random moment, not a wait
      context.destroy();
      outside.join();
    }
    for (std::size_t k = 0; k < jobs.size(); ++k) {
      BOOST_TEST_CONTEXT("round " << round << " on " << name << ", task " << k) {
        BOOST_TEST_REQUIRE(jobs[k].wait_for(patience));
        try {
          BOOST_TEST(jobs[k].get_result() == static_cast<long>(k));
        } catch (const boost::system::system_error& e) {
          BOOST_TEST(outcome_of(e) == "aborted");
        }
      }
    }
    waits.clear();
    BOOST_TEST_REQUIRE(lifetime::alive == 0, "round " << round << " on " << name);
  }
}
