#define BOOST_TEST_MODULE coral channel stress
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <numeric>
#include <random>
#include <vector>

#include "../test_support.hpp"

using namespace coral_test;
namespace asio = boost::asio;

namespace {

constexpr int producers = 4;
constexpr int consumers = 4;

struct tally {
  long count = 0;
  long long sum = 0;
};

}  // namespace

BOOST_AUTO_TEST_CASE(four_by_four_on_two_threads_every_value_exactly_once) {
  const long total = workload_size("CORAL_STRESS_VALUES", 1'000'000);
  for (std::size_t capacity : {0u, 1u, 64u}) {
    asio::thread_pool pool(2);
    coral::channel<long> ch(capacity);
    std::atomic<int> producers_left{producers};
    std::vector<coral::job<>> senders;
    std::vector<coral::job<tally>> receivers;
    for (int p = 0; p < producers; ++p) {
      senders.push_back(coral::spawn(pool, [&, p]() -> coral::task<> {
        for (long v = p; v < total; v += producers) co_await ch.send(v);
        if (--producers_left == 0) ch.close();
      }));
    }
    for (int c = 0; c < consumers; ++c) {
      receivers.push_back(coral::spawn(pool, [&]() -> coral::task<tally> {
        tally t;
        while (auto v = co_await ch.next()) {
          ++t.count;
          t.sum += *v;
        }
        co_return t;
      }));
    }
    tally all;
    for (auto& r : receivers) {
      auto t = get_within(r, workload_patience);
      all.count += t.count;
      all.sum += t.sum;
    }
    for (auto& s : senders) get_within(s, workload_patience);
    BOOST_TEST(all.count == total);
    BOOST_TEST(all.sum == static_cast<long long>(total) * (total - 1) / 2);
  }
}

BOOST_AUTO_TEST_CASE(random_closes_and_cancellations_lose_and_duplicate_nothing) {
  const long per_round = std::max(1000L, workload_size("CORAL_STRESS_VALUES", 1'000'000) / 50);
  for (unsigned seed = 1; seed <= 12; ++seed) {
    std::mt19937 rng(seed);
    const std::size_t capacity = std::vector<std::size_t>{0, 1, 64}[seed % 3];
    asio::thread_pool pool(2);
    coral::channel<long> ch(capacity);
    std::atomic<long> received_count{0};
    // Each task records what it did; read only after it has ended.
    std::vector<std::vector<long>> sent(producers), received(consumers);
    std::vector<coral::job<>> jobs;
    for (int p = 0; p < producers; ++p) {
      jobs.push_back(coral::spawn(asio::make_strand(pool), [&, p]() -> coral::task<> {
        for (long v = p; v < per_round; v += producers) {
          try {
            co_await ch.send(v);
          } catch (const boost::system::system_error&) {  // closed or cancelled: v was not delivered
            co_return;
          }
          sent[p].push_back(v);
        }
      }));
    }
    for (int c = 0; c < consumers; ++c) {
      jobs.push_back(coral::spawn(asio::make_strand(pool), [&, c]() -> coral::task<> {
        try {
          while (auto v = co_await ch.next()) {
            received[c].push_back(*v);
            ++received_count;
          }
        } catch (const boost::system::system_error&) {  // cancelled
        }
      }));
    }
    // Disturb the run at random points of progress: cancel two random tasks, then close.
    auto wait_for_progress = [&](long target) {
      auto deadline = std::chrono::steady_clock::now() + patience;
      while (received_count < target && std::chrono::steady_clock::now() < deadline) {
        if (std::all_of(jobs.begin(), jobs.end(), [](auto& j) { return j.done(); })) return;
        std::this_thread::yield();
      }
    };
    std::uniform_int_distribution<long> point(0, per_round / 2);
    std::uniform_int_distribution<int> which(0, producers + consumers - 1);
    wait_for_progress(point(rng));
    jobs[which(rng)].cancel();
    wait_for_progress(point(rng));
    jobs[which(rng)].cancel();
    wait_for_progress(point(rng) + per_round / 4);
    ch.close();
    for (auto& j : jobs) {
      BOOST_TEST(j.wait_for(patience));
    }
    std::vector<long> all_sent, all_received;
    for (auto& s : sent) all_sent.insert(all_sent.end(), s.begin(), s.end());
    for (auto& r : received) all_received.insert(all_received.end(), r.begin(), r.end());
    while (auto v = ch.try_receive()) all_received.push_back(*v);  // buffered after the consumers stopped
    std::sort(all_sent.begin(), all_sent.end());
    std::sort(all_received.begin(), all_received.end());
    BOOST_TEST((std::adjacent_find(all_received.begin(), all_received.end()) == all_received.end()));
    BOOST_TEST(all_received == all_sent, "seed " << seed << ": every value reported sent is received, nothing else");
  }
}
