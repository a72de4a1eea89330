#include "toroid/codegen/scalar.h"

#include <limits>

#include "toroid/graph/graph.h"
#include "toroid/support/error.h"

namespace toroid::codegen {

using loop::Expr;
using loop::Op;

const char* compute_type(DType d) {
  switch (d) {
    case DType::Bool: return "bool";
    case DType::UInt8: return "uint8_t";
    case DType::Int8: return "int8_t";
    case DType::Int16: return "int16_t";
    case DType::Int32: return "int32_t";
    case DType::Int64: return "int64_t";
    case DType::Float16:
    case DType::BFloat16:
    case DType::Float32: return "float";
    case DType::Float64: return "double";
    case DType::Complex64:
    case DType::Complex128: break;  // lowering sends complex ops to their reference kernels
  }
  TOROID_INTERNAL_ERROR(std::string("no compute type for ") + dtype_short_name(d));
}

std::string int_literal(int64_t v) {
  if (v == std::numeric_limits<int64_t>::min()) return "INT64_MIN";
  return "INT64_C(" + std::to_string(v) + ")";
}

std::string index_code(SymExpr e, const std::function<std::string(SymExpr)>& name,
                       const std::function<std::string(int64_t)>& literal) {
  auto sub = [&](size_t i) { return index_code(e.operands()[i], name, literal); };
  auto list = [&](const char* sep) {
    std::string s = "(";
    for (size_t i = 0; i < e.operands().size(); ++i) s += (i ? sep : "") + sub(i);
    return s + ")";
  };
  auto fold = [&](const char* fn) {
    std::string s = sub(0);
    for (size_t i = 1; i < e.operands().size(); ++i) s = std::string(fn) + "(" + s + ", " + sub(i) + ")";
    return s;
  };
  auto cmp = [&](const char* op) { return "(" + sub(0) + " " + op + " " + sub(1) + ")"; };
  switch (e.kind()) {
    case sym::Kind::IntConst: return literal(e.int_value());
    case sym::Kind::BoolConst: return e.bool_value() ? "true" : "false";
    case sym::Kind::Symbol: return name(e);
    case sym::Kind::Add: return list(" + ");
    case sym::Kind::Mul: return list(" * ");
    case sym::Kind::FloorDiv: return "t_floordiv(" + sub(0) + ", " + sub(1) + ")";
    case sym::Kind::Mod: return "t_mod(" + sub(0) + ", " + sub(1) + ")";
    case sym::Kind::Min: return fold("t_imin");
    case sym::Kind::Max: return fold("t_imax");
    case sym::Kind::Pow: {
      std::string b = sub(0), s = literal(1);
      for (int64_t k = 0; k < e.exponent(); ++k) s += " * " + b;
      return "(" + s + ")";
    }
    case sym::Kind::Eq: return cmp("==");
    case sym::Kind::Ne: return cmp("!=");
    case sym::Kind::Lt: return cmp("<");
    case sym::Kind::Le: return cmp("<=");
    case sym::Kind::And: return list(" && ");
    case sym::Kind::Or: return list(" || ");
    case sym::Kind::Not: return "(!" + sub(0) + ")";
    default:
      user_error(std::string("index expression ") + e.str() + " (" + sym::kind_name(e.kind()) +
                 ") cannot be compiled");
  }
}

namespace {

std::string cast_code(const std::string& x, DType to, ScalarDialect& d) {
  if (to == DType::Bool) return "(" + x + " != 0)";
  if (to == DType::BFloat16 || to == DType::Float16)
    return d.rounds_16bit_casts() ? d.round_to(x, to) : "static_cast<float>(" + x + ")";
  return std::string("static_cast<") + compute_type(to) + ">(" + x + ")";
}

}  // namespace

std::string scalar_expr(Expr e, const std::function<std::string(size_t)>& a, ScalarDialect& d) {
  DType in = e.operands().empty() ? e.dtype() : e.operand(0).dtype();
  bool fp = is_floating(in);
  const char* T = compute_type(in);
  std::string cast_T = std::string("static_cast<") + T + ">";
  auto call = [&](const char* fn) { return d.math(fn, in) + "(" + a(0) + ")"; };
  auto call2 = [&](const char* fn) { return d.math(fn, in) + "(" + a(0) + ", " + a(1) + ")"; };
  auto bin = [&](const char* op) { return "(" + a(0) + " " + op + " " + a(1) + ")"; };
  auto bits = [&](const char* op) {
    return std::string("static_cast<") + compute_type(e.dtype()) + ">(" + a(0) + " " + op + " " + a(1) + ")";
  };
  bool boolean = e.dtype() == DType::Bool;
  // A checked integer division's divisor records an error at its op when it is 0.
  auto divisor = [&] {
    if (!e.site()) return a(1);
    return "t_nonzero(" + a(1) + ", " + std::to_string(d.error_site(e.site(), kZeroDivisorDim)) + ")";
  };
  switch (e.op()) {
    case Op::Load: return d.load(e);
    case Op::Const:
      if (is_floating(e.dtype())) return d.float_literal(e.float_value(), e.dtype());
      if (boolean) return e.int_value() ? "true" : "false";
      return std::string("static_cast<") + compute_type(e.dtype()) + ">(" + int_literal(e.int_value()) + ")";
    case Op::Index:
      if (e.dtype() == DType::Float64) return d.float_symbol(e.index());
      return "static_cast<int64_t>(" + d.index(e.index()) + ")";
    case Op::IndirectLoad: break;  // statements first: the emitters write it
    case Op::Cast: return cast_code(a(0), e.dtype(), d);
    case Op::Neg: return boolean ? a(0) : "(-" + a(0) + ")";
    case Op::Abs: return fp ? call("abs") : "(" + a(0) + " < 0 ? -" + a(0) + " : " + a(0) + ")";
    case Op::Exp: return call("exp");
    case Op::Expm1: return call("expm1");
    case Op::Log: return call("log");
    case Op::Log1p: return call("log1p");
    case Op::Log2: return call("log2");
    case Op::Log10: return call("log10");
    case Op::Sqrt: return call("sqrt");
    case Op::Rsqrt:
      if (std::string f = d.math("rsqrt", in); !f.empty()) return f + "(" + a(0) + ")";
      return std::string("(") + T + "(1) / " + call("sqrt") + ")";
    case Op::Sin: return call("sin");
    case Op::Cos: return call("cos");
    case Op::Tan: return call("tan");
    case Op::Tanh: return call("tanh");
    case Op::Asin: return call("asin");
    case Op::Acos: return call("acos");
    case Op::Atan: return call("atan");
    case Op::Sinh: return call("sinh");
    case Op::Cosh: return call("cosh");
    case Op::Asinh: return call("asinh");
    case Op::Acosh: return call("acosh");
    case Op::Atanh: return call("atanh");
    case Op::Sigmoid: return call("sigmoid");
    case Op::Erf: return call("erf");
    case Op::Ceil: return call("ceil");
    case Op::Floor: return call("floor");
    case Op::Round: return call("nearbyint");
    case Op::Trunc: return call("trunc");
    case Op::Sign: return boolean ? a(0) : "t_sign(" + a(0) + ")";
    case Op::Reciprocal: return std::string("(") + T + "(1) / " + a(0) + ")";
    case Op::Relu: return boolean ? a(0) : "t_relu(" + a(0) + ")";
    case Op::LogicalNot: return "(!" + a(0) + ")";
    case Op::BitNot: return boolean ? "(!" + a(0) + ")" : cast_T + "(~" + a(0) + ")";
    case Op::IsNan: return fp ? "(" + a(0) + " != " + a(0) + ")" : "false";
    case Op::IsInf: return fp ? call("isinf") : "false";
    case Op::Add: return boolean ? bin("||") : bin("+");
    case Op::Sub: return bin("-");
    case Op::Mul: return boolean ? bin("&&") : bin("*");
    case Op::Div: return fp ? bin("/") : "t_truncdiv(" + a(0) + ", " + divisor() + ")";
    case Op::FloorDiv: return fp ? "t_floordiv_f(" + a(0) + ", " + a(1) + ")" : cast_T + "(t_floordiv(" + a(0) + ", " + divisor() + "))";
    case Op::TruncDiv: return cast_T + "(t_truncdiv(" + a(0) + ", " + divisor() + "))";
    case Op::Pow: return fp ? call2("pow") : "t_ipow(" + a(0) + ", " + a(1) + ")";
    case Op::Maximum: return fp ? "t_maximum(" + a(0) + ", " + a(1) + ")" : call2("max");
    case Op::Minimum: return fp ? "t_minimum(" + a(0) + ", " + a(1) + ")" : call2("min");
    case Op::Atan2: return call2("atan2");
    case Op::Fmod: return fp ? call2("fmod") : cast_T + "(t_fmod(" + a(0) + ", " + divisor() + "))";
    case Op::Remainder: return fp ? "t_remainder_f(" + a(0) + ", " + a(1) + ")" : cast_T + "(t_mod(" + a(0) + ", " + divisor() + "))";
    case Op::Eq: return bin("==");
    case Op::Ne: return bin("!=");
    case Op::Lt: return bin("<");
    case Op::Le: return bin("<=");
    case Op::Gt: return bin(">");
    case Op::Ge: return bin(">=");
    case Op::LogicalAnd: return "(static_cast<bool>(" + a(0) + ") && static_cast<bool>(" + a(1) + "))";
    case Op::LogicalOr: return "(static_cast<bool>(" + a(0) + ") || static_cast<bool>(" + a(1) + "))";
    case Op::LogicalXor: return "(static_cast<bool>(" + a(0) + ") != static_cast<bool>(" + a(1) + "))";
    case Op::BitAnd: return bits("&");
    case Op::BitOr: return bits("|");
    case Op::BitXor: return bits("^");
    case Op::Where: return "(" + a(0) + " ? " + a(1) + " : " + a(2) + ")";
  }
  TOROID_INTERNAL_ERROR("unhandled loop op");
}

int64_t site_number(std::vector<IndexSite>& sites, const Node* n, int64_t dim) {
  for (size_t k = 0; k < sites.size(); ++k)
    if (sites[k].key == n && sites[k].dim == dim) return static_cast<int64_t>(k) + 1;
  sites.push_back({n->target(), n->loc(), dim, n});
  return static_cast<int64_t>(sites.size());
}

std::string site_error(const IndexSite& s, int64_t size, int64_t value) {
  if (s.dim == kZeroDivisorDim) return s.op + ": ZeroDivisionError: integer division or modulo by zero";
  return s.op + ": index " + std::to_string(value) + " is out of bounds for dimension " +
         std::to_string(s.dim) + " with size " + std::to_string(size);
}

std::string indirect_load_code(loop::Expr e, const IndirectLoadCode& c) {
  std::string at = c.dialect.index(e.index()), ok;
  for (size_t k = 0; k < e.operands().size(); ++k) {
    std::string t = c.fresh_name();
    c.os << c.indent << "const int64_t " << t << " = t_index_check(static_cast<int64_t>(" << c.operand(k)
         << "), static_cast<int64_t>(" << c.dialect.index(e.size(k)) << "), " << (e.wraps() ? "true" : "false") << ", "
         << site_number(c.sites, e.site(), e.indirect_dim(k)) << ");\n";
    at += " + static_cast<" + std::string(c.index_type) + ">(" + t + ") * " + c.dialect.index(e.stride(k));
    ok += (k ? " && " : "") + t + " >= 0";
  }
  const char* T = compute_type(e.dtype());
  return "(" + ok + " ? " + T + "(" + c.element(at) + ") : " + T + "())";
}

}  // namespace toroid::codegen
