// A program with a namespace `asio` of its own (standalone Asio's, next to Boost's) may write
// `using namespace coral;`: coral declares no `asio`, so `asio::` names the program's namespace
// and nothing else. The namespace comes before coral's headers, as a standalone Asio included
// first would: coral's public code must not reach it either (it spells `boost::asio`). The test
// is that this compiles; running it checks that coral works from such a program.
#include <type_traits>

namespace asio {
struct io_context {
  int run() { return 0; }
};
namespace error {
enum class basic_errors { operation_aborted = 1 };
}  // namespace error
inline constexpr bool is_this_programs_asio = true;
}  // namespace asio

#include <boost/asio/io_context.hpp>
#include <coral/coral.hpp>

using namespace coral;

// Each of these names exists in Boost.Asio too: with a coral::asio, every one would be ambiguous.
static_assert(asio::is_this_programs_asio);
static_assert(std::is_same_v<asio::io_context, ::asio::io_context>);
static_assert(!std::is_same_v<asio::io_context, boost::asio::io_context>);
static_assert(static_cast<int>(asio::error::basic_errors::operation_aborted) == 1);

namespace {

task<int> answer() {
  co_await yield();
  co_return 42;
}

}  // namespace

int main() {
  asio::io_context own;
  boost::asio::io_context io;
  int got = 0;
  spawn(io.get_executor(), answer()).then([&](int v) { got = v; });
  io.run();
  return own.run() == 0 && got == 42 ? 0 : 1;
}
