"""toroid.explain(fn, *args): what toroid did with each op of a function.

torch.compile(fn, backend="toroid") runs once on `args` with a debug directory per compile; each
ATen op of the graphs dynamo and AOTAutograd produced is then told with what ran it: a fused
kernel (and the ops fused with it), a library call, a reference-kernel fallback, eager PyTorch
(with the reason), a view (index arithmetic, no code), or nothing (folded or removed by the
passes). The provenance map of each compile (provenance.json) links the two.
"""
from __future__ import annotations

import glob
import json
import os
import sys
import tempfile
from typing import Any, Callable, Optional, TextIO


class Explanation:
    """Rows of {graph, node, op, runs, detail}; str() is the printed table."""

    def __init__(self, rows: list[dict[str, str]], graphs: int, dump_dir: Optional[str]):
        self.rows = rows
        self.graphs = graphs
        self.dump_dir = dump_dir

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.rows:
            out[r["runs"]] = out.get(r["runs"], 0) + 1
        return out

    def __str__(self) -> str:
        lines = ["toroid.explain: %d graph(s) compiled, %d ops: %s" % (
            self.graphs, len(self.rows), ", ".join("%d %s" % (n, k) for k, n in sorted(self.counts().items())))]
        width = max([len(r["node"]) for r in self.rows] + [4])
        op_width = max([len(r["op"]) for r in self.rows] + [2])
        graph = None
        for r in self.rows:
            if r["graph"] != graph:
                graph = r["graph"]
                lines.append("%s:" % graph)
            lines.append("  %-*s  %-*s  %s%s" % (width, r["node"], op_width, r["op"], r["runs"],
                                                 ": " + r["detail"] if r["detail"] else ""))
        if self.dump_dir:
            lines.append("debug directories (report.html in each): %s" % self.dump_dir)
        return "\n".join(lines)

    __repr__ = __str__


def _provenance(dump_dir: str, graph: str) -> list[dict[str, Any]]:
    """The provenance maps of every compile of `graph`'s partitions, first compile of each."""
    out = []
    for d in sorted(glob.glob(os.path.join(dump_dir, graph + "_p*.0"))):
        with open(os.path.join(d, "provenance.json")) as f:
            out.append(json.load(f))
    return out


def _describe(node) -> str:
    t = node.target
    return str(getattr(t, "name", lambda: None)() or getattr(t, "__name__", t))


def _rows_of(name: str, compiled: Any, backward: bool, dump_dir: str) -> list[dict[str, str]]:
    label = "%s (%s)" % (name, "backward" if backward else "forward")
    # FX node name -> the compiled graph's nodes that came from it, with their partition's calls.
    by_origin: dict[str, list[tuple[dict[str, Any], dict[int, dict[str, Any]], int]]] = {}
    origins_of_line: dict[tuple[int, int], set[str]] = {}  # (partition, line) -> FX nodes it computes
    for k, prov in enumerate(_provenance(dump_dir, name)):
        calls = {c["line"]: c for c in prov["calls"]}
        for n in prov["nodes"]:
            if n.get("origin"):
                by_origin.setdefault(n["origin"], []).append((n, calls, k))
                for line in n["lines"]:
                    origins_of_line.setdefault((k, line), set()).add(n["origin"])
    order = ("fallback", "kernel", "user_kernel", "library", "control", "scalar", "view")
    rows = []
    for node in compiled.gm.graph.nodes:
        if node.op != "call_function":
            continue
        op = _describe(node)
        if op == "getitem":
            continue
        row = {"graph": label, "node": node.name, "op": op, "runs": "", "detail": ""}
        rows.append(row)
        if node in compiled.eager:
            row["runs"], row["detail"] = "eager", str(compiled.eager[node])
            continue
        mine = by_origin.get(node.name, [])
        if not mine:
            row["runs"], row["detail"] = "removed", "folded, merged into another op's call, or unused after the passes"
            continue
        kinds, names, whys, fused = [], [], [], set()
        for n, calls, k in mine:
            if n["runs_as"] not in kinds:
                kinds.append(n["runs_as"])
            if n.get("why") and n["why"] not in whys:
                whys.append(n["why"])
            for line in n["lines"]:
                c = calls.get(line)
                if c and c["name"] not in names:
                    names.append(c["name"])
                if c and c["kind"] == "kernel":
                    fused |= origins_of_line.get((k, line), set()) - {node.name}
        kinds.sort(key=lambda k: order.index(k) if k in order else len(order))
        row["runs"] = {"fallback": "reference kernel", "user_kernel": "user kernel"}.get(kinds[0], kinds[0])
        parts = [", ".join(names)] if names else []
        if len(mine) > 1:
            parts.append("decomposed into %d ops (%s)" % (len(mine), ", ".join(
                sorted({n["op"].replace("aten.", "").replace(".default", "") for n, _, _ in mine}))))
        if fused:
            parts.append("fused with " + ", ".join(sorted(fused)))
        if whys:
            parts.append("why: " + "; ".join(whys))
        if kinds[0] == "view":
            parts.append("index arithmetic in its readers, no code")
        row["detail"] = "; ".join(parts)
    return rows


def _traced(fn, args, kwargs, device, dump_dir, listen, backward):
    """Without torch.compile (torch < 2.0): fn traced to ATen ops by make_fx, compiled whole."""
    from torch.fx.experimental.proxy_tensor import make_fx
    from .runtime import compile_graph
    if backward:
        raise ValueError("toroid.explain(backward=True) needs torch.compile (torch >= 2.0)")
    if kwargs:
        raise ValueError("toroid.explain: keyword arguments need torch.compile (torch >= 2.0)")
    gm = make_fx(fn)(*args)
    compiled = compile_graph(gm, list(args), device=device, dump_dir=dump_dir, name="explain_0")
    listen("explain_0", compiled, False)
    return compiled(*args)


def explain(fn: Callable[..., Any], *args: Any, device: Optional[str] = None, backward: bool = False,
            dump_dir: Optional[str] = None, file: Optional[TextIO] = sys.stdout, **kwargs: Any) -> Explanation:
    """Compiles `fn` with torch.compile(backend="toroid"), calls it on `args` (and `kwargs`), and
    prints (to `file`; None: not at all) what ran each ATen op. With `backward`, the sum of the
    tensor outputs is also differentiated, so the backward graph is compiled and told as well.
    `dump_dir` keeps the debug directories there (default: a temporary directory, removed).
    Returns the Explanation (its `rows` are the table's)."""
    import torch
    from .backend import listeners
    graphs: list[tuple[str, Any, bool]] = []

    def listen(name: str, compiled: Any, is_backward: bool) -> None:
        graphs.append((name, compiled, is_backward))

    with tempfile.TemporaryDirectory(prefix="toroid-explain-") as tmp:
        where = dump_dir or tmp
        options = {"dump_dir": where}
        if device:
            options["device"] = device
        listeners.append(listen)
        try:
            if hasattr(torch, "compile"):
                out = torch.compile(fn, backend="toroid", options=options)(*args, **kwargs)
            else:
                out = _traced(fn, args, kwargs, device, where, listen, backward)
            if backward:
                flat = out if isinstance(out, (tuple, list)) else [out]
                total = sum(t.float().sum() for t in flat if isinstance(t, torch.Tensor) and t.requires_grad)
                if not isinstance(total, torch.Tensor):
                    raise ValueError("toroid.explain(backward=True): no output of fn requires grad")
                total.backward()
        finally:
            listeners.remove(listen)
        if not graphs:
            raise RuntimeError("toroid.explain: dynamo compiled no graph of %r (already compiled with these "
                               "options, or nothing to compile); torch._dynamo.reset() clears its cache" % (fn,))
        rows = []
        for name, compiled, is_backward in graphs:
            rows += _rows_of(name, compiled, is_backward, where)
    e = Explanation(rows, len(graphs), dump_dir)
    if file is not None:
        print(e, file=file)
    return e
