"""toroid's PyTorch frontend: torch.compile(backend="toroid"), torch.export programs, and FX
graphs compiled through libtoroid.so's C ABI (ctypes; no compiled extension). docs/python.md.

Importing this package does not import torch; the backend is registered with dynamo when torch
has it (torch >= 2.0).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

from ._capi import ToroidError, analyze_kernel, device_memory, op_supported  # noqa: F401
from . import aot, config, export  # noqa: F401  (toroid.export.load; imports torch only when called)
from .explain import Explanation, explain  # noqa: F401

__version__ = "0.2.0"

if TYPE_CHECKING:
    import torch


def compile_graph(gm: "torch.fx.GraphModule", example_inputs: Optional[Sequence[Any]] = None,
                  **kw: Any) -> Callable[..., Any]:
    """Compiles an FX GraphModule of ATen ops; see runtime.CompiledGraph."""
    from .runtime import compile_graph as c
    return c(gm, example_inputs, **kw)


def graph_to_tir(gm: "torch.fx.GraphModule", example_inputs: Optional[Sequence[Any]] = None, name: str = "main") -> str:
    """The .tir text of an FX GraphModule of ATen ops."""
    from .fx_to_tir import graph_to_tir as g
    return g(gm, example_inputs, name)


def cuda_kernel(source: str, name: str, arch: int = 90) -> Callable[..., Any]:
    """A CUDA C++ kernel callable in eager code and in compiled functions; see user_kernels.py."""
    from .user_kernels import cuda_kernel as k
    return k(source, name, arch)


def _register():
    # Only when torch is already imported or importable cheaply enough to matter: dynamo looks
    # backends up by name, and the registration must exist before torch.compile is called.
    try:
        from .backend import register
        register()
    except ImportError:  # torch missing, or too old for dynamo: the rest of the package works
        pass


_register()
