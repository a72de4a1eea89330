#include "toroid/support/log.h"

#include <cstdlib>
#include <iostream>
#include <mutex>
#include <set>
#include <string>

namespace toroid {
namespace {

struct Topics {
  std::mutex mu;
  std::set<std::string, std::less<>> names;
  bool all = false;

  void assign(std::string_view spec) {
    names.clear();
    all = false;
    size_t start = 0;
    while (start <= spec.size()) {
      size_t end = spec.find(',', start);
      if (end == std::string_view::npos) end = spec.size();
      std::string_view name = spec.substr(start, end - start);
      if (name == "all") all = true;
      else if (!name.empty()) names.emplace(name);
      start = end + 1;
    }
  }
};

Topics& topics() {
  static Topics* t = [] {
    auto* fresh = new Topics;
    if (const char* env = std::getenv("TOROID_LOG")) fresh->assign(env);
    return fresh;
  }();
  return *t;
}

}  // namespace

bool log_enabled(std::string_view topic) {
  Topics& t = topics();
  std::lock_guard<std::mutex> lock(t.mu);
  return t.all || t.names.find(topic) != t.names.end();
}

void log_line(std::string_view topic, std::string_view message) {
  static std::mutex out_mu;
  std::lock_guard<std::mutex> lock(out_mu);
  std::cerr << "[" << topic << "] " << message << "\n";
}

void set_log_topics(std::string_view comma_separated) {
  Topics& t = topics();
  std::lock_guard<std::mutex> lock(t.mu);
  t.assign(comma_separated);
}

}  // namespace toroid
