// An async_generator is a generator whose body may co_await: here, the pages of a listing API,
// fetched one round trip at a time, only when the consumer asks for them. The example reads every
// page, then only the first few items of a larger listing (and sees that the pages nobody needed
// are never fetched), then handles a page that fails, and a server that stops answering.
#include <chrono>
#include <coral/coral.hpp>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

using namespace std::chrono_literals;

namespace {

struct page {
  int number;
  std::vector<std::string> items;
};

// Pages 1..page_count of a listing, two items each. Nothing runs before the first next() is
// awaited, and then only up to the page asked for.
coral::async_generator<page> fetch_pages(std::string listing, int page_count) {
  for (int n = 1; n <= page_count; ++n) {
    std::printf("  (fetching page %d of %s)\n", n, listing.c_str());
    co_await coral::sleep_for(10ms);  // the round trip to the server
    page p{n, {listing + "-" + std::to_string(2 * n - 1), listing + "-" + std::to_string(2 * n)}};
    co_yield std::move(p);
  }
}

// An async generator can consume another one: this one turns pages into their items.
coral::async_generator<std::string> items_of(coral::async_generator<page> pages) {
  while (auto p = co_await pages.next()) {
    for (auto& item : p->items) co_yield std::move(item);
  }
}

coral::task<> read_every_page() {
  auto pages = fetch_pages("repos", 3);
  std::printf("pages: generator created, nothing fetched yet\n");
  // next() gives std::optional<page>: nullopt once the body has returned.
  while (auto p = co_await pages.next()) {
    std::printf("pages: page %d has %s, %s\n", p->number, p->items[0].c_str(), p->items[1].c_str());
  }
  std::printf("pages: no more pages\n");
}

coral::task<> read_the_first_few() {
  // filter and take pull from the generator as values are asked for: take(3) stops asking after
  // the third item, so the pages after the one that holds it are never fetched.
  auto odd_items = items_of(fetch_pages("issues", 10))
                       .filter([](const std::string& item) { return (item.back() - '0') % 2 == 1; })
                       .take(3);
  while (auto item = co_await odd_items.next()) std::printf("first few: %s\n", item->c_str());
  std::printf("first few: done, 3 of 10 pages fetched\n");
}

// The server fails while the third page is asked for.
coral::async_generator<page> flaky_pages() {
  for (int n = 1;; ++n) {
    co_await coral::sleep_for(10ms);
    if (n == 3) throw std::runtime_error("server error on page 3");
    co_yield page{n, {}};
  }
}

coral::task<> a_page_fails() {
  auto pages = flaky_pages();
  int received = 0;
  try {
    while (co_await pages.next()) ++received;
  } catch (const std::exception& e) {
    // The body's exception comes out of the next() that was waiting for its page.
    std::printf("failure: %s, after %d pages\n", e.what(), received);
  }
}

// The server answers the first page, then never again.
coral::async_generator<page> stalled_pages() {
  co_yield page{1, {}};
  co_await coral::sleep_for(std::chrono::hours(1));
  co_yield page{2, {}};
}

coral::task<int> count_pages(coral::async_generator<page> pages) {
  int count = 0;
  while (co_await pages.next()) ++count;
  co_return count;
}

coral::task<> the_server_stalls() {
  // The body runs as part of the task that awaits next(): cancelling that task (here, when its
  // time is up) ends the body's wait too, and with_timeout returns once both have ended.
  try {
    co_await coral::with_timeout(100ms, count_pages(stalled_pages()));
  } catch (const coral::timeout_error&) {
    std::printf("stall: gave up waiting for page 2 after 100ms\n");
  }
}

}  // namespace

int main() {
  coral::event_loop loop;
  coral::sync_wait(loop.get_executor(), []() -> coral::task<> {
    co_await read_every_page();
    co_await read_the_first_few();
    co_await a_page_fails();
    co_await the_server_stalls();
  }());
}
