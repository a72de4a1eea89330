// Numerical tests of the decompositions: every golden case (tests/golden/ops/<op>/<case>/) of a
// decomposed op, and a few hand-written graphs on random inputs, run through the reference
// interpreter before and after `decompose` (verified, no new aliasing); the outputs, and the
// inputs the graph mutates, must agree within the dtype's tolerance.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <sstream>

#include "graph_test_util.h"

#include "toroid/bind/inputs.h"
#include "toroid/graph/text.h"
#include "toroid/graph/verify.h"
#include "toroid/interp/interpreter.h"
#include "toroid/ops/npy.h"
#include "toroid/ops/registry.h"
#include "toroid/passes/decompose.h"
#include "toroid/passes/pass_manager.h"
#include "toroid/passes/pipeline.h"
#include "toroid/support/file.h"

using namespace toroid;
using toroid::testing::count_calls;
using ops::HostTensor;
using ops::RtValue;
namespace fs = std::filesystem;

namespace {

struct Tol {
  double rtol, atol;
};

Tol tolerance(DType d) {
  switch (d) {
    case DType::BFloat16: return {1.6e-2, 1e-2};
    case DType::Float16: return {2e-3, 2e-3};
    case DType::Float32: return {1e-4, 1e-5};
    default: return {1e-7, 1e-9};
  }
}

std::string compare(const RtValue& got, const RtValue& want) {
  if (got.is_tensor() != want.is_tensor()) return "kind differs";
  if (!got.is_tensor()) return got.is_number() && want.is_number() && got.to_double() == want.to_double() ? "" : "scalar differs";
  const HostTensor& g = got.tensor();
  const HostTensor& w = want.tensor();
  if (g.dtype() != w.dtype()) return "dtype differs";
  if (g.sizes() != w.sizes()) return "sizes differ: " + g.describe() + " vs " + w.describe();
  Tol t = tolerance(w.dtype());
  for (int64_t i = 0; i < w.numel(); ++i) {
    if (is_floating(w.dtype())) {
      double a = g.get_double(i), b = w.get_double(i);
      if (std::isnan(a) && std::isnan(b)) continue;
      if (std::isinf(a) || std::isinf(b) ? a == b : std::fabs(a - b) <= t.atol + t.rtol * std::fabs(b)) continue;
      std::ostringstream os;
      os.precision(9);
      os << "element " << i << ": got " << a << ", expected " << b;
      return os.str();
    }
    if (g.get_int(i) != w.get_int(i)) return "element " + std::to_string(i) + " differs";
  }
  return "";
}


struct RunResult {
  std::vector<RtValue> outputs;
  std::vector<RtValue> inputs;  // after the run (mutated in place by copy_ / running stats)
};

// Inputs are loaded afresh for each run: kernels mutate running statistics in place.
using Loader = std::function<std::vector<RtValue>()>;

// Golden cases in tests/golden/xfail.txt have reference kernels whose result strides differ
// from PyTorch's metas; those run without the interpreter's meta check (the verifier still
// checks the decomposed graph's metas).
bool g_check_results = true;

RunResult run(const Graph& g, const Loader& load) {
  RunResult r;
  r.inputs = bind::materialize_inputs(g, load());
  interp::InterpreterOptions opts;
  opts.check_results = g_check_results;
  r.outputs = interp::interpret(g, r.inputs, opts);
  return r;
}


// Decomposes `g` (verifying and checking aliasing like --verify-each) and compares runs.
// Returns an error text, empty on success.
std::string check_decomposition(Graph& g, const Loader& inputs, const std::string& op, bool* decomposed) {
  RunResult before = run(g, inputs);
  const PassInfo* pass = find_pass("decompose");
  std::vector<const PassInfo*> passes{pass};
  PassManagerOptions opts;
  opts.verify_each = true;
  size_t calls = count_calls(g, op);
  std::string text = print_graph(g);
  run_passes(g, passes, opts);
  // Gone, or rewritten into simpler calls of itself (x[mask] becomes nonzero and x[indices]).
  *decomposed = count_calls(g, op) == 0 || (count_calls(g, op) <= calls && print_graph(g) != text);
  // The reference pointwise kernels return contiguous results for strided inputs (xfail.txt).
  bool saved = g_check_results;
  for (Node* n : g.inputs())
    if (n->result()->is_tensor() && !n->result()->meta().is_contiguous()) g_check_results = false;
  RunResult after = run(g, inputs);
  g_check_results = saved;
  if (before.outputs.size() != after.outputs.size()) return "output count differs";
  for (size_t i = 0; i < before.outputs.size(); ++i) {
    std::string d = compare(after.outputs[i], before.outputs[i]);
    if (!d.empty()) return "output " + std::to_string(i) + ": " + d + "\n" + print_graph(g);
  }
  for (size_t i = 0; i < before.inputs.size(); ++i) {
    std::string d = compare(after.inputs[i], before.inputs[i]);
    if (!d.empty()) return "input " + std::to_string(i) + " after the run: " + d + "\n" + print_graph(g);
  }
  return "";
}

fs::path golden_root() { return fs::path(TOROID_SOURCE_DIR) / "tests" / "golden" / "ops"; }

class DecomposeGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(DecomposeGolden, MatchesReference) {
  ops::install_schema_op_info();
  const std::string op = GetParam();
  fs::path dir = golden_root() / op;
  if (!fs::is_directory(dir)) GTEST_SKIP() << "no golden cases for " << op;
  int decomposed_cases = 0, cases = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (!fs::exists(e.path() / "graph.tir")) continue;
    std::string path = (e.path() / "graph.tir").string();
    std::unique_ptr<Graph> g = parse_graph(read_file(path), path);
    size_t n = graph_inputs(*g).size();
    fs::path d = e.path();
    Loader inputs = [n, d] {
      std::vector<RtValue> in;
      for (size_t i = 0; i < n; ++i) in.emplace_back(ops::read_npy((d / ("in" + std::to_string(i) + ".npy")).string()));
      return in;
    };
    std::string xfail = read_file((fs::path(TOROID_SOURCE_DIR) / "tests" / "golden" / "xfail.txt").string());
    g_check_results = xfail.find(op + "/" + e.path().filename().string() + " ") == std::string::npos;
    bool decomposed = false;
    std::string err;
    try {
      err = check_decomposition(*g, inputs, op, &decomposed);
    } catch (const std::exception& ex) {
      err = ex.what();
    }
    g_check_results = true;
    EXPECT_EQ(err, "") << op << "/" << e.path().filename().string();
    ++cases;
    decomposed_cases += decomposed;
  }
  // Every op decomposes in at least one of its cases (gelu 'none' and eval-free forms stay).
  EXPECT_GT(decomposed_cases, 0) << op << ": none of " << cases << " cases decomposed";
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string s;
  for (char c : info.param) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Ops, DecomposeGolden, ::testing::ValuesIn(decomposed_ops()), test_name);

// Hand-written graphs (symbolic shapes, low precision, options the golden cases lack) on
// random inputs.
void check_text(const std::string& text, const std::string& op, bool expect_decomposed = true) {
  ops::install_schema_op_info();
  std::unique_ptr<Graph> g = parse_graph(text, "<test>");
  const Graph* original = g.get();
  std::vector<RtValue> random = bind::random_inputs(*original, 7);
  Loader inputs = [&random] {
    std::vector<RtValue> in;
    for (const RtValue& v : random) in.push_back(v.is_tensor() ? RtValue(v.tensor().clone()) : v);
    return in;
  };
  bool decomposed = false;
  EXPECT_EQ(check_decomposition(*g, inputs, op, &decomposed), "");
  EXPECT_EQ(decomposed, expect_decomposed) << print_graph(*g);
}

TEST(Decompose, SoftmaxBf16Symbolic) {
  check_text(R"(graph @main functional {
  sym s0 : hint=5, range=[2, inf]
  %x = input : bf16[3, s0]
  %y = aten._softmax.default(%x, -1, false) : bf16[3, s0]
  output %y
})",
             "aten._softmax.default");
}

TEST(Decompose, LogSoftmaxHalfToFloat) {
  check_text(R"(graph @main functional {
  %x = input : f16[4, 6]
  %y = aten._log_softmax.default(%x, 0, true) : f32[4, 6]
  output %y
})",
             "aten._log_softmax.default");
}

TEST(Decompose, LayerNormBf16WithStats) {
  check_text(R"(graph @main functional {
  %x = input : bf16[2, 3, 8]
  %w = input : bf16[8]
  %b = input : bf16[8]
  %y, %m, %r = aten.native_layer_norm.default(%x, [8], %w, %b, 1e-05) : bf16[2, 3, 8], bf16[2, 3, 1], bf16[2, 3, 1]
  output %y, %m, %r
})",
             "aten.native_layer_norm.default");
}

TEST(Decompose, NllLossWeightedIgnoreIndex) {
  for (int reduction : {0, 1, 2}) {
    check_text(R"(graph @main functional {
  %x = input : f32[5, 4]
  %t = constant [0, 3, -100, 2, 1] : i64[5]
  %w = input : f32[4]
  %y, %tw = aten.nll_loss_forward.default(%x, %t, %w, )" + std::to_string(reduction) + R"(, -100) : )" +
                   (reduction == 0 ? "f32[5]" : "f32[]") + R"(, f32[]
  output %y, %tw
})",
               "aten.nll_loss_forward.default");
  }
}

TEST(Decompose, BatchNormTrainingUpdatesRunningStats) {
  check_text(R"(graph @main {
  %x = input : f32[4, 3, 5]
  %w = input : f32[3]
  %b = input : f32[3]
  %rm = input : f32[3]
  %rv = input : f32[3]
  %y, %m, %r = aten._native_batch_norm_legit.default(%x, %w, %b, %rm, %rv, true, 0.1, 1e-05) : f32[4, 3, 5], f32[3], f32[3]
  output %y, %m, %r
})",
             "aten._native_batch_norm_legit.default");
}

TEST(Decompose, MatmulBroadcastBatch) {
  check_text(R"(graph @main functional {
  %a = input : f32[2, 1, 3, 4]
  %b = input : f32[5, 4, 6]
  %y = aten.matmul.default(%a, %b) : f32[2, 5, 3, 6]
  output %y
})",
             "aten.matmul.default");
}

TEST(Decompose, GeluNoneStays) {
  check_text(R"(graph @main functional {
  %x = input : f32[4]
  %y = aten.gelu.default(%x) : f32[4]
  output %y
})",
             "aten.gelu.default", false);
}

TEST(Pipeline, RunsEveryPassInOrder) {
  ops::install_schema_op_info();
  std::vector<std::string> names;
  for (const PassInfo* p : compile_pipeline()) names.push_back(p->name);
  EXPECT_EQ(names, (std::vector<std::string>{"functionalize_user_kernels", "decompose", "remove_noops", "constant_fold", "cse",
                                             "dce", "reinplace_user_kernels"}));
  std::unique_ptr<Graph> g = parse_graph(R"(graph @main functional {
  %x = input : f32[2, 8]
  %w = input : f32[4, 8]
  %y = aten.linear.default(%x, %w) : f32[2, 4]
  %z = aten.silu.default(%y) : f32[2, 4]
  %c = aten.clone.default(%z) : f32[2, 4]
  output %c
})",
                                         "<test>");
  std::vector<RtValue> random = bind::random_inputs(*g, 3);
  Loader inputs = [&random] { return random; };
  RunResult before = run(*g, inputs);
  PassManagerOptions opts;
  opts.verify_each = true;
  run_compile_pipeline(*g, opts);
  EXPECT_EQ(count_calls(*g, "aten.linear.default"), 0u);
  EXPECT_EQ(count_calls(*g, "aten.clone.default"), 0u);
  RunResult after = run(*g, inputs);
  EXPECT_EQ(compare(after.outputs[0], before.outputs[0]), "");
}

}  // namespace
