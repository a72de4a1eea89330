"""AOT packages from Python: a torch.export program, compiled with its weights into one file that
C and C++ run with toroid_package_load and toroid_package_run, with no Python and no compiler
(docs/aot.md).

    ep = torch.export.export(model.eval(), (x,))
    toroid.aot.package(ep, "model.toroidpkg", device="cuda")
"""
from __future__ import annotations

import re
from typing import Any, Optional

from ._capi import ToroidError


def _params_as_attributes(ep):
    """ep's graph with its lifted parameters, buffers and constant tensors as get_attr nodes of
    their qualified names (which fx_to_tir writes as `param` nodes) and only the user inputs as
    placeholders."""
    import copy
    import torch
    state = dict(ep.state_dict)
    state.update(getattr(ep, "constants", {}) or {})
    graph = copy.deepcopy(ep.graph_module.graph)
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    kinds = [(spec.kind.name, spec.target) for spec in ep.graph_signature.input_specs]
    attrs = {}
    first = next(n for n in graph.nodes if n.op != "placeholder")
    for node, (kind, target) in zip(placeholders, kinds):
        if kind == "USER_INPUT":
            continue
        if kind not in ("PARAMETER", "BUFFER", "CONSTANT_TENSOR") or target not in state:
            raise ToroidError("toroid.aot.package: input %s of kind %s is not supported" % (node.name, kind))
        attrs[target] = state[target]
        with graph.inserting_before(first):
            a = graph.get_attr(target)
        a.meta = dict(node.meta)
        node.replace_all_uses_with(a)
        graph.erase_node(node)
    return torch.fx.GraphModule(attrs, graph)


def package(exported_program: Any, path: str, device: Optional[str] = None, dynamic: bool = False,
            tf32: bool = False) -> str:
    """Writes `exported_program` (torch.export.export's) to `path` as an AOT package for `device`
    ("cpu" or "cuda"; default: where its parameters are). The program is decomposed to core ATen;
    its parameters, buffers and constants become the package's weights, its user inputs the
    package's inputs (in order). `dynamic` keeps the inputs' sizes symbolic (default: the
    example's sizes only); `tf32` lets f32 convolutions and matmuls on CUDA use TF32 as PyTorch's
    defaults do for cuDNN. Returns the .tir text that was packaged."""
    from . import _capi
    from .attention import fuse_attention_calls
    from .fx_to_tir import get_attrs, graph_to_tir, real_mode
    from .runtime import _header
    ep = exported_program.run_decompositions()
    specs = getattr(ep.graph_signature, "output_specs", [])
    if any(s.kind.name != "USER_OUTPUT" for s in specs):
        raise ToroidError("toroid.aot.package: the program mutates buffers (%s); export the model in eval mode" %
                          ", ".join(str(s.target) for s in specs if s.kind.name != "USER_OUTPUT"))
    gm = _params_as_attributes(ep)
    fuse_attention_calls(gm)  # ATen's fused attention ops, which the registry lacks: toroid's op
    if device is None:
        devices = {t.device.type for t in dict(ep.state_dict).values()}
        device = "cuda" if "cuda" in devices else "cpu"
    with real_mode():
        text = graph_to_tir(gm, None, name="aot")  # sizes and dtypes from the nodes' meta
        attrs = get_attrs(gm)
        order = re.findall(r'^\s*%\S+ = param "([^"]+)"', text, flags=re.M)
        tensors = []
        for name in order:
            t = attrs.get(name)
            if t is None:
                raise ToroidError("toroid.aot.package: no tensor for parameter %s" % name)
            tensors.append(t.detach().to("cpu").contiguous())
        headers = [_header(t) for t in tensors]
        _capi.write_package(text, path, headers, device=device, dynamic=dynamic, filename="<toroid.aot>",
                            tf32_convolutions=tf32 and device == "cuda", tf32_matmuls=False)
    return text
