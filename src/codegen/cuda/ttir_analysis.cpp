// Mutation analysis of Triton's TTIR (kernel_ir_analysis.h): which `tt.func` arguments a kernel
// writes through, over the MLIR text the frontend hands over.
#include <cctype>
#include <map>
#include <optional>
#include <set>

#include "toroid/codegen/cuda/kernel_ir_analysis.h"
#include "kernel_ir_common.h"
#include "toroid/support/error.h"

namespace toroid::codegen::cuda {

namespace {

using detail::Summary;
using detail::Taint;

// One operation's text (its `loc(...)` removed) and where it is.
struct Op {
  std::string text;
  int line = 0;
  int frame = -1;  // the region-holding op (scf.for, scf.if, scf.while) it is directly inside
};

// A region-holding op: what flows into its block arguments and results.
struct Frame {
  std::vector<std::string> results;     // "%r" (a multi-result op's name)
  std::vector<std::string> iter_args;   // scf.for's region arguments, in order
  std::vector<std::string> inits;       // what they start as
  std::vector<std::string> block_args;  // ^bb arguments (scf.while): they take everything
};

struct Func {
  std::string name;
  bool is_public = false;
  std::vector<KernelParam> params;
  std::vector<Op> ops;
  std::vector<Frame> frames;
  int line = 0;
};

std::string strip(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

// `text` without its trailing `loc(...)` and without quoted strings (inline assembly, names).
std::string without_loc(std::string text) {
  std::string out;
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '"' && (i == 0 || text[i - 1] != '\\')) quoted = !quoted;
    else if (!quoted) out += text[i];
  }
  size_t loc = out.rfind(" loc(");
  return loc == std::string::npos ? out : out.substr(0, loc);
}

// The SSA names in `s` (`%x`, `%r#1` as `%r`).
std::vector<std::string> values_in(const std::string& s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') continue;
    size_t j = i + 1;
    while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_' || s[j] == '.' || s[j] == '$')) ++j;
    if (j > i + 1) out.push_back(s.substr(i, j - i));
    while (j < s.size() && (s[j] == '#' || std::isdigit(static_cast<unsigned char>(s[j])))) ++j;  // %r#1
    i = j - 1;
  }
  return out;
}

// Splits at commas outside brackets of every kind.
std::vector<std::string> split_top(const std::string& s) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '(' || c == '[' || c == '{' || c == '<') ++depth;
    if (c == ')' || c == ']' || c == '}' || c == '>') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(strip(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!strip(cur).empty()) out.push_back(strip(cur));
  return out;
}

// The text inside the parentheses that open at `open`.
std::string parenthesized(const std::string& s, size_t open) {
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    if (s[i] == '(') ++depth;
    if (s[i] == ')' && --depth == 0) return s.substr(open + 1, i - open - 1);
  }
  return s.substr(open + 1);
}

bool pointer_type(const std::string& type) {
  return type.find("!tt.ptr") != std::string::npos || type.find("!tt.tensordesc") != std::string::npos;
}

std::vector<Func> parse_ttir(const std::string& text, const std::string& file) {
  std::vector<Func> out;
  std::optional<Func> fn;
  std::vector<int> open;  // frames (or -1 for a plain region) of the regions we are in
  int line = 0;
  size_t at = 0;
  while (at <= text.size()) {
    size_t end = text.find('\n', at);
    std::string raw = text.substr(at, end == std::string::npos ? std::string::npos : end - at);
    at = end == std::string::npos ? text.size() + 1 : end + 1;
    ++line;
    std::string l = strip(raw);
    if (l.empty() || l.rfind("//", 0) == 0 || l[0] == '#') continue;
    if (l.rfind("tt.func", 0) == 0) {
      if (fn) user_error("TTIR: a tt.func inside another", SourceLoc{file, line, 0});
      fn.emplace();
      fn->line = line;
      fn->is_public = l.find("tt.func public") == 0;
      size_t name = l.find('@'), paren = l.find('(', name);
      if (name == std::string::npos || paren == std::string::npos) user_error("TTIR: cannot read the tt.func header", SourceLoc{file, line, 0});
      fn->name = l.substr(name + 1, paren - name - 1);
      for (const std::string& a : split_top(parenthesized(l, paren))) {
        size_t colon = a.find(':');
        if (a.empty() || a[0] != '%' || colon == std::string::npos)
          user_error("TTIR: cannot read argument '" + a + "' of @" + fn->name, SourceLoc{file, line, 0});
        std::string type = strip(a.substr(colon + 1));
        for (const char* cut : {" {", " loc("})
          if (size_t c = type.find(cut); c != std::string::npos) type = type.substr(0, c);
        fn->params.push_back({strip(a.substr(0, colon)), type});
      }
      open.clear();
      continue;
    }
    if (!fn) continue;  // module, attributes
    std::string op = without_loc(l);
    if (op[0] == '}') {
      bool reopens = op.find('{') != std::string::npos;  // `} else {`, `} do {`
      if (open.empty()) {
        out.push_back(std::move(*fn));
        fn.reset();
        continue;
      }
      if (!reopens) open.pop_back();
      continue;
    }
    if (op.rfind("^bb", 0) == 0) {  // a block's arguments: they take what flows into the region
      int frame = open.empty() ? -1 : open.back();
      if (frame >= 0)
        for (const std::string& v : values_in(op)) fn->frames[static_cast<size_t>(frame)].block_args.push_back(v);
      continue;
    }
    int frame = open.empty() ? -1 : open.back();
    fn->ops.push_back({op, line, frame});
    if (op.back() == '{') {
      Frame f;
      if (size_t eq = op.find(" = "); eq != std::string::npos && op[0] == '%') {
        std::string r = op.substr(0, eq);
        f.results.push_back(r.substr(0, r.find(':')));
      }
      if (size_t ia = op.find("iter_args("); ia != std::string::npos) {
        for (const std::string& pair : split_top(parenthesized(op, ia + 9))) {
          size_t eq = pair.find('=');
          if (eq == std::string::npos) continue;
          f.iter_args.push_back(strip(pair.substr(0, eq)));
          f.inits.push_back(strip(pair.substr(eq + 1)));
        }
      }
      if (op.find("scf.while") != std::string::npos)  // (%a = %x, ...): the before-region's arguments
        for (const std::string& v : values_in(op)) f.block_args.push_back(v);
      fn->frames.push_back(f);
      open.push_back(static_cast<int>(fn->frames.size()) - 1);
    }
  }
  if (fn) user_error("TTIR: the body of @" + fn->name + " is not closed", SourceLoc{file, fn->line, 0});
  return out;
}


class Analyzer {
 public:
  explicit Analyzer(const std::vector<Func>& fns) {
    for (const Func& f : fns) by_name_[f.name] = &f;
  }

  const Summary& summary(const Func& f) {
    if (auto it = done_.find(f.name); it != done_.end()) return it->second;
    if (active_.count(f.name)) return done_["<recursive>" + f.name] = detail::recursive_summary(f.params.size());
    active_.insert(f.name);
    Summary s = run(f);
    active_.erase(f.name);
    return done_[f.name] = std::move(s);
  }

 private:
  Summary run(const Func& f) {
    Summary s;
    s.written.assign(f.params.size(), false);
    s.read.assign(f.params.size(), false);
    std::map<std::string, Taint> vals;
    for (size_t i = 0; i < f.params.size(); ++i) vals[f.params[i].name].params.insert(static_cast<int>(i));
    std::set<std::string> notes;
    auto taint = [&](const std::vector<std::string>& names) {
      Taint t;
      for (const std::string& n : names)
        if (auto it = vals.find(n); it != vals.end()) t.merge(it->second);
      return t;
    };
    auto line_of = [](const Op& op) { return " (TTIR line " + std::to_string(op.line) + ")"; };
    for (bool changed = true; changed;) {
      changed = false;
      auto flow = [&](const std::string& to, const Taint& t) { changed = vals[to].merge(t) || changed; };
      for (const Op& op : f.ops) {
        std::string text = op.text;
        std::vector<std::string> results;
        size_t eq = text.find(" = ");
        if (text[0] == '%' && eq != std::string::npos) {
          for (const std::string& r : split_top(text.substr(0, eq))) results.push_back(r.substr(0, r.find(':')));
          text = strip(text.substr(eq + 3));
        }
        std::string name = text.substr(0, text.find_first_of(" ({"));
        // The operands: names after the op's name, before its type (a region op's header too).
        std::string body = text.substr(name.size());
        std::vector<std::string> operands = values_in(body.substr(0, body.rfind(" : ") == std::string::npos ? body.size() : body.rfind(" : ")));
        Taint in = taint(operands);
        auto write = [&](const Taint& t, const char* what) {
          for (int p : t.params) s.written[static_cast<size_t>(p)] = true;
          if (t.params.empty() && t.loaded) {
            s.any_pointer_written = true;
            notes.insert(std::string("every pointer argument treated as written: ") + what +
                         " through a pointer loaded from memory or made from an integer" + line_of(op));
          }
        };
        auto read = [&](const Taint& t) {
          for (int p : t.params) s.read[static_cast<size_t>(p)] = true;
        };
        Taint first = operands.empty() ? Taint{} : taint({operands[0]});
        if (name == "tt.store" || name == "tt.descriptor_store" || name == "tt.experimental_descriptor_store" ||
            name == "tt.descriptor_scatter" || name == "tt.descriptor_reduce") {
          write(first, "a store");
        } else if (name == "tt.atomic_rmw" || name == "tt.atomic_cas") {
          write(first, "an atomic");
          read(first);
          Taint loaded;
          loaded.loaded = true;
          for (const std::string& r : results) flow(r, loaded);
        } else if (name == "tt.load" || name == "tt.descriptor_load" || name == "tt.experimental_descriptor_load" ||
                   name == "tt.descriptor_gather") {
          read(first);
          Taint loaded;
          loaded.loaded = true;  // a value read from memory may be a pointer
          for (const std::string& r : results) flow(r, loaded);
        } else if (name == "tt.int_to_ptr") {
          Taint made;
          made.loaded = true;
          for (const std::string& r : results) flow(r, made);
        } else if (name == "tt.elementwise_inline_asm") {
          for (int p : in.params) {
            s.written[static_cast<size_t>(p)] = true;
            notes.insert("argument " + std::to_string(p) + " treated as written: given to inline assembly" + line_of(op));
          }
          for (const std::string& r : results) flow(r, in);
        } else if (name == "tt.call") {
          size_t at = text.find('@');
          std::string target = at == std::string::npos ? "" : text.substr(at + 1, text.find('(', at) - at - 1);
          auto callee = by_name_.find(target);
          if (callee == by_name_.end()) {
            for (int p : in.params) {
              s.written[static_cast<size_t>(p)] = true;
              s.read[static_cast<size_t>(p)] = true;
              notes.insert("argument " + std::to_string(p) + " treated as written: passed to @" + target +
                           ", whose body is not in the module" + line_of(op));
            }
            if (in.loaded) s.any_pointer_written = true;
          } else {
            const Summary& c = summary(*callee->second);
            for (size_t i = 0; i < operands.size() && i < c.written.size(); ++i) {
              Taint t = taint({operands[i]});
              for (int p : t.params) {
                if (c.written[i]) s.written[static_cast<size_t>(p)] = true;
                if (c.read[i]) s.read[static_cast<size_t>(p)] = true;
              }
              if (c.written[i] && t.params.empty() && t.loaded) s.any_pointer_written = true;
            }
            if (c.any_pointer_written) s.any_pointer_written = true;
            for (const std::string& n : c.notes) notes.insert("in @" + target + ": " + n);
          }
          Taint ret = in;  // a result may point wherever the arguments do, or be loaded
          ret.loaded = true;
          for (const std::string& r : results) flow(r, ret);
        } else if (name == "scf.yield" || name == "scf.condition") {
          if (op.frame >= 0) {
            const Frame& fr = f.frames[static_cast<size_t>(op.frame)];
            std::vector<std::string> carried = operands;
            if (name == "scf.condition" && !carried.empty()) carried.erase(carried.begin());  // the predicate
            for (size_t i = 0; i < carried.size(); ++i) {
              Taint t = taint({carried[i]});
              if (i < fr.iter_args.size()) flow(fr.iter_args[i], t);
              for (const std::string& r : fr.results) flow(r, t);
              for (const std::string& b : fr.block_args) flow(b, t);
            }
          }
        } else {
          // Every other op (tt.splat, tt.addptr, tt.broadcast, arith, region headers): its
          // results take every operand's taint.
          for (const std::string& r : results) flow(r, in);
        }
        // A region op's header: its iter_args start as their inits, its block arguments and
        // results take what flows in.
        if (op.text.back() == '{') {
          for (const Frame& fr : f.frames) {
            if (fr.results != results || fr.results.empty()) continue;
            for (size_t i = 0; i < fr.iter_args.size(); ++i) flow(fr.iter_args[i], taint({fr.inits[i]}));
            for (const std::string& b : fr.block_args) flow(b, in);
          }
        }
      }
    }
    s.notes.assign(notes.begin(), notes.end());
    return s;
  }

  std::map<std::string, const Func*> by_name_;
  std::map<std::string, Summary> done_;
  std::set<std::string> active_;
};

}  // namespace

std::vector<KernelMutations> analyze_ttir_mutations(const std::string& ttir, const std::string& file) {
  std::vector<Func> fns = parse_ttir(ttir, file);
  Analyzer analyzer(fns);
  std::vector<KernelMutations> out;
  for (const Func& f : fns) {
    if (!f.is_public) continue;
    std::vector<bool> pointer;
    for (const KernelParam& p : f.params) pointer.push_back(pointer_type(p.type));
    out.push_back(detail::kernel_result(f.name, f.params, pointer, analyzer.summary(f)));
  }
  return out;
}

}  // namespace toroid::codegen::cuda
