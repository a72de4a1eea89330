#!/usr/bin/env python3
"""TOROID_DEBUG=1 on the MLP example writes a debug directory whose report.html renders in a
real browser: headless Chromium loads the page with a probe script appended, which measures
what was drawn (graph nodes and edges, each kernel's section and source, the memory plot's line)
and writes it into the page; --dump-dom hands the page back and the numbers are checked against
the directory's own provenance.json, compile.json and memory.json.

  debug_report.py --toroidc build/tools/toroidc/toroidc --example examples/mlp.tir
                  [--screenshot docs/images/debug-report.png]

Exit 77 (a skip) when no Chromium is installed (scripts/test.sh installs Debian's)."""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

PROBE = r"""
<script>
(function () {
  var out = {};
  var graph = document.getElementById('graph');
  out.graph_width = graph ? graph.getBBox().width : 0;
  var nodes = Array.prototype.slice.call(document.querySelectorAll('#graph .node'));
  out.nodes = nodes.length;
  out.drawn_nodes = nodes.filter(function (n) { var b = n.getBBox(); return b.width > 0 && b.height > 0; }).length;
  out.kinds = {};
  nodes.forEach(function (n) { var k = n.getAttribute('data-kind'); out.kinds[k] = (out.kinds[k] || 0) + 1; });
  out.fills = {};
  nodes.forEach(function (n) { out.fills[n.querySelector('rect').getAttribute('fill')] = 1; });
  out.fills = Object.keys(out.fills).length;
  out.edges = document.querySelectorAll('#graph .edges path').length;
  var kernels = Array.prototype.slice.call(document.querySelectorAll('section.call[data-kind="kernel"]'));
  out.kernel_sections = kernels.length;
  out.kernel_sources = kernels.map(function (s) { var p = s.querySelector('pre.source'); return p ? p.textContent : ''; });
  out.kernel_names = kernels.map(function (s) { return s.querySelector('h3 code').textContent; });
  out.library_sections = document.querySelectorAll('section.call[data-kind="library"]').length;
  var live = document.querySelector('#memory path.live');
  out.memory_length = live ? live.getTotalLength() : 0;
  out.memory_height = live ? live.getBBox().height : 0;
  out.memory_lines = document.querySelectorAll('#memory rect.hit').length;
  out.peak_line = document.querySelectorAll('#memory line.peak').length;
  var pre = document.createElement('pre');
  pre.id = 'probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
"""


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def browser_args(browser, extra):
    # As root (CI containers) Chromium needs --no-sandbox; no GPU here.
    return [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars"] + extra


def operand_edges(graph_text):
    """Distinct (operand, node) pairs of a graph's text: `%y = op(%a, %b) : meta`."""
    defined, edges = set(), 0
    for line in graph_text.splitlines():
        m = re.match(r"\s*(%[\w.]+)(?:, %[\w.]+)* = ([^:]*)", line)
        if not m:
            continue
        edges += len(set(re.findall(r"%[\w.]+", m.group(2))) & defined)
        defined.update(re.findall(r"%[\w.]+", line.split(" = ")[0]))
    return edges


def check(cond, what, detail=""):
    if not cond:
        print("FAIL:", what, detail)
        sys.exit(1)
    print("ok:", what)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--toroidc", required=True)
    ap.add_argument("--example", required=True)
    ap.add_argument("--screenshot", help="also write a PNG of the report here")
    args = ap.parse_args()
    browser = chromium()
    if not browser:
        print("SKIP: no chromium on PATH (apt-get install chromium)")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, TOROID_DEBUG="1", TOROID_DEBUG_DIR=os.path.join(tmp, "debug"))
        run = subprocess.run([args.toroidc, "run", args.example, "--random-inputs", "--check"], env=env,
                             capture_output=True, text=True, timeout=300)
        check(run.returncode == 0 and "check: match" in run.stdout, "toroidc run matches", run.stdout + run.stderr)
        dirs = sorted(os.listdir(env["TOROID_DEBUG_DIR"]))
        check(len(dirs) == 1, "one directory for one compile: %s" % dirs)
        d = os.path.join(env["TOROID_DEBUG_DIR"], dirs[0])
        files = set(os.listdir(d))
        for f in ("graph.tir", "loop.txt", "wrapper.txt", "kernels.cpp", "provenance.json", "memory.json",
                  "compile.json", "report.html", "passes"):
            check(f in files, "%s written" % f)
        with open(os.path.join(d, "provenance.json")) as f:
            provenance = json.load(f)
        with open(os.path.join(d, "compile.json")) as f:
            record = json.load(f)
        with open(os.path.join(d, "memory.json")) as f:
            memory = json.load(f)
        check(record["passes"][0]["pass"] == "input" and len(record["passes"]) > 2, "the graph after each pass")
        check(any(p["phase"] == "lower" for p in record["phases"]), "compile time per phase")

        with open(os.path.join(d, "report.html")) as f:
            page = f.read()
        probe_path = os.path.join(d, "report-probe.html")
        with open(probe_path, "w") as f:
            f.write(page.replace("</body>", PROBE + "</body>"))
        dom = subprocess.run(browser_args(browser, ["--dump-dom", "file://" + probe_path]), capture_output=True,
                             text=True, timeout=120)
        m = re.search(r'<pre id="probe">(.*?)</pre>', dom.stdout, re.S)
        check(m is not None, "Chromium ran the page's probe", dom.stderr[-2000:])
        seen = json.loads(m.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">")
                          .replace("&amp;", "&"))
        kernels = [c["name"] for c in provenance["calls"] if c["kind"] == "kernel"]
        with open(os.path.join(d, "graph.tir")) as f:
            edges = operand_edges(f.read())

        check(seen["graph_width"] > 0, "the graph is drawn (%.0f px wide)" % seen["graph_width"])
        check(seen["nodes"] == len(provenance["nodes"]) == seen["drawn_nodes"],
              "every node of the graph drawn: %d of %d" % (seen["drawn_nodes"], len(provenance["nodes"])))
        check(seen["edges"] == edges, "an edge per operand: %d of %d" % (seen["edges"], edges))
        check(seen["kinds"].get("kernel", 0) >= 2 and seen["kinds"].get("library", 0) >= 1,
              "nodes coloured by what runs them: %s, %d fills" % (seen["kinds"], seen["fills"]))
        check(seen["fills"] >= 4, "kernels, library calls and inputs tell apart (%d fills)" % seen["fills"])
        check(seen["kernel_sections"] == record["kernels"] == len(kernels),
              "a section per kernel: %d (compile.json: %d)" % (seen["kernel_sections"], record["kernels"]))
        for name, source in zip(seen["kernel_names"], seen["kernel_sources"]):
            check(name in kernels and name in source, "kernel %s's source is shown (%d chars)" % (name, len(source)))
        check(seen["library_sections"] == record["library_calls"], "a section per library call")
        check(seen["memory_length"] > 0 and seen["memory_height"] > 0,
              "the memory plot is drawn (%.0f px of line)" % seen["memory_length"])
        check(seen["memory_lines"] == len(memory["lines"]), "memory over every line: %d" % seen["memory_lines"])
        check(seen["peak_line"] == 1 and memory["planned_peak_bytes"] > 0, "the planned peak is marked")
        if args.screenshot:
            os.makedirs(os.path.dirname(os.path.abspath(args.screenshot)), exist_ok=True)
            subprocess.run(browser_args(browser, ["--window-size=1280,1400", "--screenshot=" +
                                                  os.path.abspath(args.screenshot), "file://" +
                                                  os.path.join(d, "report.html")]),
                           capture_output=True, timeout=120, check=True)
            print("wrote", args.screenshot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
