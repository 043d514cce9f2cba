#pragma once

// http_server's static files: GET and HEAD /files/<path> serve the file <path> under --root DIR.
//
// - Reads: with asio::random_access_file and coral::use_task where Asio has io_uring
//   (BOOST_ASIO_HAS_IO_URING: coral built with liburing) and the kernel lets the process use it.
//   Otherwise (the build or the kernel lacks it, or --file-reads pool) each read is a pread() on a
//   small thread pool of the server's, and the session resumes on its own executor: a read never
//   blocks a thread that runs sessions.
// - Which file: each segment of <path> is percent-decoded; a segment that is empty, "." or "..",
//   or that decodes to one holding "/" or a NUL, is 404. The file is opened beneath the root with
//   openat2(RESOLVE_BENEATH): a symbolic link (or "..") that leads out of the root is 404 as well
//   (where the kernel has no openat2, the resolved path must be under the root's). Only a regular
//   file is served (a directory, a FIFO, a device: 404).
// - Content-Type from the extension (a short table; application/octet-stream otherwise);
//   ETag from the file's size and modification time; If-None-Match (a list, weak comparison, or
//   "*") gets 304; Range with one range of bytes gets 206 (Content-Range), one that starts past
//   the end 416 (Content-Range: bytes */size); a Range of several ranges, a malformed one, or one
//   under an If-Range that does not match, gets the whole file (RFC 9110 14.2 lets a server ignore
//   Range; no multipart/byteranges). HEAD gets the GET's header alone.
// - A file goes out in pieces of file_piece bytes, each read then written under the write timeout
//   (a client that reads, however slowly, gets it all; one whose socket accepts nothing for the
//   write timeout is dropped): what a response holds is one piece, whatever the file's size.

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <boost/asio/append.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/http.hpp>
#include <boost/url/grammar/charset.hpp>
#include <boost/url/url_view.hpp>
#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#if defined(BOOST_ASIO_HAS_FILE)
#include <boost/asio/random_access_file.hpp>
#endif

#include "server.hpp"

namespace net_demo::static_files {

namespace beast = boost::beast;
namespace http = beast::http;

inline constexpr std::size_t file_piece = 64 * 1024;

// How a session reads files: through Asio's io_uring files, or pread() on a thread pool.
enum class file_reads { io_uring, pool };

// Whether Asio's io_uring files work here: built in, and the kernel lets this process set up a ring.
inline bool io_uring_files_work() {
#if defined(BOOST_ASIO_HAS_FILE)
  try {
    asio::io_context probe;
    asio::random_access_file file(probe, "/dev/null", asio::random_access_file::read_only);
    return true;
  } catch (const std::exception&) {
    return false;
  }
#else
  return false;
#endif
}

// The served directory, open for the whole run, and how files are read.
class file_root {
 public:
  file_root(const std::string& path, file_reads reads) : reads_(reads) {
    dir_ = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_ < 0) throw boost::system::system_error(errno, boost::system::system_category(), "--root " + path);
    std::error_code error;
    canonical_ = std::filesystem::canonical(path, error).string();
    if (reads_ == file_reads::pool) pool_.emplace(2);
  }
  ~file_root() { ::close(dir_); }
  file_root(const file_root&) = delete;
  file_root& operator=(const file_root&) = delete;

  file_reads reads() const noexcept { return reads_; }
  asio::thread_pool& pool() { return *pool_; }

  // Opens `relative` (decoded, checked: no "." or ".." segment) beneath the root: the descriptor,
  // or -1 (missing, a link that leads out, not readable).
  int open_beneath(const std::string& relative) const {
    open_how how{};
    how.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;  // (a FIFO must not block the open)
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    const long fd = ::syscall(SYS_openat2, dir_, relative.c_str(), &how, sizeof how);
    if (fd >= 0 || errno != ENOSYS) return static_cast<int>(fd);
    // A kernel without openat2 (before 5.6): the resolved path must be under the root's.
    std::error_code error;
    const auto resolved = std::filesystem::canonical(canonical_ + "/" + relative, error).string();
    if (error || !resolved.starts_with(canonical_ + "/")) return -1;
    return ::open(resolved.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  }

 private:
  int dir_ = -1;
  std::string canonical_;
  file_reads reads_;
  std::optional<asio::thread_pool> pool_;
};

// The path below /files/ as a relative path, each segment percent-decoded; nothing if a segment is
// empty, "." or "..", or decodes to one with "/" or NUL (404).
inline std::optional<std::string> relative_path(const boost::urls::url_view& target) {
  const auto segments = target.encoded_segments();
  if (segments.size() < 2) return std::nullopt;
  std::string relative;
  auto it = segments.begin();
  for (++it; it != segments.end(); ++it) {
    const std::string segment = (*it).decode();
    if (segment.empty() || segment == "." || segment == ".." ||
        segment.find_first_of(std::string_view("/\0", 2)) != std::string::npos)
      return std::nullopt;
    if (!relative.empty()) relative += '/';
    relative += segment;
  }
  return relative;
}

inline const char* content_type(std::string_view path) {
  const auto dot = path.rfind('.');
  const auto slash = path.rfind('/');
  if (dot == std::string_view::npos || (slash != std::string_view::npos && dot < slash))
    return "application/octet-stream";
  std::string extension(path.substr(dot + 1));
  for (auto& c : extension) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static constexpr std::pair<std::string_view, const char*> types[] = {{"html", "text/html; charset=utf-8"},
                                                                       {"htm", "text/html; charset=utf-8"},
                                                                       {"css", "text/css; charset=utf-8"},
                                                                       {"js", "text/javascript; charset=utf-8"},
                                                                       {"json", "application/json"},
                                                                       {"txt", "text/plain; charset=utf-8"},
                                                                       {"md", "text/markdown; charset=utf-8"},
                                                                       {"xml", "application/xml"},
                                                                       {"png", "image/png"},
                                                                       {"jpg", "image/jpeg"},
                                                                       {"jpeg", "image/jpeg"},
                                                                       {"gif", "image/gif"},
                                                                       {"svg", "image/svg+xml"},
                                                                       {"webp", "image/webp"},
                                                                       {"ico", "image/vnd.microsoft.icon"},
                                                                       {"wasm", "application/wasm"},
                                                                       {"pdf", "application/pdf"},
                                                                       {"zip", "application/zip"},
                                                                       {"gz", "application/gzip"},
                                                                       {"mp4", "video/mp4"},
                                                                       {"woff2", "font/woff2"}};
  for (const auto& [name, type] : types) {
    if (name == extension) return type;
  }
  return "application/octet-stream";
}

// A strong validator from what changes when the file does: its size and modification time.
inline std::string etag_of(const struct stat& s) {
  char tag[64];
  std::snprintf(tag, sizeof tag, "\"%llx-%llx\"", static_cast<unsigned long long>(s.st_size),
                static_cast<unsigned long long>(s.st_mtim.tv_sec) * 1'000'000'000ull +
                    static_cast<unsigned long long>(s.st_mtim.tv_nsec));
  return tag;
}

// Whether If-None-Match (a list of entity tags, or "*") names `etag` (weak comparison: W/ ignored).
inline bool none_match_names(std::string_view header, std::string_view etag) {
  while (!header.empty()) {
    const auto comma = header.find(',');
    std::string_view tag = header.substr(0, comma);
    header = comma == std::string_view::npos ? std::string_view() : header.substr(comma + 1);
    while (!tag.empty() && (tag.front() == ' ' || tag.front() == '\t')) tag.remove_prefix(1);
    while (!tag.empty() && (tag.back() == ' ' || tag.back() == '\t')) tag.remove_suffix(1);
    if (tag == "*") return true;
    if (tag.starts_with("W/")) tag.remove_prefix(2);
    if (tag == etag) return true;
  }
  return false;
}

struct byte_range {
  std::uint64_t first = 0;
  std::uint64_t length = 0;
};

// What a Range header asks of a file of `size` bytes: one satisfiable range; nothing (the whole
// file) for several ranges or a malformed header; `unsatisfiable` for one range that starts past
// the end (or a suffix of zero bytes).
struct range_request {
  std::optional<byte_range> range;
  bool unsatisfiable = false;
};

// A number of a Range; one too large for 64 bits is the largest (past any file's end).
inline std::optional<std::uint64_t> digits(std::string_view text) {
  if (text.empty()) return std::nullopt;
  constexpr auto largest = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t n = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    const auto digit = static_cast<std::uint64_t>(c - '0');
    n = n > (largest - digit) / 10 ? largest : n * 10 + digit;
  }
  return n;
}

inline range_request parse_range(std::string_view header, std::uint64_t size) {
  // (The unit is compared without regard to case, RFC 9110 14.1.)
  if (!equal_ignoring_case(header.substr(0, 6), "bytes=")) return {};
  std::string_view spec = header.substr(6);
  while (!spec.empty() && spec.front() == ' ') spec.remove_prefix(1);
  while (!spec.empty() && spec.back() == ' ') spec.remove_suffix(1);
  if (spec.find(',') != std::string_view::npos) return {};  // several ranges: the whole file
  const auto dash = spec.find('-');
  if (dash == std::string_view::npos) return {};
  const auto first = spec.substr(0, dash);
  const auto last = spec.substr(dash + 1);
  if (first.empty()) {  // bytes=-N: the last N bytes
    const auto n = digits(last);
    if (!n) return {};
    if (*n == 0 || size == 0) return {std::nullopt, true};
    const std::uint64_t length = std::min(*n, size);
    return {byte_range{size - length, length}, false};
  }
  const auto from = digits(first);
  if (!from) return {};
  std::uint64_t to = size == 0 ? 0 : size - 1;
  if (!last.empty()) {
    const auto given = digits(last);
    if (!given || *given < *from) return {};
    to = std::min(*given, to);
  }
  if (*from >= size) return {std::nullopt, true};
  return {byte_range{*from, to - *from + 1}, false};
}

// Reads up to `bytes.size()` bytes of `file` at `offset`: a task for the file pool, awaited with
// coral::on. Its completion reaches the session through coral, which resumes the session on its
// own executor or, if that executor's context is gone by then (a session abandoned at shutdown),
// lets go of it: a work guard of the session's context kept in a pool's lambda would be destroyed
// on the pool's thread after that context, at the end of a server whose pool outlives its contexts.
inline coral::task<std::size_t> pread_at(int file, std::uint64_t offset, asio::mutable_buffer bytes) {
  const ssize_t n = ::pread(file, bytes.data(), bytes.size(), static_cast<off_t>(offset));
  if (n < 0) throw boost::system::system_error(errno, boost::system::system_category(), "pread");
  co_return static_cast<std::size_t>(n);
}

// An open file being served: read at offsets, through io_uring or the pool.
class open_file {
 public:
  open_file(int fd, file_root& root, const asio::any_io_executor& executor) : fd_(fd), root_(root) {
#if defined(BOOST_ASIO_HAS_FILE)
    if (root.reads() == file_reads::io_uring) {
      file_.emplace(executor, fd);  // (owns the descriptor from here)
      fd_ = -1;
    }
#else
    static_cast<void>(executor);
#endif
  }
  ~open_file() {
    if (fd_ >= 0) ::close(fd_);
  }
  open_file(const open_file&) = delete;
  open_file& operator=(const open_file&) = delete;

  int native() {
#if defined(BOOST_ASIO_HAS_FILE)
    if (file_) return file_->native_handle();
#endif
    return fd_;
  }

  coral::task<std::size_t> read_at(std::uint64_t offset, asio::mutable_buffer bytes) {
#if defined(BOOST_ASIO_HAS_FILE)
    // Not cancellable (the read is short; a cancelled session fails at its next write): with
    // Boost 1.81's Asio, a read on io_uring cancelled as it completes can lose its completion,
    // and the session would wait for ever.
    if (file_)
      co_return co_await file_->async_read_some_at(
          offset, bytes, asio::bind_cancellation_slot(asio::cancellation_slot(), coral::use_task));
#endif
    co_return co_await coral::on(root_.pool(), pread_at(fd_, offset, bytes));
  }

 private:
  int fd_;
  file_root& root_;
#if defined(BOOST_ASIO_HAS_FILE)
  std::optional<asio::random_access_file> file_;
#endif
};

}  // namespace net_demo::static_files
