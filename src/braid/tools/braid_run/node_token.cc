#include "braid/tools/braid_run/node_token.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "braid/base/env.h"
#include "braid/base/error.h"
#include "braid/bootstrap/job_token.h"
#include "braid/tools/braid_run/node_options.h"

namespace braid::launcher {

namespace {

const ErrorContext kContext{.op = "token file"};

std::string trimmed(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
}

void require_private(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw InvalidArgument(kContext, fmt::format("--token-file {}: {}", path, std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) throw InvalidArgument(kContext, fmt::format("--token-file {}: not a regular file", path));
  if (st.st_uid != ::geteuid()) {
    throw InvalidArgument(kContext, fmt::format("--token-file {}: owned by uid {}, not by this user (uid {})", path,
                                                st.st_uid, ::geteuid()));
  }
  if ((st.st_mode & 077) != 0) {
    throw InvalidArgument(kContext, fmt::format("--token-file {}: mode {:04o} lets group or other read it; the token "
                                                "admits anyone to the job: chmod 600 {}",
                                                path, st.st_mode & 07777, path));
  }
}

}  // namespace

std::string read_token_file(const std::string& path) {
  require_private(path);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) throw InvalidArgument(kContext, fmt::format("--token-file {}: cannot be read", path));
  std::string token = trimmed(text.str());
  if (token.empty()) throw InvalidArgument(kContext, fmt::format("--token-file {}: empty", path));
  if (token.size() > net::kMaxTokenBytes) {
    throw InvalidArgument(kContext, fmt::format("--token-file {}: the token has {} bytes, at most {} are allowed", path,
                                                token.size(), net::kMaxTokenBytes));
  }
  return token;
}

std::string shared_job_token(const NodeOptions& nodes) {
  if (!nodes.token_file.empty()) return read_token_file(nodes.token_file);
  if (auto token = env::get(env::kJobToken)) return *token;
  throw InvalidArgument({.op = "launch"},
                        fmt::format("a job of {} nodes needs one job token shared by every node's braid-run: export "
                                    "BRAID_JOB_TOKEN (e.g. $(openssl rand -hex 16)) or pass --token-file F",
                                    nodes.num_nodes));
}

}  // namespace braid::launcher
