// Helpers for the meta-function unit tests.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "toroid/graph/graph.h"
#include "toroid/ops/meta.h"
#include "toroid/ops/meta_util.h"

namespace toroid::ops::testing {

inline SymExpr I(int64_t v) { return SymExpr::integer(v); }
inline Argument A(int64_t v) { return Argument::integer(v); }
inline Argument F(double v) { return Argument::floating(v); }
inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

inline Argument B(bool v) { return Argument::boolean(v); }
inline Argument BL(std::initializer_list<bool> v) {
  Argument::List l;
  for (bool b : v) l.push_back(B(b));
  return Argument(l);
}
inline Argument L(std::initializer_list<int64_t> v) {
  Argument::List l;
  for (int64_t x : v) l.push_back(Argument::integer(x));
  return Argument(l);
}

inline std::vector<SymExpr> shape(std::initializer_list<int64_t> v) {
  std::vector<SymExpr> out;
  for (int64_t x : v) out.push_back(I(x));
  return out;
}

inline std::string str(const std::vector<SymExpr>& v) { return meta::shape_str(v); }

class MetaTest : public ::testing::Test {
 protected:
  Graph g;
  ShapeEnv& env() { return g.shape_env(); }

  Value* input(DType d, std::vector<SymExpr> sizes, std::vector<SymExpr> strides = {}) {
    TensorMeta m;
    m.dtype = d;
    m.sizes = std::move(sizes);
    m.strides = strides.empty() ? contiguous_strides(m.sizes) : std::move(strides);
    m.storage = g.new_storage();
    return g.add_input("x" + std::to_string(g.inputs().size()), m);
  }
  Value* input(DType d, std::initializer_list<int64_t> sizes, std::initializer_list<int64_t> strides = {}) {
    return input(d, shape(sizes), shape(strides));
  }
  // The single tensor result of op.
  TensorMeta run(const std::string& op, std::vector<Argument> args, std::vector<Kwarg> kwargs = {}) {
    std::vector<ResultSpec> r = infer_meta(g, op, args, kwargs);
    EXPECT_EQ(r.size(), 1u) << op;
    EXPECT_TRUE(r.at(0).meta.has_value()) << op;
    return *r.at(0).meta;
  }
  std::vector<ResultSpec> run_all(const std::string& op, std::vector<Argument> args, std::vector<Kwarg> kwargs = {}) {
    return infer_meta(g, op, args, kwargs);
  }
  // The UserError message of a bad call ("" if none).
  std::string error(const std::string& op, std::vector<Argument> args, std::vector<Kwarg> kwargs = {}) {
    try {
      infer_meta(g, op, args, kwargs);
    } catch (const UserError& e) {
      return e.message();
    }
    return "";
  }
  DType dtype(const std::string& op, std::vector<Argument> args, std::vector<Kwarg> kwargs = {}) {
    return run(op, std::move(args), std::move(kwargs)).dtype;
  }
};

}  // namespace toroid::ops::testing
