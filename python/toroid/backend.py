"""torch.compile(backend="toroid"): dynamo hands a GraphModule of torch calls; aot_autograd with
the core ATen decompositions turns it into forward and backward graphs of core ATen ops, and
each is compiled by runtime.compile_graph.

Dynamic shapes: a size dynamo marks symbolic arrives as a SymInt; it stays a symbol in the .tir
graph, the module is compiled with dynamic shapes on, and toroid's driver checks the guards it
recorded on every call, compiling again (never running wrongly) when one fails. Dynamo checks its
own guards before calling us.
"""
from __future__ import annotations

import itertools
import logging
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

if TYPE_CHECKING:
    import torch

log = logging.getLogger("toroid")
_counter = itertools.count()
# Called as listener(name, compiled_graph, backward) for each graph the backend compiles
# (toroid.explain listens).
listeners: list[Callable[[str, Any, bool], None]] = []


# torch.compile's modes: toroid has one compile path, so each is accepted and means the same
# ("reduce-overhead" will map to CUDA graphs once toroid has them).
MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
# torch.compile(..., options={...}) keys toroid takes, with what each does.
OPTIONS = {
    "dump_dir": "a directory: each compile of a partition writes a debug directory there (docs/debugging.md)",
    "device": "'cpu' or 'cuda': the device to compile for (default: the inputs')",
}


def _compiler(device=None, dump_dir=None, backward=False):
    """A compiler for AOTAutograd. The backward's inputs are the saved activations, which
    AOTAutograd hands over (boxed, its own references dropped): it runs in segments that free
    them as they die (runtime.compile_graph's free_inputs; TOROID_SEGMENT_BACKWARD=0 keeps it
    whole). BERT's training step: peak 1157 MiB against 1341 in one partition, no slower."""
    from ._capi import env_flag
    segments = backward and env_flag("TOROID_SEGMENT_BACKWARD", True)
    def compile_fn(gm, example_inputs):
        from .fx_to_tir import real_mode
        from .runtime import boxed, compile_graph
        name = "toroid_%d" % next(_counter)
        dynamic = any(type(s).__name__.startswith("SymInt") for x in example_inputs
                      for s in (list(x.shape) if hasattr(x, "shape") else [x]))
        with real_mode():
            compiled = compile_graph(gm, example_inputs, device=device, dynamic=True, dump_dir=dump_dir, name=name,
                                     free_inputs=segments, donated_inputs=_donated_inputs() if segments else ())
        log.info("toroid: compiled %s (%d steps, %s shapes, %d fallbacks)", name, len(compiled.steps),
                 "dynamic" if dynamic else "static", len(compiled.fallbacks))
        for listener in list(listeners):
            listener(name, compiled, backward)
        return boxed(compiled)
    return compile_fn


def _donated_inputs():
    """The backward's inputs AOTAutograd lets the compiled graph reuse (saved activations that
    are no forward input or output: its bw_donated_idxs), where this torch tells; else none."""
    try:
        import torch._guards
        ctx = torch._guards.TracingContext.try_get()
        return list(getattr(getattr(ctx, "fw_metadata", None), "bw_donated_idxs", None) or ())
    except (ImportError, AttributeError):
        return []


def _check_options(mode, options):
    """The options dict, checked: an unknown mode or key is an error naming what is accepted."""
    if mode is not None and mode not in MODES:
        raise ValueError("toroid backend: unknown mode %r (accepted: %s)" % (mode, ", ".join(MODES)))
    options = dict(options or {})
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ValueError("toroid backend: unknown option(s) %s; accepted: %s" % (
            ", ".join(map(repr, unknown)), "; ".join("%s (%s)" % kv for kv in OPTIONS.items())))
    if options.get("device") not in (None, "cpu", "cuda"):
        raise ValueError("toroid backend: option 'device' must be 'cpu' or 'cuda', got %r" % (options["device"],))
    return options


def toroid_backend(gm: "torch.fx.GraphModule", example_inputs: Sequence[Any], dump_dir: Optional[str] = None,
                   mode: Optional[str] = None, options: Optional[dict[str, Any]] = None) -> Callable[..., Any]:
    """The dynamo backend: aot_autograd with core ATen decompositions over compile_graph.
    torch.compile passes `mode=` or `options=` through (see MODES and OPTIONS)."""
    from torch._dynamo.backends.common import aot_autograd
    from .attention import decompose_attention
    options = _check_options(mode, options)
    for line in decompose_attention(gm):
        log.info("toroid: attention left to PyTorch: %s", line)
    device, dump_dir = options.get("device"), options.get("dump_dir", dump_dir)
    compiler = _compiler(device=device, dump_dir=dump_dir)
    # keep_inference_input_mutations: an inference graph that writes its inputs (an optimizer
    # step) ends in copy_ nodes toroid compiles, writing the inputs where they are, instead of
    # returning new values for AOTAutograd to copy back one by one in Python.
    return aot_autograd(fw_compiler=compiler, bw_compiler=_compiler(device=device, dump_dir=dump_dir, backward=True),
                        decompositions=_decompositions(),
                        partition_fn=_partition_fn(), keep_inference_input_mutations=True)(gm, example_inputs)


def _decompositions():
    """What AOTAutograd decomposes: the core ATen decompositions; training-mode batch norm (a
    training step's `_native_batch_norm_legit_functional`, which the core set leaves whole:
    statistics, normalization and running-stat updates, fused like any reduction, as Inductor
    decomposes it) and `linalg_vector_norm` (weight norm's; not in the registry): torch's own
    decompositions, where it has them; and ATen's fused attention ops
    (attention.fused_attention_decompositions) where they can be compiled."""
    import torch
    from torch._decomp import core_aten_decompositions, get_decompositions
    from .attention import fused_attention_decompositions
    table = dict(core_aten_decompositions())
    extra = [getattr(torch.ops.aten, name, None) for name in ("_native_batch_norm_legit_functional", "linalg_vector_norm")]
    table.update(get_decompositions([op for op in extra if op is not None]))
    own = dict(table)
    flash_cpu = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)
    for op, fn in fused_attention_decompositions(torch_own=own).items():
        if flash_cpu is not None and op == flash_cpu.default:
            table[op] = fn  # ours calls torch's where it does not leave the op to toroid's fused kernel
        else:
            table.setdefault(op, fn)  # torch's own, where it has one, decomposes in every case
    return table


def _partition_fn():
    """How a training graph splits into forward and backward: as for Inductor, the min-cut
    partitioner, which saves fewer activations and recomputes cheap pointwise ones in the
    backward (toroid fuses them there as Inductor does), so a step holds less memory."""
    import functools
    import inspect
    from torch._functorch.partitioners import min_cut_rematerialization_partition
    if "compiler" in inspect.signature(min_cut_rematerialization_partition).parameters:
        return functools.partial(min_cut_rematerialization_partition, compiler="inductor")
    return min_cut_rematerialization_partition


def register():
    """Registers "toroid" with dynamo; raises ImportError where torch has no dynamo (< 2.0)."""
    import torch._dynamo
    if "toroid" not in torch._dynamo.list_backends(exclude_tags=()):
        torch._dynamo.register_backend(compiler_fn=toroid_backend, name="toroid")
