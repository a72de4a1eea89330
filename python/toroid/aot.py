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


def package(exported_program: Any, path: str, device: Optional[str] = None, dynamic: bool = False,
            tf32: bool = False) -> str:
    """Writes `exported_program` (torch.export.export's) to `path` as an AOT package for `device`
    ("cpu" or "cuda"; default: where its parameters are). The program is decomposed to core ATen;
    its parameters, buffers and constants become the package's weights, its user inputs the
    package's inputs (in order). `dynamic` keeps the inputs' sizes symbolic (default: the
    example's sizes only); `tf32` lets f32 convolutions and matmuls on CUDA use TF32 as PyTorch's
    defaults do for cuDNN. Returns the .tir text that was packaged."""
    import torch
    from . import _capi
    from .fx_to_tir import get_attrs, graph_to_tir, real_mode
    from .runtime import _header
    ep = exported_program.run_decompositions()
    specs = getattr(ep.graph_signature, "output_specs", [])
    if any(s.kind.name != "USER_OUTPUT" for s in specs):
        raise ToroidError("toroid.aot.package: the program mutates buffers (%s); export the model in eval mode" %
                          ", ".join(str(s.target) for s in specs if s.kind.name != "USER_OUTPUT"))
    gm = ep.module()  # parameters and buffers as attributes (get_attr nodes), user inputs as placeholders
    examples = [n.meta["val"] for n in gm.graph.nodes if n.op == "placeholder" and "val" in n.meta]
    params = dict(exported_program.state_dict)
    if device is None:
        devices = {t.device.type for t in params.values()}
        device = "cuda" if "cuda" in devices else "cpu"
    with real_mode():
        text = graph_to_tir(gm, examples or None, name="aot")
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
    del torch
    return text
