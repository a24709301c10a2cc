#include "braid/tools/braid_run/output_forwarder.h"

#include <poll.h>
#include <unistd.h>

#include <array>
#include <cerrno>

namespace braid::launcher {

LinePrefixer::LinePrefixer(std::string prefix, std::size_t max_line)
    : prefix_(std::move(prefix)), max_line_(max_line == 0 ? 1 : max_line) {}

std::string LinePrefixer::feed(std::string_view chunk) {
  std::string out;
  while (!chunk.empty()) {
    std::size_t newline = chunk.find('\n');
    std::size_t room = max_line_ - pending_.size();
    if (newline != std::string_view::npos && newline <= room) {
      out += prefix_;
      out += pending_;
      out.append(chunk.substr(0, newline + 1));
      pending_.clear();
      chunk.remove_prefix(newline + 1);
    } else if (chunk.size() <= room) {
      pending_.append(chunk);
      chunk = {};
    } else {
      // The line grew past max_line_ bytes without a newline: emit this piece on its own.
      out += prefix_;
      out += pending_;
      out.append(chunk.substr(0, room));
      out += '\n';
      pending_.clear();
      chunk.remove_prefix(room);
    }
  }
  return out;
}

std::string LinePrefixer::flush() {
  if (pending_.empty()) return "";
  std::string out = prefix_ + pending_ + '\n';
  pending_.clear();
  return out;
}

OutputForwarder::OutputForwarder(UniqueFd source, int destination, std::string prefix)
    : source_(std::move(source)),
      destination_(destination),
      lines_(std::move(prefix)) {}

void OutputForwarder::pump() {
  if (!open()) return;
  std::array<char, 64 * 1024> buffer;
  ssize_t n = ::read(source_.get(), buffer.data(), buffer.size());
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) {  // EOF, or an error that ends the stream just the same
    close();
    return;
  }
  emit(lines_.feed(std::string_view(buffer.data(), static_cast<std::size_t>(n))));
}

void OutputForwarder::close() {
  if (!open()) return;
  emit(lines_.flush());
  source_.reset();
}

// Blocking write of all bytes: a slow reader of braid-run's output slows the ranks down
// (their pipes fill) instead of braid-run buffering without bound. When the reader is gone
// (EPIPE: SIGPIPE is blocked in braid-run) output is dropped, but the pipes are still
// drained so no rank blocks forever.
void OutputForwarder::emit(std::string_view bytes) {
  while (!bytes.empty() && !destination_broken_) {
    ssize_t n = ::write(destination_, bytes.data(), bytes.size());
    if (n > 0) {
      bytes.remove_prefix(static_cast<std::size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && errno == EAGAIN) {  // an inherited non-blocking stdout
      pollfd writable{destination_, POLLOUT, 0};
      ::poll(&writable, 1, 1000);
    } else {
      destination_broken_ = true;
    }
  }
}

}  // namespace braid::launcher
