// The job token of a multi-node job: every node's braid-run must present the same one, so it
// cannot be drawn fresh; it comes from --token-file or BRAID_JOB_TOKEN.
#pragma once

#include <string>

namespace braid::launcher {

struct NodeOptions;

// The token stored in `path`, without surrounding whitespace. Throws InvalidArgument when the
// file is missing, not a regular file, not owned by this user, readable or writable by group
// or other (as ssh refuses such a key), empty, or longer than a token may be.
std::string read_token_file(const std::string& path);

// --token-file when given, else BRAID_JOB_TOKEN; throws InvalidArgument when neither is set.
std::string shared_job_token(const NodeOptions& nodes);

}  // namespace braid::launcher
