#include "toroid/codegen/cuda/kernel_ir_analysis.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include "kernel_ir_common.h"
#include "toroid/support/error.h"

namespace toroid::codegen::cuda {

namespace {

using detail::Summary;
using detail::Taint;

// One PTX statement of a function body, labels and comments removed.
struct Stmt {
  std::string text;
  int line = 0;
  bool inline_asm = false;  // between NVRTC's `// begin inline asm` and `// end inline asm`
  int scope = 0;            // the `{ }` block it is in (call blocks declare their own .param slots)
};

struct Function {
  std::string name;
  bool entry = false;
  std::vector<KernelParam> params;
  std::vector<Stmt> body;
  int line = 0;
};

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

std::string trim(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && is_space(s[a])) ++a;
  while (b > a && is_space(s[b - 1])) --b;
  return s.substr(a, b - a);
}

// Splits at commas outside brackets, braces and parentheses.
std::vector<std::string> split_operands(const std::string& s) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '[' || c == '{' || c == '(') ++depth;
    if (c == ']' || c == '}' || c == ')') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!trim(cur).empty()) out.push_back(trim(cur));
  return out;
}

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '.'; }

// The registers (`%rd4`) and plain symbols (`add_one_param_0`) an operand names.
void names_in(const std::string& s, std::vector<std::string>& regs, std::vector<std::string>& symbols) {
  for (size_t i = 0; i < s.size();) {
    if (s[i] == '%') {
      size_t j = i + 1;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      regs.push_back(s.substr(i, j - i));
      i = j;
    } else if (std::isalpha(static_cast<unsigned char>(s[i])) || s[i] == '_' || s[i] == '$') {
      size_t j = i;
      while (j < s.size() && ident_char(s[j])) ++j;
      symbols.push_back(s.substr(i, j - i));
      i = j;
    } else {
      ++i;
    }
  }
}

// The base register or symbol of an address operand `[%rd7+4]` (empty if none).
std::string address_base(const std::string& operand) {
  size_t open = operand.find('['), close = operand.find_first_of("+-]", open == std::string::npos ? 0 : open + 1);
  if (open == std::string::npos || close == std::string::npos) return "";
  std::string base = trim(operand.substr(open + 1, close - open - 1));
  size_t comma = base.find(',');  // a tensor-map operand: [tmap, {coords}]
  return trim(comma == std::string::npos ? base : base.substr(0, comma));
}

// ---- parsing ------------------------------------------------------------------------------------

// .u8 .. .u64, .s8 .. .s64, .b8 .. .b64, .f16, .f32, .f64, .pred
bool is_param_type(const std::string& w) {
  if (w == ".pred") return true;
  if (w.size() < 3 || w[0] != '.' || std::string("usbf").find(w[1]) == std::string::npos) return false;
  std::string bits = w.substr(2);
  return bits == "8" || bits == "16" || bits == "32" || bits == "64";
}

std::vector<KernelParam> parse_params(const std::string& list, const SourceLoc& at) {
  std::vector<KernelParam> out;
  for (const std::string& p : split_operands(list)) {
    std::istringstream in(p);
    std::vector<std::string> words;
    for (std::string w; in >> w;) words.push_back(w);
    if (words.size() < 2 || words[0] != ".param") user_error("PTX: cannot read parameter '" + p + "'", at);
    KernelParam param;
    std::string name = words.back(), type;
    // The type among the qualifiers: `.param .u64 .ptr .global .align 1 name` (LLVM's PTX, as
    // Triton's) as well as `.param .align 8 .b8 name[16]`.
    for (size_t i = 1; i + 1 < words.size() && type.empty(); ++i)
      if (is_param_type(words[i])) type = words[i];
    if (type.empty()) user_error("PTX: no type in parameter '" + p + "'", at);
    if (size_t b = name.find('['); b != std::string::npos) {
      type += name.substr(b);
      name = name.substr(0, b);
    }
    param.name = name;
    param.type = type;
    out.push_back(param);
  }
  return out;
}

// A function header: `.visible .entry name(params)` or `.func (.param .b32 r) name(params)`.
std::optional<Function> parse_header(const std::string& text, const SourceLoc& at) {
  size_t e = text.find(".entry"), f = text.find(".func");
  if (e == std::string::npos && f == std::string::npos) return std::nullopt;
  Function fn;
  fn.entry = e != std::string::npos;
  fn.line = at.line;
  std::string rest = trim(text.substr(fn.entry ? e + 6 : f + 5));
  if (!rest.empty() && rest[0] == '(') {  // return parameters
    size_t close = rest.find(')');
    if (close == std::string::npos) user_error("PTX: unterminated return list", at);
    rest = trim(rest.substr(close + 1));
  }
  size_t open = rest.find('(');
  fn.name = trim(rest.substr(0, open));
  if (open != std::string::npos) {
    size_t close = rest.rfind(')');
    if (close == std::string::npos || close < open)
      user_error("PTX: unterminated parameter list of " + fn.name, at);
    fn.params = parse_params(rest.substr(open + 1, close - open - 1), at);
  }
  return fn;
}

bool starts_word(const std::string& s, size_t i, std::string_view word) {
  return s.compare(i, word.size(), word) == 0 && (i + word.size() == s.size() || is_space(s[i + word.size()]));
}

bool is_label(const std::string& text) {
  if (text.empty() || text[0] == '.' || text[0] == '%' || std::isdigit(static_cast<unsigned char>(text[0]))) return false;
  for (char c : text)
    if (!ident_char(c) || c == '.') return false;
  return true;
}

std::vector<Function> parse_module(const std::string& ptx, const std::string& file) {
  std::vector<Function> out;
  std::optional<Function> current;
  int depth = 0, scopes = 0, line = 1, stmt_line = 1;
  std::vector<int> scope_stack;
  bool in_asm = false;
  std::string buf;
  auto flush = [&](bool at_brace) {
    std::string text = trim(buf);
    buf.clear();
    if (text.empty()) return;
    // Leading labels (`$L__BB0_2:`).
    for (;;) {
      size_t colon = text.find(':');
      if (colon == std::string::npos || colon == 0) break;
      std::string head = text.substr(0, colon);
      bool label = true;
      for (char c : head) label = label && (ident_char(c) && c != '.');
      if (!label || (colon + 1 < text.size() && text[colon + 1] == ':')) break;
      text = trim(text.substr(colon + 1));
    }
    if (text.empty()) return;
    if (depth == 0) {
      if (at_brace) {
        // Directives without a semicolon (.version, .target) come before the header.
        size_t at = std::min(text.find(".entry"), text.find(".func"));
        int header_line = stmt_line;
        for (size_t k = 0; at != std::string::npos && k < at; ++k) header_line += text[k] == '\n';
        current = parse_header(text, SourceLoc{file, header_line, 0});
        if (!current) user_error("PTX: a block that is not a function: '" + text + "'", SourceLoc{file, header_line, 0});
      }
      return;  // module directives, declarations without bodies
    }
    if (current && text[0] != '.') current->body.push_back({text, stmt_line, in_asm, scope_stack.empty() ? 0 : scope_stack.back()});
  };
  for (size_t i = 0; i < ptx.size(); ++i) {
    char c = ptx[i];
    if (c == '/' && i + 1 < ptx.size() && ptx[i + 1] == '/') {
      size_t end = ptx.find('\n', i);
      std::string comment = ptx.substr(i, end == std::string::npos ? std::string::npos : end - i);
      if (comment.find("begin inline asm") != std::string::npos) in_asm = true;
      if (comment.find("end inline asm") != std::string::npos) in_asm = false;
      i = (end == std::string::npos ? ptx.size() : end) - 1;
      continue;
    }
    if (c == '/' && i + 1 < ptx.size() && ptx[i + 1] == '*') {
      size_t end = ptx.find("*/", i + 2);
      for (size_t k = i; k < (end == std::string::npos ? ptx.size() : end); ++k) line += ptx[k] == '\n';
      i = end == std::string::npos ? ptx.size() : end + 1;
      continue;
    }
    if (c == '\n') ++line;
    bool at_statement = trim(buf).empty();
    if (at_statement && !is_space(c)) stmt_line = line;
    // Directives that end at the line's end, not at a ';' (LLVM's debug lines: `.loc 1 21 25`).
    if (at_statement && c == '.' && (starts_word(ptx, i, ".loc") || starts_word(ptx, i, ".file"))) {
      size_t end = ptx.find('\n', i);
      i = (end == std::string::npos ? ptx.size() : end) - 1;
      continue;
    }
    // A label ends at its ':' (`$L__func_end0:` may come right before the body's '}').
    if (c == ':' && depth > 0 && is_label(trim(buf))) {
      buf.clear();
      continue;
    }
    if (c == '{' && trim(buf).find_first_not_of(" \t\r\n") == std::string::npos && depth > 0) {
      scope_stack.push_back(++scopes);  // a nested block (a call's parameter scope)
      ++depth;
      continue;
    }
    if (c == '{' && depth == 0 && trim(buf).find(".section") != std::string::npos &&
        trim(buf).find(".entry") == std::string::npos && trim(buf).find(".func") == std::string::npos) {
      // A data section (LLVM's DWARF: `.section .debug_info { .b8 1 ... }`): no code in it.
      buf.clear();
      for (int open = 0; i < ptx.size(); ++i) {
        line += ptx[i] == '\n';
        open += ptx[i] == '{';
        if (ptx[i] == '}' && --open == 0) break;
      }
      if (i == ptx.size()) user_error("PTX: a .section block is not closed", SourceLoc{file, stmt_line, 0});
      continue;
    }
    if (c == '{' && depth == 0) {
      flush(true);
      ++depth;
      scope_stack.assign(1, ++scopes);
      continue;
    }
    if (c == '}' && trim(buf).empty()) {
      if (depth == 0) user_error("PTX: '}' without a block", SourceLoc{file, line, 0});
      --depth;
      if (!scope_stack.empty()) scope_stack.pop_back();
      if (depth == 0 && current) {
        out.push_back(std::move(*current));
        current.reset();
      }
      continue;
    }
    if (c == ';') {
      flush(false);
      continue;
    }
    buf += c;
  }
  if (depth != 0) user_error("PTX: the body of " + (current ? current->name : std::string("a function")) + " is not closed",
                             SourceLoc{file, current ? current->line : line, 0});
  return out;
}

// ---- the analysis -------------------------------------------------------------------------------


// 64-bit scalars and byte arrays (structs by value): what can hold a pointer.
bool pointer_like(const KernelParam& p) {
  return p.type == ".u64" || p.type == ".b64" || p.type == ".s64" || p.type.find('[') != std::string::npos;
}

bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }
bool has(const std::string& s, const char* p) { return s.find(p) != std::string::npos; }

class Analyzer {
 public:
  explicit Analyzer(const std::vector<Function>& fns) {
    for (const Function& f : fns) by_name_[f.name] = &f;
  }

  const Summary& summary(const Function& f) {
    if (auto it = done_.find(f.name); it != done_.end()) return it->second;
    if (active_.count(f.name)) return recursive(f);
    active_.insert(f.name);
    Summary s = run(f);
    active_.erase(f.name);
    return done_[f.name] = std::move(s);
  }

 private:
  const Summary& recursive(const Function& f) {
    return done_["<recursive>" + f.name] = detail::recursive_summary(f.params.size());
  }

  Summary run(const Function& f) {
    std::map<std::string, int> param_index;
    for (size_t i = 0; i < f.params.size(); ++i) param_index[f.params[i].name] = static_cast<int>(i);
    Summary s;
    s.written.assign(f.params.size(), false);
    s.read.assign(f.params.size(), false);
    std::map<std::string, Taint> regs, slots;  // registers; call-scope .param slots (by scope)
    std::set<std::string> notes;
    auto slot = [](const std::string& name, int scope) { return name + "@" + std::to_string(scope); };
    auto taint_of = [&](const std::string& operand) {
      std::vector<std::string> rs, syms;
      names_in(operand, rs, syms);
      Taint t;
      for (const std::string& r : rs)
        if (auto it = regs.find(r); it != regs.end()) t.merge(it->second);
      for (const std::string& sym : syms)
        if (auto it = param_index.find(sym); it != param_index.end()) t.params.insert(it->second);
      return t;
    };
    auto mark = [&](std::vector<bool>& which, const Taint& t, bool write, const Stmt& st, const char* what) {
      for (int p : t.params) which[static_cast<size_t>(p)] = true;
      if (t.params.empty() && t.loaded && write) {
        s.any_pointer_written = true;
        notes.insert(std::string("every pointer parameter treated as written: ") + what +
                     " through a pointer loaded from memory (PTX line " + std::to_string(st.line) + ")");
      }
    };
    auto all_written = [&](const std::string& why) {
      s.any_pointer_written = true;
      notes.insert("every pointer parameter treated as written: " + why);
    };
    for (bool changed = true; changed;) {
      changed = false;
      auto assign = [&](const std::string& dst_operand, const Taint& t) {
        std::vector<std::string> rs, syms;
        names_in(dst_operand, rs, syms);
        for (const std::string& r : rs) changed = regs[r].merge(t) || changed;
      };
      for (const Stmt& st : f.body) {
        std::string text = st.text;
        if (text[0] == '@') text = trim(text.substr(text.find_first_of(" \t") == std::string::npos ? text.size() : text.find_first_of(" \t")));
        size_t sp = text.find_first_of(" \t");
        std::string op = text.substr(0, sp);
        std::vector<std::string> ops = sp == std::string::npos ? std::vector<std::string>{} : split_operands(text.substr(sp + 1));
        if (st.inline_asm) {
          for (const std::string& o : ops) {
            Taint t = taint_of(o);
            for (int p : t.params) {
              if (!pointer_like(f.params[static_cast<size_t>(p)])) continue;  // an offset, a size
              if (!s.written[static_cast<size_t>(p)])
                notes.insert("param " + std::to_string(p) + " treated as written: used by inline PTX (PTX line " +
                             std::to_string(st.line) + ")");
              s.written[static_cast<size_t>(p)] = true;
            }
          }
        }
        if (ops.empty()) continue;
        bool shared_or_local = has(op, ".shared") || has(op, ".local") || has(op, ".const");
        if (starts_with(op, "ld.param") || starts_with(op, "ldu.param")) {
          std::string base = address_base(ops.back());
          Taint t;
          if (auto it = param_index.find(base); it != param_index.end()) t.params.insert(it->second);
          else if (auto sl = slots.find(slot(base, st.scope)); sl != slots.end()) t = sl->second;
          assign(ops[0], t);
        } else if (starts_with(op, "st.param")) {
          changed = slots[slot(address_base(ops[0]), st.scope)].merge(taint_of(ops.back())) || changed;
        } else if (starts_with(op, "ld") || starts_with(op, "tex") || starts_with(op, "tld4") || starts_with(op, "suld")) {
          if (!shared_or_local) mark(s.read, taint_of("[" + address_base(ops.back()) + "]"), false, st, "a load");
          Taint loaded;
          loaded.loaded = true;
          assign(ops[0], loaded);
        } else if (starts_with(op, "st") || starts_with(op, "red")) {
          if (!shared_or_local) mark(s.written, taint_of("[" + address_base(ops[0]) + "]"), true, st, "a store");
        } else if (starts_with(op, "atom")) {
          if (!shared_or_local && ops.size() > 1) {
            Taint t = taint_of("[" + address_base(ops[1]) + "]");
            mark(s.written, t, true, st, "an atomic");
            mark(s.read, t, false, st, "an atomic");
          }
          Taint loaded;
          loaded.loaded = true;
          assign(ops[0], loaded);
        } else if (starts_with(op, "sust") || starts_with(op, "sured")) {
          all_written("a surface store (PTX line " + std::to_string(st.line) + ")");
        } else if (starts_with(op, "cp.async.bulk") || starts_with(op, "cp.reduce.async.bulk")) {
          if (has(op, ".global.shared")) {  // to global memory: a bulk or tensor-map (TMA) store
            Taint t = taint_of("[" + address_base(ops[0]) + "]");
            if (has(op, ".tensor")) {
              for (int p : t.params)
                if (pointer_like(f.params[static_cast<size_t>(p)]))
                  notes.insert("param " + std::to_string(p) + " treated as written: the tensor map of a TMA store (PTX line " +
                             std::to_string(st.line) + ")");
              if (t.params.empty()) all_written("a TMA store through a tensor map of unknown origin (PTX line " + std::to_string(st.line) + ")");
            }
            mark(s.written, t, true, st, "a bulk store");
          }
        } else if (starts_with(op, "call")) {
          changed = call(st, ops, slots, s, notes, slot) || changed;
        } else if (op == "bra" || op == "ret" || op == "exit" || starts_with(op, "bar") || starts_with(op, "membar") ||
                   starts_with(op, "fence") || op == "trap") {
          continue;
        } else {
          // Arithmetic, moves, conversions, selects: the first operand takes every other's taint.
          Taint t;
          for (size_t i = 1; i < ops.size(); ++i) t.merge(taint_of(ops[i]));
          assign(ops[0], t);
        }
      }
    }
    s.notes.assign(notes.begin(), notes.end());
    return s;
  }

  // A call: the callee's written parameters map back through the argument slots; a callee
  // without a body (or an indirect call) writes every parameter its arguments point into.
  template <class SlotName>
  bool call(const Stmt& st, const std::vector<std::string>& ops, std::map<std::string, Taint>& slots, Summary& s,
            std::set<std::string>& notes, SlotName slot) {
    std::vector<std::string> rets, args;
    size_t at = 0;
    auto inner = [](const std::string& group) {
      std::vector<std::string> names;
      for (const std::string& n : split_operands(group.substr(1, group.size() - 2))) names.push_back(n);
      return names;
    };
    if (at < ops.size() && ops[at][0] == '(') rets = inner(ops[at++]);
    std::string target = at < ops.size() ? ops[at++] : "";
    if (at < ops.size() && ops[at][0] == '(') args = inner(ops[at++]);
    std::vector<Taint> arg_taint;
    Taint all;
    for (const std::string& a : args) {
      auto it = slots.find(slot(a, st.scope));
      arg_taint.push_back(it == slots.end() ? Taint{} : it->second);
      all.merge(arg_taint.back());
    }
    auto callee = by_name_.find(target);
    if (target.empty() || target[0] == '%' || callee == by_name_.end() || callee->second->body.empty()) {
      for (int p : all.params) {
        s.written[static_cast<size_t>(p)] = true;
        s.read[static_cast<size_t>(p)] = true;
        notes.insert("param " + std::to_string(p) + " treated as written: passed to " +
                     (target.empty() || target[0] == '%' ? std::string("an indirect call") : "'" + target + "', whose body is not in the module") +
                     " (PTX line " + std::to_string(st.line) + ")");
      }
      if (all.loaded) {
        s.any_pointer_written = true;
        notes.insert("every pointer parameter treated as written: a pointer loaded from memory passed to '" + target +
                     "' (PTX line " + std::to_string(st.line) + ")");
      }
    } else {
      const Summary& c = summary(*callee->second);
      for (size_t i = 0; i < arg_taint.size() && i < c.written.size(); ++i) {
        for (int p : arg_taint[i].params) {
          if (c.written[i]) s.written[static_cast<size_t>(p)] = true;
          if (c.read[i]) s.read[static_cast<size_t>(p)] = true;
        }
        if (c.written[i] && arg_taint[i].loaded && arg_taint[i].params.empty()) s.any_pointer_written = true;
      }
      if (c.any_pointer_written) s.any_pointer_written = true;
      for (const std::string& n : c.notes) notes.insert("in '" + target + "': " + n);
    }
    bool changed = false;
    Taint ret = all;  // what a callee returns may point wherever its arguments do, or be loaded
    ret.loaded = true;
    for (const std::string& r : rets) changed = slots[slot(r, st.scope)].merge(ret) || changed;
    return changed;
  }

  std::map<std::string, const Function*> by_name_;
  std::map<std::string, Summary> done_;
  std::set<std::string> active_;
};

}  // namespace

std::vector<KernelMutations> analyze_ptx_mutations(const std::string& ptx, const std::string& file) {
  std::vector<Function> fns = parse_module(ptx, file);
  Analyzer analyzer(fns);
  std::vector<KernelMutations> out;
  for (const Function& f : fns) {
    if (!f.entry) continue;
    // Only a pointer (or a struct passed by value, which may hold one) is written through; an
    // integer parameter in an address is an offset.
    std::vector<bool> pointer;
    for (const KernelParam& p : f.params) pointer.push_back(pointer_like(p));
    out.push_back(detail::kernel_result(f.name, f.params, pointer, analyzer.summary(f)));
  }
  return out;
}

std::string print_kernel_mutations(const std::vector<KernelMutations>& kernels) {
  std::ostringstream os;
  for (const KernelMutations& k : kernels) {
    std::string writes, reads;
    for (size_t i = 0; i < k.params.size(); ++i) {
      if (k.params[i].written) writes += (writes.empty() ? "" : ", ") + std::to_string(i);
      if (k.params[i].read) reads += (reads.empty() ? "" : ", ") + std::to_string(i);
    }
    os << "kernel " << k.entry << ": writes " << (writes.empty() ? "none" : writes) << "; reads "
       << (reads.empty() ? "none" : reads) << "\n";
    for (size_t i = 0; i < k.params.size(); ++i)
      os << "  param " << i << " " << k.params[i].name << " " << k.params[i].type << "\n";
    for (const std::string& n : k.conservative) os << "  note: " << n << "\n";
  }
  return os.str();
}

}  // namespace toroid::codegen::cuda
