// Random graphs built through the API (every argument kind, meta attribute, symbol kind,
// constant dtype, odd names, subgraphs) must print, parse and print again identically.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>

#include "toroid/graph/graph.h"
#include "toroid/graph/text.h"

namespace toroid {
namespace {

class RandomGraph {
 public:
  explicit RandomGraph(uint64_t seed) : rng_(seed) {}

  std::unique_ptr<Graph> build() {
    auto g = std::make_unique<Graph>();
    g->set_name(pick({"main", "g", "with space", ""}));
    g->set_functional(coin());
    env_ = &g->shape_env();
    int nsyms = below(5);
    for (int i = 0; i < nsyms; ++i) add_symbol(i);
    for (int i = below(3); i > 0; --i) env_->add_guard(bool_expr(2));
    fill(*g, 0);
    return g;
  }

 private:
  int below(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  bool coin() { return rng_() & 1; }
  template <typename T>
  T pick(std::initializer_list<T> items) { return items.begin()[below(static_cast<int>(items.size()))]; }
  std::string pick(std::initializer_list<const char*> items) { return pick<const char*>(items); }

  void add_symbol(int i) {
    std::string n = std::to_string(i);
    switch (below(4)) {
      case 0: {
        int64_t d = pick<int64_t>({1, 2, 8});
        int64_t hint = d * below(50);
        int64_t lo = coin() ? 0 : -hint - 3, hi = coin() ? sym::ValueRange::kPosInf : hint + below(100);
        SymExpr s = env_->create_backed("s" + n, hint, {lo, hi});
        if (d != 1) env_->constrain_divisor(s, d);
        ints_.push_back(s);
        break;
      }
      case 1:
        ints_.push_back(env_->create_unbacked("u" + n, coin() ? sym::ValueRange::at_least(0)
                                                              : sym::ValueRange{-7, 1000}));
        break;
      case 2: floats_.push_back(env_->create_backed_float("f" + n, random_double())); break;
      default: floats_.push_back(env_->create_unbacked_float("g" + n)); break;
    }
  }

  double random_double() {
    switch (below(6)) {
      case 0: return pick<double>({0.0, -0.0, 1.0, -1.5, 0.1, 1e-300, 5e-324, 1e308});
      case 1: return pick<double>({std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                                   std::numeric_limits<double>::quiet_NaN()});
      default: {
        double d = std::bit_cast<double>(rng_());
        return std::isnan(d) ? 2.5 : d;
      }
    }
  }

  int64_t random_int() {
    switch (below(4)) {
      case 0: return pick<int64_t>({0, 1, -1, std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()});
      case 1: return static_cast<int64_t>(rng_());
      default: return below(200) - 100;
    }
  }

  SymExpr int_expr(int depth) {
    if (depth <= 0 || below(3) == 0) {
      if (!ints_.empty() && coin()) return ints_[static_cast<size_t>(below(static_cast<int>(ints_.size())))];
      return SymExpr::integer(random_int());
    }
    SymExpr a = int_expr(depth - 1), b = int_expr(depth - 1);
    switch (below(8)) {
      case 0: return sym::add(a, b);
      case 1: return sym::sub(a, b);
      case 2: return sym::mul(a, b);
      case 3: return sym::floordiv(a, b.as_int() == std::optional<int64_t>(0) ? SymExpr::integer(3) : b);
      case 4: return sym::mod(a, b.as_int() == std::optional<int64_t>(0) ? SymExpr::integer(5) : b);
      case 5: return sym::min(a, b);
      case 6: return sym::max(a, b);
      default: return sym::pow(a, below(4));
    }
  }

  SymExpr float_expr(int depth) {
    if (depth <= 0 || below(3) == 0) {
      if (!floats_.empty() && coin()) return floats_[static_cast<size_t>(below(static_cast<int>(floats_.size())))];
      return SymExpr::floating(random_double());
    }
    switch (below(4)) {
      case 0: return sym::to_float(int_expr(depth - 1));
      case 1: return sym::mul(float_expr(depth - 1), float_expr(depth - 1));
      case 2: return sym::add(float_expr(depth - 1), int_expr(depth - 1));
      default: return sym::truediv(int_expr(depth - 1), int_expr(depth - 1));
    }
  }

  SymExpr bool_expr(int depth) {
    if (depth <= 0 || below(4) == 0) return SymExpr::boolean(coin());
    switch (below(7)) {
      case 0: return sym::eq(int_expr(depth - 1), int_expr(depth - 1));
      case 1: return sym::ne(int_expr(depth - 1), int_expr(depth - 1));
      case 2: return sym::lt(int_expr(depth - 1), int_expr(depth - 1));
      case 3: return sym::le(float_expr(depth - 1), int_expr(depth - 1));
      case 4: return sym::logical_and(bool_expr(depth - 1), bool_expr(depth - 1));
      case 5: return sym::logical_or(bool_expr(depth - 1), bool_expr(depth - 1));
      default: return sym::logical_not(bool_expr(depth - 1));
    }
  }

  std::string random_string() {
    std::string s;
    for (int i = below(6); i > 0; --i) s += static_cast<char>(coin() ? 'a' + below(26) : below(256));
    return s;
  }

  Argument arg(const std::vector<Value*>& scope, int depth) {
    switch (below(depth > 0 ? 11 : 10)) {
      case 0: return Argument::none();
      case 1: return Argument(int_expr(2));
      case 2: return Argument(float_expr(2));
      case 3: return Argument(bool_expr(2));
      case 4: return Argument::string(random_string());
      case 5: return Argument(static_cast<DType>(below(kNumDTypes)));
      case 6: return Argument(coin() ? Device::cpu() : Device::cuda(below(8)));
      case 7: return Argument(pick<Layout>({Layout::Strided, Layout::SparseCoo, Layout::SparseCsr}));
      case 8:
        return Argument(pick<MemoryFormat>({MemoryFormat::Contiguous, MemoryFormat::ChannelsLast,
                                            MemoryFormat::ChannelsLast3d, MemoryFormat::Preserve}));
      case 9:
        if (!scope.empty()) return Argument(scope[static_cast<size_t>(below(static_cast<int>(scope.size())))]);
        return Argument::integer(1);
      default: {
        Argument::List items;
        for (int i = below(4); i > 0; --i) items.push_back(arg(scope, depth - 1));
        return Argument(std::move(items));
      }
    }
  }

  TensorMeta meta(Graph& g, const std::vector<Value*>& tensors, bool static_shape) {
    TensorMeta m;
    m.dtype = static_cast<DType>(below(kNumDTypes));
    if (coin()) m.device = Device::cuda(below(3));
    for (int i = below(4); i > 0; --i)
      m.sizes.push_back(static_shape ? SymExpr::integer(below(3)) : int_expr(coin() ? 0 : 2));
    m.strides = contiguous_strides(m.sizes);
    if (!static_shape && coin())
      for (SymExpr& s : m.strides) s = int_expr(1);
    if (coin()) m.offset = int_expr(1);
    if (!tensors.empty() && coin())
      m.storage = tensors[static_cast<size_t>(below(static_cast<int>(tensors.size())))]->meta().storage;
    else
      m.storage = g.new_storage();
    return m;
  }

  std::string value_name() {
    return pick({"x", "y", "a.b", "0", "1", "", "bad name", "v_1", "%", "q"}) + (coin() ? std::to_string(below(5)) : "");
  }

  std::vector<uint8_t> constant_bytes(const TensorMeta& m) {
    size_t n = static_cast<size_t>(dtype_size(m.dtype));
    for (const SymExpr& s : m.sizes) n *= static_cast<size_t>(*s.as_int());
    std::vector<uint8_t> bytes(n);
    for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng_());
    if (m.dtype == DType::Bool)
      for (uint8_t& b : bytes) b &= 1;
    return bytes;
  }

  void fill(Graph& g, int level) {
    std::vector<Value*> scope, tensors;
    auto add = [&](Node* n) {
      for (Value* v : n->results()) {
        scope.push_back(v);
        if (v->is_tensor()) tensors.push_back(v);
      }
    };
    for (int i = below(8) + 1; i > 0; --i) {
      switch (below(6)) {
        case 0:
          add(g.create_node(NodeKind::Input, "", {}, {}, {ResultSpec::tensor(meta(g, tensors, false), value_name())}));
          break;
        case 1:
          add(g.create_node(NodeKind::Input, "", {}, {},
                            {ResultSpec::scalar(ValueType::Int, coin() ? int_expr(2) : SymExpr(), value_name())}));
          break;
        case 2:
          add(g.create_node(NodeKind::Param, random_string(), {}, {}, {ResultSpec::tensor(meta(g, tensors, false), value_name())}));
          break;
        case 3: {
          TensorMeta m = meta(g, tensors, true);
          std::vector<uint8_t> bytes = constant_bytes(m);
          Node* n = g.create_node(NodeKind::Constant, "", {}, {}, {ResultSpec::tensor(std::move(m), value_name())});
          n->set_constant_data(std::move(bytes));
          add(n);
          break;
        }
        default: {
          std::vector<Argument> args;
          for (int k = below(4); k > 0; --k) args.push_back(arg(scope, 2));
          std::vector<Kwarg> kwargs;
          for (int k = below(3); k > 0; --k) kwargs.push_back({pick({"alpha", "dim", "out", "k"}) + std::to_string(k), arg(scope, 1)});
          std::vector<ResultSpec> results;
          for (int k = below(3); k > 0; --k) {
            switch (below(4)) {
              case 0: results.push_back(ResultSpec::scalar(ValueType::Int, coin() ? int_expr(2) : SymExpr(), value_name())); break;
              case 1: results.push_back(ResultSpec::scalar(ValueType::Float, coin() ? float_expr(2) : SymExpr(), value_name())); break;
              case 2: results.push_back(ResultSpec::scalar(ValueType::Bool, coin() ? bool_expr(2) : SymExpr(), value_name())); break;
              default: results.push_back(ResultSpec::tensor(meta(g, tensors, false), value_name())); break;
            }
          }
          std::string op = pick({"aten.add.Tensor", "aten.view.default", "higher_order.cond", "input", "my op", "x"});
          Node* n = g.create_node(NodeKind::Call, op, std::move(args), std::move(kwargs), std::move(results));
          if (level < 3 && below(4) == 0) {
            for (int k = below(2) + 1; k > 0; --k) {
              Graph* sub = n->add_subgraph(pick({"true_branch", "false_branch", "body", "odd name"}) + std::to_string(k));
              sub->set_functional(coin());
              fill(*sub, level + 1);
            }
          }
          add(n);
          break;
        }
      }
    }
    std::vector<Argument> outs;
    for (int k = below(4); k > 0; --k) outs.push_back(coin() || scope.empty() ? Argument::none() : arg(scope, 0));
    if (below(8)) g.set_output(std::move(outs));
  }

  std::mt19937_64 rng_;
  ShapeEnv* env_ = nullptr;
  std::vector<SymExpr> ints_, floats_;
};

TEST(TextRandom, PrintParsePrintIsAFixedPoint) {
  for (uint64_t seed = 1; seed <= 1000; ++seed) {
    std::unique_ptr<Graph> g = RandomGraph(seed).build();
    std::string p1 = print_graph(*g);
    std::string p2;
    try {
      p2 = print_graph(*parse_graph(p1, "random.tir"));
    } catch (const UserError& e) {
      ADD_FAILURE() << "seed " << seed << ": " << e.what() << "\n" << p1;
      continue;
    }
    ASSERT_EQ(p1, p2) << "seed " << seed;
  }
}

}  // namespace
}  // namespace toroid
