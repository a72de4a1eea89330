// report.html (debug.h): one self-contained page per compile. The graph is laid out in layers
// (a node one below its deepest operand) and drawn as SVG, each node filled by what runs it;
// live memory is a step plot over the Wrapper IR's lines.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "debug_model.h"
#include "toroid/driver/compile.h"
#include "toroid/driver/debug.h"

namespace toroid::driver {

namespace cw = codegen::wrapper;

namespace {

std::string esc(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string human_bytes(int64_t b) {
  double v = static_cast<double>(b);
  if (v >= 1 << 30) return fixed(v / (1 << 30), 2) + " GiB";
  if (v >= 1 << 20) return fixed(v / (1 << 20), 2) + " MiB";
  if (v >= 1 << 10) return fixed(v / (1 << 10), 1) + " KiB";
  return std::to_string(b) + " B";
}

// "aten.add.Tensor" -> "add.Tensor", "aten.relu.default" -> "relu".
std::string short_op(std::string op) {
  if (op.rfind("aten.", 0) == 0) op = op.substr(5);
  if (op.size() > 8 && op.compare(op.size() - 8, 8, ".default") == 0) op.resize(op.size() - 8);
  return op;
}

// A call line of some program of the module, as the report lists it.
struct Call {
  const cw::WrapperProgram* program = nullptr;
  size_t line = 0;  // 1-based within its program
  const cw::Line* l = nullptr;
  std::string kind, name, colour, stroke;
};

const char* kind_of(cw::Line::Kind k) {
  switch (k) {
    case cw::Line::Kind::KernelCall: return "kernel";
    case cw::Line::Kind::ExternCall: return "library";
    case cw::Line::Kind::FallbackCall: return "fallback";
    case cw::Line::Kind::UserKernel: return "user kernel";
    case cw::Line::Kind::Cond:
    case cw::Line::Kind::While: return "control";
    case cw::Line::Kind::ScalarRead:
    case cw::Line::Kind::Assert: return "host";
    default: return nullptr;
  }
}

std::string call_name(const cw::WrapperProgram& w, const cw::Line& l) {
  switch (l.kind) {
    case cw::Line::Kind::KernelCall: return cw::kernel_name(w, l);
    case cw::Line::Kind::ExternCall: return loop::library_call_name(l.library);
    case cw::Line::Kind::UserKernel: return w.user_kernels.at(static_cast<size_t>(l.launch.kernel)).name;
    case cw::Line::Kind::FallbackCall: return l.call.op_name;
    default: return l.kind == cw::Line::Kind::Cond ? "cond" : l.kind == cw::Line::Kind::While ? "while" : "host step";
  }
}

std::vector<Call> calls_of(const cw::WrapperProgram& top) {
  std::vector<Call> out;
  int kernels = 0;
  for (const cw::WrapperProgram* p : cw::nested_programs(top)) {
    for (size_t i = 0; i < p->lines.size(); ++i) {
      const cw::Line& l = p->lines[i];
      const char* kind = kind_of(l.kind);
      if (!kind) continue;
      Call c{p, i + 1, &l, kind, call_name(*p, l), "", ""};
      std::string k = kind;
      if (k == "kernel") {
        // Golden-angle hues (neighbouring kernels get distinct colours), off the fallbacks' red.
        int hue = static_cast<int>(std::fmod(100 + kernels++ * 137.508, 360.0));
        if (hue < 20 || hue > 340) hue = (hue + 40) % 360;
        c.colour = "hsl(" + std::to_string(hue) + ",70%,78%)";
        c.stroke = "hsl(" + std::to_string(hue) + ",50%,35%)";
      } else if (k == "library") {
        c.colour = "#8fb3de", c.stroke = "#2b5c99";
      } else if (k == "fallback") {
        c.colour = "#f19999", c.stroke = "#b22222";
      } else if (k == "user kernel") {
        c.colour = "#c9a6e3", c.stroke = "#5e2a84";
      } else {
        c.colour = "#ffe08a", c.stroke = "#8a6d00";
      }
      out.push_back(std::move(c));
    }
  }
  return out;
}

std::string kernel_source(const Call& c) {
  if (c.l->kind == cw::Line::Kind::KernelCall) {
    auto k = static_cast<size_t>(c.l->kernel);
    return c.program->target.is_cuda() ? c.program->cuda_kernels.at(k).source : c.program->kernels.at(k).source;
  }
  if (c.l->kind == cw::Line::Kind::UserKernel)
    return c.program->user_kernels.at(static_cast<size_t>(c.l->launch.kernel)).source;
  return "";
}

// The graph of the top-level program's sources as SVG.
std::string graph_svg(const cw::WrapperProgram& w, const std::vector<Call>& calls) {
  const std::vector<cw::SourceNode>& nodes = w.sources;
  size_t n = nodes.size();
  // What colours each node: the first top-level call computing it.
  std::vector<int> group(n, -1);
  for (size_t c = 0; c < calls.size(); ++c) {
    if (calls[c].program != &w) continue;
    for (int s : calls[c].l->sources)
      if (group.at(static_cast<size_t>(s)) < 0) group[static_cast<size_t>(s)] = static_cast<int>(c);
  }
  std::vector<int> layer(n, 0);
  int layers = 1;
  for (size_t i = 0; i < n; ++i) {
    for (int in : nodes[i].inputs) layer[i] = std::max(layer[i], layer[static_cast<size_t>(in)] + 1);
    layers = std::max(layers, layer[i] + 1);
  }
  // Within a layer: by the mean position of the operands (one downward sweep), else graph order.
  std::vector<std::vector<size_t>> rows(static_cast<size_t>(layers));
  std::vector<double> pos(n, 0);
  for (size_t i = 0; i < n; ++i) rows[static_cast<size_t>(layer[i])].push_back(i);
  for (auto& row : rows) {
    std::vector<std::pair<double, size_t>> keyed;
    for (size_t i : row) {
      double sum = 0;
      for (int in : nodes[i].inputs) sum += pos[static_cast<size_t>(in)];
      double key = nodes[i].inputs.empty() ? static_cast<double>(i) * 1e-6 : sum / static_cast<double>(nodes[i].inputs.size());
      keyed.emplace_back(key, i);
    }
    std::stable_sort(keyed.begin(), keyed.end());
    for (size_t k = 0; k < keyed.size(); ++k) {
      row[k] = keyed[k].second;
      pos[keyed[k].second] = static_cast<double>(k) - static_cast<double>(keyed.size() - 1) / 2;
    }
  }
  constexpr int kW = 168, kH = 40, kGapX = 22, kGapY = 54, kMargin = 20;
  size_t widest = 1;
  for (const auto& row : rows) widest = std::max(widest, row.size());
  int width = kMargin * 2 + static_cast<int>(widest) * (kW + kGapX) - kGapX;
  int height = kMargin * 2 + layers * (kH + kGapY) - kGapY;
  std::vector<int> x(n), y(n);
  for (const auto& row : rows) {
    int row_width = static_cast<int>(row.size()) * (kW + kGapX) - kGapX;
    int left = (width - row_width) / 2;
    for (size_t k = 0; k < row.size(); ++k) {
      x[row[k]] = left + static_cast<int>(k) * (kW + kGapX);
      y[row[k]] = kMargin + layer[row[k]] * (kH + kGapY);
    }
  }
  std::ostringstream os;
  os << "<svg id=\"graph\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
     << "\" viewBox=\"0 0 " << width << " " << height << "\">\n"
     << "<defs><marker id=\"arrow\" viewBox=\"0 0 8 8\" refX=\"8\" refY=\"4\" markerWidth=\"7\" markerHeight=\"7\" "
        "orient=\"auto\"><path d=\"M0,0 L8,4 L0,8 z\" fill=\"#777\"/></marker></defs>\n<g class=\"edges\">\n";
  for (size_t i = 0; i < n; ++i)
    for (int in : nodes[i].inputs) {
      auto j = static_cast<size_t>(in);
      int x1 = x[j] + kW / 2, y1 = y[j] + kH, x2 = x[i] + kW / 2, y2 = y[i];
      os << "<path d=\"M" << x1 << "," << y1 << " C" << x1 << "," << y1 + kGapY / 2 << " " << x2 << ","
         << y2 - kGapY / 2 << " " << x2 << "," << y2 << "\" marker-end=\"url(#arrow)\"/>\n";
    }
  os << "</g>\n<g class=\"nodes\">\n";
  for (size_t i = 0; i < n; ++i) {
    const cw::SourceNode& s = nodes[i];
    int g = group[i];
    std::string fill = "#ffffff", stroke = "#555555", dash;
    if (g >= 0) fill = calls[static_cast<size_t>(g)].colour, stroke = calls[static_cast<size_t>(g)].stroke;
    else if (s.runs_as == "view") fill = "#eeeeee", stroke = "#999999", dash = " stroke-dasharray=\"4 3\"";
    std::string title = s.value + " = " + s.op + "\nruns as: " + s.runs_as;
    if (g >= 0) title += " (" + calls[static_cast<size_t>(g)].name + ", line " + std::to_string(calls[static_cast<size_t>(g)].line) + ")";
    if (!s.why.empty()) title += "\nwhy: " + s.why;
    if (s.line) title += "\n.tir line " + std::to_string(s.line);
    if (!s.origin.empty()) title += "\nfrom " + s.origin;
    if (!s.stack.empty()) title += "\n" + s.stack;
    std::string label = short_op(s.op);
    if (label.size() > 22) label = label.substr(0, 21) + "…";
    std::string sub = s.value + (g >= 0 ? "  #" + std::to_string(g) : "");
    if (sub.size() > 26) sub = sub.substr(0, 25) + "…";
    os << (g >= 0 ? "<a href=\"#call-" + std::to_string(g) + "\">" : std::string("<g>")) << "<g class=\"node\" data-kind=\""
       << esc(s.runs_as) << "\" data-group=\"" << g << "\"><title>" << esc(title) << "</title><rect x=\"" << x[i]
       << "\" y=\"" << y[i] << "\" width=\"" << kW << "\" height=\"" << kH << "\" rx=\"6\" fill=\"" << fill
       << "\" stroke=\"" << stroke << "\"" << dash << "/><text x=\"" << x[i] + kW / 2 << "\" y=\"" << y[i] + 17
       << "\" class=\"op\">" << esc(label) << "</text><text x=\"" << x[i] + kW / 2 << "\" y=\"" << y[i] + 32
       << "\" class=\"val\">" << esc(sub) << "</text></g>" << (g >= 0 ? "</a>" : "</g>") << "\n";
  }
  os << "</g>\n</svg>\n";
  return os.str();
}

// Live bytes over the lines as a step plot, with each call's line marked in its colour.
std::string memory_svg(const Specialization& s, const std::vector<Call>& calls, const std::vector<MemoryPoint>& points) {
  int64_t top = 1;
  for (const MemoryPoint& p : points) top = std::max(top, p.bytes.value_or(0));
  if (std::optional<int64_t> planned = planned_peak_at_hints(s)) top = std::max(top, *planned);
  constexpr int kW = 960, kH = 260, kLeft = 80, kRight = 16, kTop = 16, kBottom = 40;
  double span = static_cast<double>(std::max<size_t>(points.size(), 1));
  auto px = [&](double line) { return kLeft + (line / span) * (kW - kLeft - kRight); };
  auto py = [&](int64_t b) { return kTop + (1.0 - static_cast<double>(b) / static_cast<double>(top)) * (kH - kTop - kBottom); };
  std::ostringstream os;
  os << "<svg id=\"memory\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kW << "\" height=\"" << kH << "\">\n";
  for (int k = 0; k <= 4; ++k) {
    int64_t b = top * k / 4;
    os << "<line class=\"grid\" x1=\"" << kLeft << "\" x2=\"" << kW - kRight << "\" y1=\"" << fixed(py(b), 1) << "\" y2=\""
       << fixed(py(b), 1) << "\"/><text class=\"axis\" x=\"" << kLeft - 6 << "\" y=\"" << fixed(py(b) + 4, 1)
       << "\" text-anchor=\"end\">" << human_bytes(b) << "</text>\n";
  }
  std::string path;
  int64_t last = 0;
  bool open = false;
  for (size_t i = 0; i < points.size(); ++i) {
    if (!points[i].bytes) {
      open = false;  // an unbacked size: a gap
      continue;
    }
    int64_t b = *points[i].bytes;
    path += (open ? " L" + fixed(px(static_cast<double>(i)), 1) + "," + fixed(py(last), 1) + " L" : std::string(" M")) +
            fixed(px(static_cast<double>(i)), 1) + "," + fixed(py(b), 1) + " L" + fixed(px(static_cast<double>(i + 1)), 1) +
            "," + fixed(py(b), 1);
    last = b;
    open = true;
  }
  os << "<path class=\"live\" d=\"" << path << "\"/>\n";
  if (std::optional<int64_t> planned = planned_peak_at_hints(s))
    os << "<line class=\"peak\" x1=\"" << kLeft << "\" x2=\"" << kW - kRight << "\" y1=\"" << fixed(py(*planned), 1)
       << "\" y2=\"" << fixed(py(*planned), 1) << "\"><title>planned peak " << human_bytes(*planned) << "</title></line>\n";
  for (size_t c = 0; c < calls.size(); ++c) {
    if (calls[c].program != &s.wrapper) continue;
    double at = px(static_cast<double>(calls[c].line) - 0.5);
    os << "<a href=\"#call-" << c << "\"><rect x=\"" << fixed(at - 2, 1) << "\" y=\"" << kH - kBottom + 4
       << "\" width=\"4\" height=\"10\" fill=\"" << calls[c].colour << "\" stroke=\"" << calls[c].stroke
       << "\"><title>line " << calls[c].line << ": " << esc(calls[c].name) << "</title></rect></a>\n";
  }
  for (size_t i = 0; i < points.size(); ++i)
    os << "<rect class=\"hit\" x=\"" << fixed(px(static_cast<double>(i)), 1) << "\" y=\"" << kTop << "\" width=\""
       << fixed(std::max(px(1) - px(0), 1.0), 1) << "\" height=\"" << kH - kTop - kBottom << "\"><title>line "
       << points[i].line << ": " << esc(points[i].what) << "\nlive: "
       << (points[i].bytes ? human_bytes(*points[i].bytes) : std::string("data-dependent")) << "</title></rect>\n";
  os << "<text class=\"axis\" x=\"" << (kW + kLeft) / 2 << "\" y=\"" << kH - 6 << "\" text-anchor=\"middle\">Wrapper IR line ("
     << points.size() << " lines)</text>\n</svg>\n";
  return os.str();
}

constexpr const char* kStyle = R"(
body { font: 14px/1.45 system-ui, sans-serif; margin: 0 24px 40px; color: #222; }
h1 { font-size: 20px; margin: 18px 0 4px; } h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid #ddd; }
nav a { margin-right: 14px; } .stats span { margin-right: 18px; } .muted { color: #777; }
.scroll { overflow: auto; border: 1px solid #ddd; max-height: 720px; background: #fcfcfc; }
#graph .edges path { fill: none; stroke: #999; stroke-width: 1.2; }
#graph text { font: 12px ui-monospace, monospace; text-anchor: middle; pointer-events: none; }
#graph text.op { font-weight: 600; } #graph .node.dim { opacity: 0.25; }
#memory .grid { stroke: #e4e4e4; } #memory .axis { font: 11px system-ui, sans-serif; fill: #555; }
#memory .live { fill: none; stroke: #1f6fb2; stroke-width: 2; } #memory .peak { stroke: #c0392b; stroke-dasharray: 5 4; }
#memory .hit { fill: transparent; } #memory .hit:hover { fill: rgba(31, 111, 178, 0.12); }
.legend span { display: inline-block; padding: 1px 8px; margin: 2px 6px 2px 0; border: 1px solid; border-radius: 4px; font-size: 12px; }
table { border-collapse: collapse; } td, th { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
.call { border-left: 6px solid; padding: 2px 12px; margin: 10px 0; } .call h3 { font-size: 14px; margin: 4px 0; }
pre { background: #f6f6f6; padding: 8px; overflow: auto; font-size: 12px; max-height: 480px; }
.bar { display: inline-block; height: 10px; background: #1f6fb2; vertical-align: middle; }
)";

// Hovering a node dims the nodes that another call computes.
constexpr const char* kScript = R"(
document.querySelectorAll('#graph .node').forEach(function (n) {
  n.addEventListener('mouseenter', function () {
    var g = n.getAttribute('data-group');
    if (g === '-1') return;
    document.querySelectorAll('#graph .node').forEach(function (m) {
      if (m.getAttribute('data-group') !== g) m.classList.add('dim');
    });
  });
  n.addEventListener('mouseleave', function () {
    document.querySelectorAll('#graph .node.dim').forEach(function (m) { m.classList.remove('dim'); });
  });
});
)";

}  // namespace

std::string render_report(const Specialization& s, const CompileTrace& trace, const std::vector<CompileEvent>& history,
                          const std::vector<MemoryPoint>& memory) {
  const cw::WrapperProgram& w = s.wrapper;
  std::vector<Call> calls = calls_of(w);
  std::ostringstream os;
  std::string title = "toroid: " + w.graph_name + " (" + w.target.str() + ")";
  os << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" << esc(title) << "</title><style>"
     << kStyle << "</style></head><body>\n<h1>" << esc(title) << "</h1>\n";
  const CompileEvent& me = history.back();
  std::optional<int64_t> peak = planned_peak_at_hints(s);
  os << "<p class=\"stats\"><span>specialization " << me.index << "</span><span>compiled in " << fixed(s.stats.compile_ms, 1)
     << " ms (kernel cache " << (s.stats.cache_hit ? "hit" : "miss") << ")</span><span>" << s.stats.ops
     << " ops</span><span id=\"count-kernels\">" << s.stats.kernels << " kernels</span><span>" << s.stats.extern_calls
     << " library calls</span><span>" << s.stats.fallback_calls << " fallbacks</span><span>planned peak "
     << (peak ? human_bytes(*peak) : std::string("data-dependent")) << "</span>"
     << (me.sizes.empty() ? "" : "<span>sizes " + esc(me.sizes) + "</span>") << "</p>\n";
  os << "<nav><a href=\"#sec-graph\">graph</a><a href=\"#sec-memory\">memory</a><a href=\"#sec-kernels\">kernels</a>"
        "<a href=\"#sec-fallbacks\">fallbacks</a><a href=\"#sec-compiles\">compiles</a><a href=\"#sec-phases\">phases</a>"
        "<a href=\"#sec-files\">files</a></nav>\n";

  os << "<h2 id=\"sec-graph\">Graph after the passes</h2>\n<p class=\"legend\">";
  for (size_t c = 0; c < calls.size(); ++c)
    if (calls[c].program == &w)
      os << "<span style=\"background:" << calls[c].colour << ";border-color:" << calls[c].stroke << "\">#" << c << " "
         << esc(calls[c].kind) << " " << esc(calls[c].name) << "</span>";
  os << "<span style=\"background:#eee;border-color:#999;border-style:dashed\">view</span>"
        "<span style=\"background:#fff;border-color:#555\">input, parameter, constant</span></p>\n"
     << "<p class=\"muted\">Each node is filled with the colour of the call that computes it (hover for details; "
        "click to go to its kernel).</p>\n<div class=\"scroll\">"
     << graph_svg(w, calls) << "</div>\n";

  os << "<h2 id=\"sec-memory\">Live memory over the program</h2>\n<p class=\"muted\">Bytes of intermediate buffers "
        "held after each Wrapper IR line at this compile's sizes (inputs and constants not counted); the dashed "
        "line is the plan's peak; the marks under the axis are the calls.</p>\n"
     << memory_svg(s, calls, memory);

  os << "<h2 id=\"sec-kernels\">Calls</h2>\n";
  for (size_t c = 0; c < calls.size(); ++c) {
    const Call& call = calls[c];
    os << "<section class=\"call\" id=\"call-" << c << "\" data-kind=\"" << esc(call.kind) << "\" style=\"border-color:"
       << call.stroke << "\"><h3>#" << c << " " << esc(call.kind) << " <code>" << esc(call.name) << "</code> <span class=\"muted\">"
       << esc(call.program->graph_name) << " line " << call.line << "</span></h3>\n<div>computes: ";
    for (size_t k = 0; k < call.l->sources.size(); ++k) {
      const cw::SourceNode& n = call.program->sources.at(static_cast<size_t>(call.l->sources[k]));
      os << (k ? ", " : "") << "<code>" << esc(n.value) << "</code> " << esc(short_op(n.op));
      if (!n.why.empty()) os << " <span class=\"muted\">(" << esc(n.why) << ")</span>";
    }
    os << "</div>\n<pre class=\"launch\">" << esc(cw::print_line(*call.program, *call.l)) << "</pre>\n";
    if (std::string src = kernel_source(call); !src.empty())
      os << "<details><summary>source</summary><pre class=\"source\">" << esc(src) << "</pre></details>\n";
    os << "</section>\n";
  }

  std::vector<Fallback> fallbacks = fallbacks_of(w);
  os << "<h2 id=\"sec-fallbacks\">Fallbacks</h2>\n";
  if (fallbacks.empty()) {
    os << "<p>None: every call runs a compiled kernel or a library call.</p>\n";
  } else {
    os << "<table><tr><th>node</th><th>op</th><th>line</th><th>runs</th><th>why</th></tr>\n";
    for (const Fallback& f : fallbacks)
      os << "<tr><td><code>" << esc(f.node) << "</code></td><td>" << esc(f.op) << "</td><td>" << f.line << "</td><td>"
         << esc(f.runs_on) << "</td><td>" << esc(f.why) << "</td></tr>\n";
    os << "</table>\n";
  }

  os << "<h2 id=\"sec-compiles\">Compiles of this module</h2>\n<table><tr><th>specialization</th><th>sizes</th>"
        "<th>why it compiled</th><th>ms</th><th>directory</th></tr>\n";
  for (const CompileEvent& e : history)
    os << "<tr><td>" << e.index << "</td><td>" << esc(e.sizes.empty() ? "(the example's)" : e.sizes) << "</td><td>"
       << esc(e.reason.empty() ? "first call" : e.reason) << "</td><td>" << fixed(e.compile_ms, 1) << "</td><td><code>"
       << esc(e.dir) << "</code></td></tr>\n";
  os << "</table>\n";

  os << "<h2 id=\"sec-phases\">Compile time by phase</h2>\n<table>\n";
  double longest = 1e-9;
  for (const auto& [phase, ms] : trace.phases) longest = std::max(longest, ms);
  for (const auto& [phase, ms] : trace.phases)
    os << "<tr><td>" << esc(phase) << "</td><td>" << fixed(ms, 2) << " ms</td><td><span class=\"bar\" style=\"width:"
       << static_cast<int>(300 * ms / longest) << "px\"></span></td></tr>\n";
  os << "</table>\n";

  os << "<h2 id=\"sec-files\">Files</h2>\n<ul>\n";
  for (size_t i = 0; i < trace.passes.size(); ++i) {
    std::string file = pass_file(i, trace.passes[i].name);
    os << "<li><a href=\"" << esc(file) << "\">" << esc(file) << "</a> (the graph after " << esc(trace.passes[i].name)
       << ")</li>\n";
  }
  std::string kernels = w.target.is_cuda() ? "kernels.cu" : "kernels.cpp";
  for (const char* f : {"graph.tir", "loop.txt", "wrapper.txt", "provenance.json", "memory.json", "compile.json"})
    os << "<li><a href=\"" << f << "\">" << f << "</a></li>\n";
  os << "<li><a href=\"" << kernels << "\">" << kernels << "</a></li>\n</ul>\n<script>" << kScript
     << "</script>\n</body></html>\n";
  return os.str();
}

}  // namespace toroid::driver
