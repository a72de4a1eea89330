// File helpers. Reads report a UserError naming the path; writes are atomic (temp file + rename)
// so a killed process never leaves a half-written file behind.
#pragma once

#include <string>

namespace toroid {

// Reads a whole file; "-" reads standard input.
std::string read_file(const std::string& path);
// Writes through a temporary file in the same directory, then renames over `path`.
void write_file_atomic(const std::string& path, const std::string& contents);

}  // namespace toroid
