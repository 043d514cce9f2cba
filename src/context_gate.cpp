#include "coral/detail/core/context_gate.hpp"

#include <boost/asio/detail/strand_executor_service.hpp>
#include <boost/asio/version.hpp>
#if BOOST_ASIO_VERSION >= 103400
#include <boost/asio/config.hpp>
#endif
#include <charconv>
#include <cstring>
#include <memory>
#include <thread>

namespace coral::detail {

#if defined(BOOST_ASIO_ENABLE_HANDLER_TRACKING)
extern const int coral_library_built_with_BOOST_ASIO_ENABLE_HANDLER_TRACKING = 1;
#else
extern const int coral_library_built_without_BOOST_ASIO_ENABLE_HANDLER_TRACKING = 1;
#endif

namespace {

// The service coral adds to every execution context it runs tasks on: it owns the context's gate
// and closes it when the context shuts down.
class context_service final : public asio::execution_context::service {
 public:
  static asio::execution_context::id id;

  explicit context_service(asio::execution_context& context)
      : asio::execution_context::service(context),
        gate(std::make_shared<context_gate>(single_threaded(context), scheduler_of(context))) {
    // Services shut down in the reverse order of their creation: the strands coral's tasks run
    // on must still take posts while the gate closes, so their service is created first.
    asio::use_service<asio::detail::strand_executor_service>(context);
  }

  std::shared_ptr<context_gate> gate;

 private:
  void shutdown() override { gate->shut_down(); }

  static asio::detail::thread_context* scheduler_of(asio::execution_context& context) {
    if (!asio::has_service<asio::detail::scheduler>(context)) return nullptr;
    return &asio::use_service<asio::detail::scheduler>(context);
  }

  // An io_context created with concurrency hint 1 promises to be run by one thread (Asio itself
  // relies on that promise); any other context may run work concurrently.
  static bool single_threaded(asio::execution_context& context) {
    return asio::has_service<asio::detail::scheduler>(context) && concurrency_hint(context) == 1;
  }

  // The hint a context with a scheduler was created with. Public API from Asio 1.34 (Boost 1.87)
  // on, the context's configuration; before, only the scheduler knows it. (The raw value:
  // asio::config::get() of Asio 1.34.0 formats integers into a buffer too small for them.)
  static int concurrency_hint(asio::execution_context& context) {
#if BOOST_ASIO_VERSION >= 103400
    char buffer[24] = {};
    const char* value = asio::use_service<asio::config_service>(context).get_value("scheduler", "concurrency_hint",
                                                                                   buffer, sizeof buffer);
    int hint = 0;
    if (value) std::from_chars(value, value + std::strlen(value), hint);
    return hint;
#else
    return asio::use_service<asio::detail::scheduler>(context).concurrency_hint();
#endif
  }
};

asio::execution_context::id context_service::id;

}  // namespace

std::shared_ptr<context_gate> gate_of(asio::execution_context& context) {
  // use_service() takes the context's service registry lock; spawning is frequent. A context's
  // gate closes before the context goes, so a cached gate that is still open is the gate of a
  // live context at that address.
  thread_local struct {
    asio::execution_context* context = nullptr;
    std::shared_ptr<context_gate> gate;
  } cache;
  if (cache.context != &context || !cache.gate->is_open()) {
    cache.gate = asio::use_service<context_service>(context).gate;
    cache.context = &context;
  }
  return cache.gate;
}

void context_gate::shut_down() noexcept {
  open_.store(false, std::memory_order_seq_cst);
  // Posts that entered before the gate closed are a few instructions from leaving.
  while (entered_.load(std::memory_order_seq_cst) != 0) std::this_thread::yield();
  for (;;) {
    counted_ref<gate_member> member;
    {
      std::lock_guard lock(members_mutex_);
      if (members_.empty()) break;
      member = counted_ref<gate_member>(&members_.front());
      unlink_locked(*member);
    }
    member->abandon();
  }
}

}  // namespace coral::detail
