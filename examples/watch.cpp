// A watch: two servers follow the latest configuration, which a reloader replaces now and then.
// Each server waits for a configuration newer than the one it applies; one replaced before they
// looked is skipped, the latest never is. When the reloader closes the watch, each server applies
// the last configuration it has not read yet, then stops.
//
// Everything runs on one event loop thread, and waiters are woken first come, first served, so the
// order of the lines below never depends on timing.
#include <chrono>
#include <coral/coral.hpp>
#include <cstdio>
#include <string>

using namespace std::chrono_literals;

namespace {

struct config {
  int revision;
  std::string upstream;
};

coral::task<> serve(const char* name, coral::watch<config>::receiver settings) {
  std::printf("%s: starting with revision %d\n", name, settings.get().revision);
  try {
    for (;;) {
      co_await settings.changed();  // a newer revision than the one applied
      const config c = settings.get();
      std::printf("%s: applying revision %d (upstream %s)\n", name, c.revision, c.upstream.c_str());
    }
  } catch (const coral::channel_closed&) {
    std::printf("%s: configuration closed, stopping\n", name);
  }
}

coral::task<> reload(coral::watch<config>& settings) {
  co_await coral::sleep_for(10ms);
  settings.send({2, "10.0.0.2"});
  settings.send({3, "10.0.0.3"});  // before anyone looked: revision 2 is skipped
  co_await coral::sleep_for(10ms);
  settings.send({4, "10.0.0.4"});
  settings.close();  // revision 4 is still applied by both
  std::printf("reloader: closed at revision %d\n", settings.get().revision);
}

}  // namespace

int main() {
  coral::event_loop loop;
  coral::sync_wait(loop.get_executor(), []() -> coral::task<> {
    coral::watch<config> settings(config{1, "10.0.0.1"});
    co_await coral::when_all(serve("api", settings.subscribe()), serve("admin", settings.subscribe()),
                             reload(settings));
  }());
}
