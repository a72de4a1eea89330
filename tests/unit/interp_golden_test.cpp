// Runs every golden case in tests/golden/ops/<overload>/<case>/ (written by real PyTorch with
// tools/golden/gen_golden.py) through the verifier and the reference interpreter, and compares
// the results with PyTorch's. One test per overload; an overload without a reference kernel is
// skipped, not failed. Running the whole binary prints a summary of all cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "toroid/bind/inputs.h"
#include "toroid/graph/text.h"
#include "toroid/graph/verify.h"
#include "toroid/interp/interpreter.h"
#include "toroid/ops/npy.h"
#include "toroid/ops/ref_util.h"
#include "toroid/ops/registry.h"
#include "toroid/support/error.h"
#include "toroid/support/file.h"

namespace {

namespace fs = std::filesystem;
using namespace toroid;
using ops::HostTensor;
using ops::RtValue;

fs::path golden_root() { return fs::path(TOROID_SOURCE_DIR) / "tests" / "golden" / "ops"; }

std::vector<std::string> golden_ops() {
  std::vector<std::string> ops;
  std::error_code ec;
  if (!fs::is_directory(golden_root(), ec)) return ops;
  for (const auto& e : fs::directory_iterator(golden_root()))
    if (e.is_directory()) ops.push_back(e.path().filename().string());
  std::sort(ops.begin(), ops.end());
  return ops;
}

std::vector<fs::path> cases_of(const std::string& op) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(golden_root() / op))
    if (e.is_directory() && fs::exists(e.path() / "graph.tir")) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// case.json is flat: {"op": "...", "rtol": 1e-05, "equal_nan": true, ...}.
struct CaseInfo {
  double rtol = 0, atol = 0;
  bool equal_nan = true, check_strides = true, nondeterministic = false;
};

std::string json_field(const std::string& text, const std::string& key) {
  size_t k = text.find("\"" + key + "\"");
  if (k == std::string::npos) return "";
  size_t colon = text.find(':', k);
  size_t end = text.find_first_of(",}", colon);
  std::string v = text.substr(colon + 1, end - colon - 1);
  v.erase(0, v.find_first_not_of(" \t\n"));
  v.erase(v.find_last_not_of(" \t\n") + 1);
  return v;
}

CaseInfo read_case_info(const fs::path& dir) {
  std::string text = read_file((dir / "case.json").string());
  CaseInfo c;
  auto num = [&](const char* k, double dflt) {
    std::string v = json_field(text, k);
    return v.empty() ? dflt : std::stod(v);
  };
  auto flag = [&](const char* k, bool dflt) {
    std::string v = json_field(text, k);
    return v.empty() ? dflt : v == "true";
  };
  c.rtol = num("rtol", 0);
  c.atol = num("atol", 0);
  c.equal_nan = flag("equal_nan", true);
  c.check_strides = flag("check_strides", true);
  c.nondeterministic = flag("nondeterministic", false);
  return c;
}

std::string shape(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

bool close(double g, double w, const CaseInfo& c) {
  if (std::isnan(g) || std::isnan(w)) return c.equal_nan && std::isnan(g) && std::isnan(w);
  if (std::isinf(g) || std::isinf(w)) return g == w;
  return std::fabs(g - w) <= c.atol + c.rtol * std::fabs(w);
}

// Complex results: real and imaginary parts each within the tolerances.
std::string compare_complex(const HostTensor& t, const HostTensor& want, const CaseInfo& c) {
  HostTensor g = t.clone(), w = want.clone();  // contiguous, so element i is at i
  int64_t bad = 0, first = -1;
  std::complex<double> gf, wf;
  for (int64_t i = 0; i < g.numel(); ++i) {
    std::complex<double> x = ops::load_complex(g.dtype(), g.data() + i * g.element_size());
    std::complex<double> y = ops::load_complex(w.dtype(), w.data() + i * w.element_size());
    if (close(x.real(), y.real(), c) && close(x.imag(), y.imag(), c)) continue;
    if (bad++ == 0) first = i, gf = x, wf = y;
  }
  if (bad == 0) return "";
  std::ostringstream os;
  os.precision(9);
  os << bad << " of " << g.numel() << " elements differ; first at " << first << ": got " << gf << ", expected " << wf;
  return os.str();
}

// Empty when `got` matches `want` (a tensor from out<i>.npy) under the case's tolerances.
std::string compare(const RtValue& got, const HostTensor& want, const CaseInfo& c) {
  if (!got.is_tensor()) {
    if (!got.is_number()) return "expected a scalar, got a non-number";
    if (want.numel() != 1) return "scalar result but the expected file holds " + want.describe();
    double g = got.to_double(), w = want.get_double(0);
    bool ok = is_floating(want.dtype()) ? (g == w || (std::isnan(g) && std::isnan(w)) ||
                                           std::fabs(g - w) <= c.atol + c.rtol * std::fabs(w))
                                        : got.to_int() == want.get_int(0);
    if (!ok) return "scalar " + std::to_string(g) + ", expected " + std::to_string(w);
    return "";
  }
  const HostTensor& t = got.tensor();
  if (t.dtype() != want.dtype())
    return std::string("dtype ") + dtype_short_name(t.dtype()) + ", expected " + dtype_short_name(want.dtype());
  if (t.sizes() != want.sizes()) return "sizes " + shape(t.sizes()) + ", expected " + shape(want.sizes());
  if (c.nondeterministic) return "";
  if (is_complex(t.dtype())) return compare_complex(t, want, c);
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < t.numel(); ++i) {
    bool ok;
    if (is_floating(t.dtype())) {
      double g = t.get_double(i), w = want.get_double(i);
      if (std::isnan(g) || std::isnan(w)) ok = c.equal_nan && std::isnan(g) && std::isnan(w);
      else if (std::isinf(g) || std::isinf(w)) ok = g == w;
      else ok = std::fabs(g - w) <= c.atol + c.rtol * std::fabs(w);
    } else {
      ok = t.get_int(i) == want.get_int(i);
    }
    if (!ok && bad++ == 0) first = i;
  }
  if (bad == 0) return "";
  std::ostringstream os;
  os.precision(9);
  os << bad << " of " << t.numel() << " elements differ; first at " << first << ": got "
     << (is_floating(t.dtype()) ? t.get_double(first) : static_cast<double>(t.get_int(first))) << ", expected "
     << (is_floating(want.dtype()) ? want.get_double(first) : static_cast<double>(want.get_int(first)));
  return os.str();
}

// Empty on success, else what went wrong.
std::string run_case(const fs::path& dir) {
  try {
    CaseInfo info = read_case_info(dir);
    std::string path = (dir / "graph.tir").string();
    std::string text = read_file(path);
    std::unique_ptr<Graph> g = parse_graph(text, path);
    if (print_graph(*g) != text) return "graph.tir is not in canonical form (print(parse(file)) differs)";
    Diagnostics diags = verify(*g);
    if (!diags.empty()) return "verify: " + diags.str();
    std::vector<const Value*> values = graph_inputs(*g);
    std::vector<RtValue> inputs;
    for (size_t i = 0; i < values.size(); ++i)
      inputs.emplace_back(ops::read_npy((dir / ("in" + std::to_string(i) + ".npy")).string()));
    inputs = bind::materialize_inputs(*g, inputs);
    std::vector<RtValue> outputs = interp::interpret(*g, inputs);
    for (size_t i = 0; i < outputs.size(); ++i) {
      fs::path want = dir / ("out" + std::to_string(i) + ".npy");
      if (!fs::exists(want)) return "no " + want.filename().string() + " for output " + std::to_string(i);
      std::string d = compare(outputs[i], ops::read_npy(want.string()), info);
      if (!d.empty()) return "output " + std::to_string(i) + ": " + d;
      // Strides need no check here: the interpreter compared every result with its node's
      // meta, which holds PyTorch's strides.
    }
    if (fs::exists(dir / ("out" + std::to_string(outputs.size()) + ".npy")))
      return "the graph has " + std::to_string(outputs.size()) + " outputs but there are more expected files";
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

// tests/golden/xfail.txt: "<overload>/<case>  # why" per known failure.
const std::set<std::string>& xfails() {
  static const std::set<std::string> set = [] {
    std::set<std::string> s;
    std::ifstream in(fs::path(TOROID_SOURCE_DIR) / "tests" / "golden" / "xfail.txt");
    std::string line;
    while (std::getline(in, line)) {
      line = line.substr(0, line.find('#'));
      line.erase(line.find_last_not_of(" \t\r") + 1);
      if (!line.empty()) s.insert(line);
    }
    return s;
  }();
  return set;
}

struct Totals {
  int passed = 0, failed = 0, xfailed = 0, skipped = 0, skipped_ops = 0;
};
Totals& totals() {
  static Totals t;
  return t;
}

class GoldenSummary : public ::testing::Environment {
 public:
  void TearDown() override {
    const Totals& t = totals();
    if (t.passed + t.failed + t.skipped == 0) return;
    std::printf("golden: %d cases passed, %d failed, %d expected failures (tests/golden/xfail.txt), %d skipped (%d ops "
                "without reference kernels)\n",
                t.passed, t.failed, t.xfailed, t.skipped, t.skipped_ops);
  }
};
[[maybe_unused]] ::testing::Environment* const kSummary = ::testing::AddGlobalTestEnvironment(new GoldenSummary);

class Golden : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() { ops::install_schema_op_info(); }
};

TEST_P(Golden, Cases) {
  const std::string op = GetParam();
  std::vector<fs::path> cases = cases_of(op);
  const ops::OpEntry* entry = ops::OpRegistry::global().find(op);
  if (entry == nullptr || entry->kernel == nullptr) {
    totals().skipped += static_cast<int>(cases.size());
    totals().skipped_ops += 1;
    GTEST_SKIP() << "no reference kernel for " << op << " yet (" << cases.size() << " cases skipped)";
  }
  int failed = 0, xfailed = 0;
  for (const fs::path& dir : cases) {
    std::string name = fs::relative(dir, golden_root()).string();
    std::string why = run_case(dir);
    bool expected = xfails().count(name) != 0;
    if (why.empty()) {
      totals().passed += 1;
      if (expected) ADD_FAILURE() << name << ": passes now; delete its line from tests/golden/xfail.txt";
    } else if (expected) {
      totals().xfailed += 1;
      ++xfailed;
    } else {
      totals().failed += 1;
      ++failed;
      ADD_FAILURE() << name << ": " << why;
    }
  }
  std::printf("%s: %zu cases, %d failed, %d expected failures\n", op.c_str(), cases.size(), failed, xfailed);
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string s = info.param;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Ops, Golden, ::testing::ValuesIn(golden_ops()), test_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Golden);

}  // namespace
