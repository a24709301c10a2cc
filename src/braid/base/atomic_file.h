// Writing a file so that a reader sees either the old content or the complete new one, never
// a torn half: trace files are rewritten at every flush and checkpoints at every save, and a
// rank killed mid-write (or a viewer opening the file meanwhile) must not leave a truncated
// file behind in place of the last good one.
#pragma once

#include <string>
#include <string_view>

namespace braid {

// Writes `contents` to a temporary file beside `path`, then renames it over `path`.
// Throws braid::SystemError naming the path on failure (and removes the temporary file).
void write_file_atomically(const std::string& path, std::string_view contents);

// Reads a whole file. Throws braid::InvalidArgument naming the path when it cannot be read.
std::string read_whole_file(const std::string& path);

}  // namespace braid
