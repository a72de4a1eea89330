"""Programs saved with torch.export.save, compiled and run by toroid.

    prog = toroid.export.load("model.pt2")
    out = prog(x)            # as the exported module's forward

Needs torch >= 2.1 (torch.export); supported .pt2 archives are those torch.export.save writes in
torch 2.1 to 2.11 (the loading itself is torch.export.load's). The program is decomposed to core
ATen (run_decompositions), its lifted parameters, buffers and constants are passed to toroid as
inputs, and buffer mutations the program returns are written back to its buffers.
"""
from __future__ import annotations

from typing import Optional

from ._capi import ToroidError


class LoadedProgram:
    def __init__(self, ep, device=None, dynamic=True, dump_dir=None):
        from .runtime import compile_graph
        self.ep = ep
        gm = ep.graph_module
        sig = ep.graph_signature
        state = dict(ep.state_dict)
        state.update(getattr(ep, "constants", {}) or {})
        self.lifted = []  # per placeholder: the tensor to pass, or None for a user input
        self.mutations = []  # (output index, buffer tensor) for buffer mutations it returns
        self.user_outputs = []
        for kind, target in _input_kinds(gm, sig):
            if kind == "USER_INPUT":
                self.lifted.append(None)
            elif kind in ("PARAMETER", "BUFFER", "CONSTANT_TENSOR"):
                if target not in state:
                    raise ToroidError("exported program: no tensor for %s %s" % (kind.lower(), target))
                self.lifted.append(state[target])
            else:
                raise ToroidError("exported program: input kind %s is not supported" % kind)
        for i, (kind, target) in enumerate(_output_kinds(gm, sig)):
            if kind == "BUFFER_MUTATION":
                self.mutations.append((i, state[target]))
            elif kind == "USER_OUTPUT":
                self.user_outputs.append(i)
            else:
                raise ToroidError("exported program: output kind %s is not supported" % kind)
        self.out_spec = ep.call_spec.out_spec if getattr(ep, "call_spec", None) else \
            ep.module_call_graph[0].signature.out_spec
        self.compiled = compile_graph(gm, None, device=device, dynamic=dynamic, dump_dir=dump_dir, name="export")
        self.num_user_inputs = self.lifted.count(None)

    @property
    def fallbacks(self):
        return self.compiled.fallbacks

    def __call__(self, *args, **kwargs):
        import torch
        from torch.utils._pytree import tree_flatten, tree_unflatten
        flat = tree_flatten((args, kwargs))[0] if kwargs else tree_flatten(args)[0]
        if len(flat) != self.num_user_inputs:
            raise TypeError("the exported program takes %d inputs, got %d" % (self.num_user_inputs, len(flat)))
        it = iter(flat)
        full = [next(it) if t is None else t for t in self.lifted]
        outs = self.compiled(*full)
        with torch.no_grad():
            for i, buf in self.mutations:
                buf.copy_(outs[i])
        user = [outs[i] for i in self.user_outputs]
        return tree_unflatten(user, self.out_spec) if self.out_spec is not None else tuple(user)


def _input_kinds(gm, sig):
    """(kind, target) per placeholder: input_specs (torch >= 2.2), else 2.1's name maps."""
    if hasattr(sig, "input_specs"):
        return [(spec.kind.name, spec.target) for spec in sig.input_specs]
    out = []
    for n in gm.graph.nodes:
        if n.op != "placeholder":
            continue
        if n.name in sig.inputs_to_parameters:
            out.append(("PARAMETER", sig.inputs_to_parameters[n.name]))
        elif n.name in sig.inputs_to_buffers:
            out.append(("BUFFER", sig.inputs_to_buffers[n.name]))
        else:
            out.append(("USER_INPUT", None))
    return out


def _output_kinds(gm, sig):
    """(kind, target) per output, as _input_kinds."""
    if hasattr(sig, "output_specs"):
        return [(spec.kind.name, spec.target) for spec in sig.output_specs]
    out = next(n for n in gm.graph.nodes if n.op == "output").args[0]
    names = [getattr(a, "name", None) for a in out]
    return [("BUFFER_MUTATION", sig.buffers_to_mutate[nm]) if nm in sig.buffers_to_mutate else ("USER_OUTPUT", None)
            for nm in names]


def load(path: str, device: Optional[str] = None, dynamic: bool = True, dump_dir: Optional[str] = None) -> LoadedProgram:
    """Loads a torch.export.save archive and compiles it: a callable like the exported module."""
    import torch
    if not hasattr(torch, "export") or not hasattr(getattr(torch, "export"), "load"):
        raise ToroidError("toroid.export.load needs torch >= 2.1 (torch.export); this is torch %s" % torch.__version__)
    from torch._decomp import core_aten_decompositions
    ep = torch.export.load(path)
    ep = ep.run_decompositions(core_aten_decompositions())
    return LoadedProgram(ep, device=device, dynamic=dynamic, dump_dir=dump_dir)
