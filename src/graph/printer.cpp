// The canonical .tir printer (docs/tir.md). Deterministic: the same graph always prints the same
// text, and the parser reads that text back to a graph that prints identically.
#include <bit>
#include <charconv>
#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "lexer.h"
#include "toroid/graph/half.h"
#include "toroid/graph/text.h"
#include "toroid/support/base64.h"

namespace toroid {
namespace {

template <typename T>
std::string format_float(T v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest form that reads back exactly
  std::string s(buf, r.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

using text::quote;

std::string name_or_string(const std::string& s) { return text::is_ident(s) ? s : quote(s); }

std::string bound_str(int64_t v) {
  if (v == sym::ValueRange::kNegInf) return "-inf";
  if (v == sym::ValueRange::kPosInf) return "inf";
  return std::to_string(v);
}

std::string expr_str(SymExpr e) { return e ? e.str() : "None"; }

uint64_t load_le(const std::vector<uint8_t>& bytes, size_t at, int size) {
  uint64_t v = 0;
  for (int i = 0; i < size; ++i) v |= static_cast<uint64_t>(bytes[at + static_cast<size_t>(i)]) << (8 * i);
  return v;
}

std::string format_element(DType dt, uint64_t bits) {
  switch (dt) {
    case DType::Bool: return bits ? "true" : "false";
    case DType::UInt8: return std::to_string(static_cast<uint8_t>(bits));
    case DType::Int8: return std::to_string(static_cast<int8_t>(bits));
    case DType::Int16: return std::to_string(static_cast<int16_t>(bits));
    case DType::Int32: return std::to_string(static_cast<int32_t>(bits));
    case DType::Int64: return std::to_string(static_cast<int64_t>(bits));
    case DType::Float16: return format_float(f16_to_float(static_cast<uint16_t>(bits)));
    case DType::BFloat16: return format_float(bf16_to_float(static_cast<uint16_t>(bits)));
    case DType::Float32: return format_float(std::bit_cast<float>(static_cast<uint32_t>(bits)));
    case DType::Float64: return format_float(std::bit_cast<double>(bits));
    case DType::Complex64:
    case DType::Complex128: break;  // printed as two parts by the caller
  }
  return "?";
}

}  // namespace

std::unordered_map<const Value*, std::string> printed_value_names(const Graph& g) {
  std::unordered_map<const Value*, std::string> names;
  std::unordered_set<std::string> taken;
  std::vector<const Value*> unnamed;
  for (Node* n : g.nodes()) {
    for (size_t i = 0; i < n->num_results(); ++i) {
      const Value* v = n->result(i);
      if (text::is_value_name(v->name()) && taken.insert(v->name()).second) names[v] = v->name();
      else unnamed.push_back(v);
    }
  }
  size_t next = 0;
  for (const Value* v : unnamed) {
    std::string name;
    do {
      name = std::to_string(next++);
    } while (taken.count(name));
    taken.insert(name);
    names[v] = name;
  }
  return names;
}

namespace {

// Prints one graph scope: value names and storage first-uses are local to it.
class GraphPrinter {
 public:
  GraphPrinter(const Graph& g, std::string& out) : g_(g), out_(out), names_(printed_value_names(g)) {}

  void print_items(int indent) {
    for (Node* n : g_.nodes()) print_node(*n, indent);
  }

 private:
  std::string value_ref(const Value* v) const {
    auto it = names_.find(v);
    return it == names_.end() ? "%?" : "%" + it->second;  // "%?": not in this scope (invalid graph)
  }

  void arg(const Argument& a, std::string& s) const {
    switch (a.kind()) {
      case Argument::Kind::None: s += "None"; break;
      case Argument::Kind::Scalar: s += expr_str(a.scalar()); break;
      case Argument::Kind::String: s += quote(a.str()); break;
      case Argument::Kind::DType: s += text::torch_dtype_name(a.dtype()); break;
      case Argument::Kind::Device: s += "device(" + quote(text::device_name(a.device())) + ")"; break;
      case Argument::Kind::Layout: s += text::torch_layout_name(a.layout()); break;
      case Argument::Kind::MemoryFormat: s += text::torch_memory_format_name(a.memory_format()); break;
      case Argument::Kind::Value: s += value_ref(a.value()); break;
      case Argument::Kind::List: {
        s += '[';
        bool first = true;
        for (const Argument& item : a.list()) {
          if (!first) s += ", ";
          first = false;
          arg(item, s);
        }
        s += ']';
        break;
      }
    }
  }

  std::string type(const Value* v, bool with_value) {
    switch (v->type()) {
      case ValueType::Int:
      case ValueType::Float:
      case ValueType::Bool: {
        std::string s = value_type_name(v->type());
        if (with_value && v->scalar_value()) s += "{value=" + v->scalar_value().str() + "}";
        return s;
      }
      case ValueType::Tensor: break;
    }
    const TensorMeta& m = v->meta();
    std::string s = text::tir_dtype_name(m.dtype);
    s += '[';
    for (size_t i = 0; i < m.sizes.size(); ++i) s += (i ? ", " : "") + expr_str(m.sizes[i]);
    s += ']';
    std::vector<std::string> attrs;
    if (!m.is_contiguous()) {
      std::string st = "strides=[";
      for (size_t i = 0; i < m.strides.size(); ++i) st += (i ? ", " : "") + expr_str(m.strides[i]);
      attrs.push_back(st + "]");
    }
    if (m.offset && m.offset != SymExpr::integer(0)) attrs.push_back("offset=" + m.offset.str());
    if (!m.device.is_cpu()) attrs.push_back("device=" + text::device_name(m.device));
    if (m.storage) {
      auto [it, fresh] = storage_owner_.emplace(m.storage, v);
      if (!fresh) attrs.push_back("storage=" + value_ref(it->second));
    }
    if (!attrs.empty()) {
      s += '{';
      for (size_t i = 0; i < attrs.size(); ++i) s += (i ? ", " : "") + attrs[i];
      s += '}';
    }
    return s;
  }

  std::string types(const Node& n, bool with_value) {
    std::string s;
    for (size_t i = 0; i < n.num_results(); ++i) s += (i ? ", " : "") + type(n.result(i), with_value);
    return s;
  }

  std::string constant_data(const Node& n) const {
    if (n.num_results() != 1) return "None";
    const Value* v = n.result(0);
    if (!v->is_tensor()) return expr_str(v->scalar_value());
    DType dt = v->meta().dtype;
    const std::vector<uint8_t>& bytes = n.constant_data();
    if (is_complex(dt)) dt = complex_value_type(dt);  // a list of real and imaginary parts
    auto size = static_cast<size_t>(dtype_size(dt));
    size_t count = bytes.size() / size;
    if (v->meta().sizes.empty() && count == 1 && dt == v->meta().dtype)
      return format_element(dt, load_le(bytes, 0, static_cast<int>(size)));
    std::string s = "[";
    for (size_t i = 0; i < count; ++i)
      s += (i ? ", " : "") + format_element(dt, load_le(bytes, i * size, static_cast<int>(size)));
    return s + "]";
  }

  void print_node(const Node& n, int indent) {
    std::string s(static_cast<size_t>(indent), ' ');
    if (n.kind() == NodeKind::Output) {
      s += "output";
      for (size_t i = 0; i < n.args().size(); ++i) {
        s += i ? ", " : " ";
        arg(n.args()[i], s);
      }
      out_ += s + "\n";
      return;
    }
    for (size_t i = 0; i < n.num_results(); ++i) s += (i ? ", " : "") + value_ref(n.result(i));
    if (n.num_results()) s += " = ";
    switch (n.kind()) {
      case NodeKind::Input: s += std::string(n.donated() ? "input donated : " : "input : ") + types(n, true); break;
      case NodeKind::Param: s += "param " + quote(n.target()) + " : " + types(n, true); break;
      case NodeKind::Constant: s += "constant " + constant_data(n) + " : " + types(n, false); break;
      default: {
        const std::string& t = n.target();
        s += text::is_dotted_ident(t) && !text::is_item_keyword(t) ? t : quote(t);
        s += '(';
        bool first = true;
        for (const Argument& a : n.args()) {
          if (!first) s += ", ";
          first = false;
          arg(a, s);
        }
        for (const Kwarg& k : n.kwargs()) {
          if (!first) s += ", ";
          first = false;
          s += k.name + "=";
          arg(k.value, s);
        }
        s += ')';
        if (n.num_results()) s += " : " + types(n, true);
        break;
      }
    }
    if (!n.origin().empty())
      s += " origin(" + quote(n.origin().name) + (n.origin().stack.empty() ? "" : ", " + quote(n.origin().stack)) + ")";
    out_ += s + "\n";
    for (const NamedSubgraph& sg : n.subgraphs()) {
      out_ += std::string(static_cast<size_t>(indent + 2), ' ') + "subgraph " + name_or_string(sg.name) +
              (sg.graph->functional() ? " functional" : "") + " {\n";
      GraphPrinter(*sg.graph, out_).print_items(indent + 4);
      out_ += std::string(static_cast<size_t>(indent + 2), ' ') + "}\n";
    }
  }

  const Graph& g_;
  std::string& out_;
  std::unordered_map<const Value*, std::string> names_;
  std::unordered_map<const Storage*, const Value*> storage_owner_;
};

}  // namespace

std::string print_graph(const Graph& g) {
  std::string out = "graph @" + name_or_string(g.name()) + (g.functional() ? " functional" : "") + " {\n";
  if (!g.parent_node()) {
    const ShapeEnv& env = g.shape_env();
    for (const sym::SymbolInfo& info : env.symbols()) {
      out += "  sym " + info.symbol.symbol().name + " : ";
      if (info.symbol.symbol().type == sym::Type::Float) {
        out += "float, ";
        out += info.unbacked ? "unbacked" : "hint=" + format_float(info.float_hint.value_or(0.0));
      } else {
        out += info.unbacked ? "unbacked" : "hint=" + std::to_string(info.hint.value_or(0));
        out += ", range=[" + bound_str(info.range.lo) + ", " + bound_str(info.range.hi) + "]";
        if (info.divisor != 1) out += ", divisor=" + std::to_string(info.divisor);
      }
      out += "\n";
    }
    for (const sym::Guard& guard : env.guards()) out += "  guard " + expr_str(guard.condition) + "\n";
    for (const UserKernelEntry& k : g.user_kernels())
      out += "  kernel " + quote(k.name) + " : kind=" + quote(k.kind) +
             (k.entry != k.name ? ", entry=" + quote(k.entry) : std::string()) + ", source=" + quote(k.source) +
             (k.ttir.empty() ? std::string() : ", ttir=" + quote(k.ttir)) +
             (k.cubin.empty() ? std::string() : ", cubin=" + quote(base64_encode(k.cubin))) + "\n";
  }
  GraphPrinter(g, out).print_items(2);
  out += "}\n";
  return out;
}

}  // namespace toroid
