// Scalar code shared by the C++ and CUDA emitters: one element's value as a C++ expression.
// The two dialects differ only in names (std::exp against expf), literals, casts to 16-bit
// floats and how an element is loaded; a ScalarDialect says which.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "toroid/codegen/kernel.h"
#include "toroid/loop/expr.h"

namespace toroid::codegen {

// The C++ type a value of `d` is computed in (bf16 and f16 in float).
const char* compute_type(DType d);
std::string int_literal(int64_t v);  // INT64_C(5)

class ScalarDialect {
 public:
  virtual ~ScalarDialect() = default;
  // The function computing `fn` ("exp", "sigmoid", "abs", "max", "isinf", ...) on values of type `t`;
  // for "rsqrt", "" where the dialect has none (scalar_expr then writes 1 / sqrt).
  virtual std::string math(const std::string& fn, DType t) const = 0;
  virtual std::string float_literal(double v, DType d) const = 0;
  // Rounds a float value to bf16 or f16 and back (a cast between floats).
  virtual std::string round_to(const std::string& x, DType to) const = 0;
  // Whether a cast to bf16 or f16 rounds (round_to), or only names the float value (the value
  // keeps float precision until a store converts it).
  virtual bool rounds_16bit_casts() const = 0;
  // A Load's value, as its compute type.
  virtual std::string load(loop::Expr load) = 0;
  // An index expression as integer code.
  virtual std::string index(SymExpr e) = 0;
  // A float symbol's value (a double), from the kernel's symbol arguments.
  virtual std::string float_symbol(SymExpr s) = 0;
  // The number of the kernel's error site (see IndexSite) for `op` at `dim`.
  virtual int64_t error_site(const Node* op, int64_t dim) = 0;
};

// The expression computing `e` from its operands' names (operand(i)); every op but
// IndirectLoad, which needs statements (the emitters write it).
std::string scalar_expr(loop::Expr e, const std::function<std::string(size_t)>& operand, ScalarDialect& d);

// An index expression as C++ over int64 (or the CUDA kernels' index type through the t_
// helpers): Python floor division and modulo.
std::string index_code(SymExpr e, const std::function<std::string(SymExpr)>& symbol_name,
                       const std::function<std::string(int64_t)>& literal = int_literal);

// The sites a kernel checks (kernel.h), numbered from 1 in the order first met: the generated
// code's error record names a site by its number. The number of (node, dim) in `sites`,
// appended when new.
int64_t site_number(std::vector<IndexSite>& sites, const Node* node, int64_t dim);

// An IndirectLoad: statements (written to os) that check each position (an out of range one
// records an error with t_index_check and reads nothing), and the expression of its value.
// `operand(k)` names the k-th position's value, `element(pos)` loads from the buffer's storage at
// position code `pos`, and positions are computed in `index_type` ("int64_t", or a CUDA kernel's I).
struct IndirectLoadCode {
  std::ostream& os;
  const std::string& indent;
  ScalarDialect& dialect;
  std::vector<IndexSite>& sites;
  const std::function<std::string()>& fresh_name;
  const std::function<std::string(size_t)>& operand;
  const std::function<std::string(const std::string&)>& element;
  const char* index_type;
};
std::string indirect_load_code(loop::Expr e, const IndirectLoadCode& c);

}  // namespace toroid::codegen
