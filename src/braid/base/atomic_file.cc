#include "braid/base/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/base/unique_fd.h"

namespace braid {

namespace {

void write_all(int fd, std::string_view contents, const std::string& path) {
  while (!contents.empty()) {
    ssize_t n = ::write(fd, contents.data(), contents.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_system_error({.op = "file.write"}, "writing " + path, errno);
    contents.remove_prefix(static_cast<std::size_t>(n));
  }
}

}  // namespace

void write_file_atomically(const std::string& path, std::string_view contents) {
  // The pid keeps two processes writing the same path (a misconfigured rank) from sharing a
  // temporary file; rename() then decides which complete file wins.
  std::string temp = fmt::format("{}.tmp.{}", path, ::getpid());
  UniqueFd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd.valid()) throw_system_error({.op = "file.write"}, "creating " + temp, errno);
  try {
    write_all(fd.get(), contents, temp);
    if (::close(fd.release()) != 0) throw_system_error({.op = "file.write"}, "closing " + temp, errno);
    if (::rename(temp.c_str(), path.c_str()) != 0) {
      throw_system_error({.op = "file.write"}, fmt::format("renaming {} to {}", temp, path), errno);
    }
  } catch (...) {
    ::unlink(temp.c_str());
    throw;
  }
}

std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw InvalidArgument({.op = "file.read"},
                          fmt::format("{}: cannot open ({})", path, std::strerror(errno)));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw InvalidArgument({.op = "file.read"}, fmt::format("{}: read error", path));
  return text.str();
}

}  // namespace braid
