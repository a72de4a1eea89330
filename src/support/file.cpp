#include "toroid/support/file.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "toroid/support/error.h"

namespace toroid {

std::string read_file(const std::string& path) {
  if (path == "-") {
    std::ostringstream buf;
    buf << std::cin.rdbuf();
    return buf.str();
  }
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) user_error("cannot read '" + path + "': it is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) user_error("cannot open '" + path + "': " + std::strerror(errno));
  std::string data;
  // A regular file is read in one call into a string of its size (the kernel cache reads shared
  // objects to check their sums: growing the string as it reads cost ~20 ms per 25 MB).
  if (std::filesystem::is_regular_file(path, ec)) {
    uintmax_t size = std::filesystem::file_size(path, ec);
    if (!ec) {
      data.resize(static_cast<size_t>(size));
      in.read(data.data(), static_cast<std::streamsize>(size));
      data.resize(static_cast<size_t>(in.gcount()));
      in.clear();
    }
  }
  try {
    data.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());  // what grew since
  } catch (const std::exception& e) {  // libstdc++ throws from the stream buffer on some files
    user_error("cannot read '" + path + "': " + e.what());
  }
  if (in.bad()) user_error("cannot read '" + path + "'");
  return data;
}

void write_file_atomic(const std::string& path, const std::string& contents) {
  // Unique per process and call: two threads may publish the same path at once.
  static std::atomic<uint64_t> calls{0};
  std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(calls++);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) user_error("cannot write '" + tmp + "': " + std::strerror(errno));
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      user_error("cannot write '" + tmp + "'");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    std::remove(tmp.c_str());
    user_error("cannot rename '" + tmp + "' to '" + path + "': " + std::strerror(err));
  }
}

}  // namespace toroid
