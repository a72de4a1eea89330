#include "toroid/support/log.h"

#include <cstdlib>
#include <iostream>
#include <mutex>
#include <set>
#include <string>

namespace toroid {
namespace {

// Every topic some TOROID_LOG line uses (docs/environment.md).
constexpr std::string_view kTopics[] = {"cache", "cuda", "driver", "fallback", "fusion", "lowering", "passes", "time"};

struct Topics {
  std::mutex mu;
  std::set<std::string, std::less<>> names;
  bool all = false;

  // A topic no line uses is rejected with a message on standard error (logging never stops a
  // run), naming the topics there are.
  void assign(std::string_view spec) {
    names.clear();
    all = false;
    size_t start = 0;
    while (start <= spec.size()) {
      size_t end = spec.find(',', start);
      if (end == std::string_view::npos) end = spec.size();
      std::string_view name = spec.substr(start, end - start);
      start = end + 1;
      if (name.empty()) continue;
      if (name == "all") {
        all = true;
        continue;
      }
      bool known = false;
      for (std::string_view t : kTopics) known = known || t == name;
      if (known) {
        names.emplace(name);
        continue;
      }
      std::string list = "all";
      for (std::string_view t : kTopics) list += ", " + std::string(t);
      std::cerr << "toroid: TOROID_LOG: unknown topic '" << name << "' ignored (topics: " << list << ")\n";
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
