// Rank output, line by line: each line a rank writes reaches braid-run's stdout / stderr
// whole and prefixed with "[rank] ", so lines of different ranks never mix mid-line.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "braid/base/unique_fd.h"

namespace braid::launcher {

// Cuts a byte stream into prefixed lines. Pure (no I/O), so it is tested byte by byte.
class LinePrefixer {
 public:
  // A line longer than this is emitted in pieces of this size, each ended with '\n', so a
  // rank that never writes a newline (a progress bar using '\r') cannot make braid-run
  // buffer without bound.
  static constexpr std::size_t kDefaultMaxLine = 64 * 1024;

  explicit LinePrefixer(std::string prefix, std::size_t max_line = kDefaultMaxLine);

  // Appends `chunk`; returns every line it completed, each prefixed and ending in '\n'.
  std::string feed(std::string_view chunk);
  // At end of stream: the unterminated rest, prefixed and ended with '\n' (so the next
  // output starts on a fresh line), or "" when nothing is pending.
  std::string flush();
  bool has_pending() const { return !pending_.empty(); }

 private:
  std::string prefix_;
  std::size_t max_line_;
  std::string pending_;  // bytes after the last '\n', at most max_line_ of them
};

// Pumps one rank pipe into one of braid-run's own streams through a LinePrefixer.
// Thread-safety: none; braid-run's poll loop calls pump() when source_fd() is readable.
class OutputForwarder {
 public:
  OutputForwarder(UniqueFd source, int destination, std::string prefix);

  int source_fd() const { return source_.get(); }
  bool open() const { return source_.valid(); }
  // Reads once (it never blocks after poll() reported the fd readable or hung up) and writes
  // the completed lines. At EOF it flushes the partial line and closes the source.
  void pump();
  // Gives up on the source (used when a rank's descendant keeps the pipe open after the job
  // ended): flushes the partial line and closes it.
  void close();

 private:
  void emit(std::string_view bytes);

  UniqueFd source_;
  int destination_;
  LinePrefixer lines_;
  bool destination_broken_ = false;
};

}  // namespace braid::launcher
