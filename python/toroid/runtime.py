"""Running FX graphs through toroid: compiled partitions, with eager PyTorch for the rest.

compile_graph(gm, example_inputs) splits the graph into runs of nodes toroid can compile
(partitions, each one .tir graph and one toroid module) and the nodes between them, which run in
PyTorch eager (graph partitions). A node falls back when its op is not an ATen op that
toroid's registry supports (toroid_op_supported), when .tir cannot express it, or when compiling
its partition fails at that node; each fallback is logged, naming the op.
"""
from __future__ import annotations

import contextlib
import ctypes
import functools
import logging
import operator
import re
from typing import TYPE_CHECKING, Any, Optional, Sequence

from . import _capi
from ._capi import env_flag
from .attention import fuse_attention_calls
from .foreach import expand_foreach
from .fx_to_tir import (Unsupported, emit_nodes, flatten_outputs, get_attrs, hop_name, is_symbolic, node_values,
                        op_name, sym_expr, tir_dtype, user_kernel_kind)

if TYPE_CHECKING:
    import torch

log = logging.getLogger("toroid")
# Calls of partitions with donated inputs, over the process: [donated, declined] (a benchmark's
# evidence that donation happened; each Partition keeps its own pair too).
DONATIONS = [0, 0]
_NO_POOL = contextlib.nullcontext()  # allocations where PyTorch puts them (a reusable context)

_TORCH_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
                 "complex64", "complex128"]


def _torch_dtype(code):
    import torch
    return getattr(torch, _TORCH_DTYPES[code])


def _dtype_code(dtype):
    return _TORCH_DTYPES.index(str(dtype).replace("torch.", ""))


def _header(x):
    """A toroid_tensor for a torch tensor (its first element's address, offset 0) or a scalar."""
    t = _capi.Tensor()
    if hasattr(x, "data_ptr"):
        t.data = x.data_ptr() or None
        t.dtype = _dtype_code(x.dtype)
        t.ndim = x.dim()
        if t.ndim > _capi.MAX_DIMS:
            raise _capi.ToroidError("a tensor of %d dims (toroid takes at most %d)" % (t.ndim, _capi.MAX_DIMS))
        for d in range(t.ndim):
            t.sizes[d] = x.shape[d]
            t.strides[d] = x.stride()[d]
    else:
        t.ndim = -1
        t.scalar = float(x)
    return t


def _signature(xs):
    """What decides a call's plan: each input's sizes, strides, dtype and device (scalars by type
    and value). Tensors only: one C-level pass per field (a call may have hundreds of inputs);
    anything else takes the per-input form."""
    global _signature_fields
    if _signature_fields is None:
        import torch
        _signature_fields = (torch.Tensor.size, torch.Tensor.stride, operator.attrgetter("dtype"),
                             operator.attrgetter("device"))
    try:
        return tuple(tuple(map(f, xs)) for f in _signature_fields)
    except TypeError:  # a scalar (int, float, SymInt) among the inputs
        return tuple((x.dtype, x.device, x.shape, x.stride()) if hasattr(x, "shape") else (type(x), x) for x in xs)


_signature_fields = None


def _tensor_guard(xs):
    """check(*tensors): True only for tensors with the dtypes, devices, sizes and
    strides of `xs` (and their requires_grad and dispatch keys), where torch has dynamo's C++
    tensor check (TensorGuards: a few ns a tensor, where reading the fields from Python costs
    hundreds); None where it has not, or `xs` holds a scalar. Any failed check takes the
    signature path, so this only ever skips work."""
    import torch
    try:
        from torch._C._dynamo.guards import TensorGuards
        if not all(isinstance(x, torch.Tensor) for x in xs):
            return None
        g = TensorGuards(*xs, dynamic_dims_sizes=[list(x.shape) for x in xs],
                         dynamic_dims_strides=[list(x.stride()) for x in xs])
        if not g.check(*xs):  # an interface unlike the one this is written for
            return None
        return g.check
    except Exception:  # no dynamo, or another constructor: the signature path does the work
        return None


def _layout_kind(v):
    """How an example input is laid out, so run-time inputs can be brought to the same layout."""
    import torch
    if not hasattr(v, "is_contiguous"):
        return None
    try:
        if v.is_contiguous():
            return torch.contiguous_format
        if v.dim() == 4 and v.is_contiguous(memory_format=torch.channels_last):
            return torch.channels_last
    except Exception:  # symbolic strides that cannot be decided: pass inputs as they are
        return None
    return None


class Partition:
    """One compiled .tir graph: inputs are FX nodes' values (boundary inputs, then params)."""

    def __init__(self, emitter, outputs, attrs, values, device, dynamic, dump_dir, name, cuda_graphs=True):
        self.text = emitter.text
        # Inputs whose memory the program may reuse (`input donated`): a call checks that nothing
        # else holds them (_exclusive), else runs the same graph compiled without (_kept).
        self.donated = [emitter.inputs.index(n) for n in getattr(emitter, "donated", ())]
        self._kept_args = (emitter, outputs, attrs, values, device, dynamic, dump_dir, name, cuda_graphs) \
            if self.donated else None
        self._kept_partition = None
        self.donations = [0, 0]  # calls that donated, and calls that could not
        self.cuda_graphs = cuda_graphs
        self.name = name
        self.inputs = list(emitter.inputs)
        self.params = [attrs[n.target] for n in emitter.params]
        self.outputs = outputs
        self.layouts = [_layout_kind(values.get(n)) for n in self.inputs]
        # Inputs computed in eager before this partition, with their traced dtype: PyTorch's fake
        # tensors and eager kernels disagree in a few places (CUDA batch norm's saved statistics
        # in eval mode have the running stats' dtype in eager, float32 in the fake), and this
        # graph was traced with the fake's. User inputs are never cast: a wrong dtype is an error.
        self.traced_dtypes = [values[n].dtype if n.op != "placeholder" and hasattr(values.get(n), "dtype") else None
                              for n in self.inputs]
        self.scalar_kinds = [type(values.get(o)).__name__ for o in outputs]
        # 0-dim CPU tensors computed on the GPU (fx_to_tir's Emitter._moved): returned on the CPU,
        # where eager has them.
        self.cpu_outputs = [i for i, o in enumerate(outputs) if device == "cuda" and _is_cpu_scalar(values.get(o))]
        self.device = device
        # No reference kernels: an op toroid has no compiled form for (at this dtype) fails the
        # compile at its node, and the caller runs it in eager instead (slow fallbacks are visible).
        # torch.use_deterministic_algorithms: device kernels that combine with atomics take their
        # sorted form, whose results never vary (dynamo guards on the flag, so a change compiles
        # again). PyTorch's TF32 flags as they are now (dynamo guards on the matmul one; a later
        # change of torch.backends.cudnn.allow_tf32 applies to graphs compiled after it).
        # Inductor's emulate_precision_casts, where torch has it: bf16/f16 values round after each op.
        import torch
        self.module = _capi.Module(self.text, device=device, dynamic=dynamic, dump_dir=dump_dir, filename=name,
                                   reference_kernels=False,
                                   deterministic=torch.are_deterministic_algorithms_enabled(), cuda_graphs=cuda_graphs,
                                   tf32_convolutions=torch.backends.cudnn.allow_tf32,
                                   tf32_matmuls=torch.backends.cuda.matmul.allow_tf32,
                                   emulate_precision_casts=_inductor_emulates_precision_casts())
        # Inputs the graph writes (a trailing copy_, kept by keep_inference_input_mutations): a
        # call that had to cast or copy one (_prepare) copies the result back into the caller's.
        copies = [n for n in emitter.line_nodes.values() if n.target is torch.ops.aten.copy_.default]
        self.mutated = sorted({self.inputs.index(n.args[0]) for n in copies if n.args[0] in self.inputs})
        self._plans = {}  # call signature -> _plan
        self._as_given = set()  # input signatures _prepare leaves unchanged
        # (check, signature, plan): a C++ check that tensors have the signature's dtypes, devices, sizes
        # and strides, for the signature the calls keep repeating (_tensor_guard).
        self._guard = None
        self._leans = {}  # call signature -> _lean's function, or None where it has none
        self._last_key = None
        self._unguarded = None
        self._torch_device = {}  # where outputs are allocated, by CUDA device index (made once each)
        self._pools = {}  # by CUDA device index: this graph's memory pool (_memory_pool)

    def _prepare(self, args):
        import torch
        out = []
        Tensor, device = torch.Tensor, self.device
        extra = [None] * len(self.params)
        for x, layout, traced in zip(list(args) + self.params, self.layouts + extra, self.traced_dtypes + extra):
            if isinstance(x, Tensor):
                if traced is not None and x.dtype != traced:
                    x = x.to(traced)
                if x.device.type != device:
                    if device == "cuda" and x.dim() == 0:
                        x = x.to("cuda")  # a CPU scalar tensor (fx_to_tir's Emitter._moved)
                    else:
                        raise _capi.ToroidError("an input on %s, but this graph was compiled for %s" % (x.device, device))
                if layout is not None and not x.is_contiguous(memory_format=layout):
                    x = x.contiguous(memory_format=layout)
            elif not isinstance(x, (int, float, bool)):
                x = int(x)  # a SymInt that reached run time has a value
            out.append(x)
        return out

    def _plan(self, args, key):
        """What a call with these dtypes, devices, sizes, strides and scalars needs, made once: the
        input headers (only data pointers change between calls, passed in an array of their own,
        so the headers are never written and threads calling at once can share them), the
        outputs' metadata and headers, and which outputs to allocate."""
        import torch
        plan = self._plans.get(key)
        if plan is not None:
            return plan
        headers = (_capi.Tensor * len(args))(*[_header(x) for x in args])
        try:
            infos, ws_bytes = self.module.output_info(headers)
        except _capi.ToroidError as e:
            if "depends on data" not in str(e):
                raise
            # Output sizes only the run knows (nonzero's count, an item() size): toroid
            # allocates the outputs and they are copied into torch tensors.
            plan = (headers, [i for i, x in enumerate(args) if isinstance(x, torch.Tensor)], None, 0, None, None, None,
                    False, ctypes.c_void_p * len(args), None)
            self._plans[key] = plan
            return plan
        outs = (_capi.Tensor * len(infos))()
        allocate = []  # (output index, sizes, strides, torch dtype)
        for i, info in enumerate(infos):
            if info.is_scalar or info.ndim < 0 or info.alias_input >= 0 or info.alias_output >= 0:
                continue  # scalars are returned in the header; views are made after the run
            sizes, strides = list(info.sizes[:info.ndim]), list(info.strides[:info.ndim])
            allocate.append((i, sizes, strides, _torch_dtype(info.dtype)))
            outs[i].dtype, outs[i].ndim = info.dtype, info.ndim
            for d in range(info.ndim):
                outs[i].sizes[d], outs[i].strides[d] = sizes[d], strides[d]
        tensors = [i for i, x in enumerate(args) if isinstance(x, torch.Tensor)]
        # The outputs that need work after the run: scalars, and views of inputs or outputs.
        finish = [i for i, info in enumerate(infos) if info.is_scalar or info.ndim < 0 or
                  info.alias_input >= 0 or info.alias_output >= 0]
        # Scalar results are written into the output headers: such a call copies them first.
        scalars = any(info.is_scalar or info.ndim < 0 for info in infos)
        plan = (headers, tensors, infos, ws_bytes, outs, allocate, finish, scalars, ctypes.c_void_p * len(args),
                ctypes.c_void_p * len(infos))
        self._plans[key] = plan
        return plan

    def __call__(self, args):
        if self.donated:
            if not all(_exclusive(args, i) for i in self.donated):
                if not self.donations[1] and log.isEnabledFor(logging.DEBUG):
                    log.debug("toroid: %s: inputs held elsewhere (Python refs, tensor uses, storage uses; a "
                              "fresh tensor's %s): %s", self.name, _exclusive_base, "; ".join(
                                  "%d %s%s held by %s" % (i, _holders(args[i]),
                                                         " (a view; with its base's Python references and "
                                                         "uses %s, a fresh view's %s)" % (
                                                             _view_holders(args[i]), _exclusive_view)
                                                         if args[i]._is_view() else "",
                                                         _referrers(args[i], args))
                                  for i in self.donated if not _exclusive(args, i)))
                self.donations[1] += 1
                DONATIONS[1] += 1
                return self._kept()(args)
            self.donations[0] += 1
            DONATIONS[0] += 1
        full = list(args) + self.params if self.params else list(args)
        guard = self._guard
        if guard is not None and guard[0](*full):  # the last signature again, checked in C++
            return guard[3](full) if guard[3] is not None else self._run(full, guard[1], guard[2])
        key = _signature(full)
        if key in self._as_given:  # inputs like these need no cast, move or copy: no _prepare
            if key == self._last_key and key != self._unguarded:  # twice in a row: worth a check of its own
                check = _tensor_guard(full)
                plan = self._plan(full, key)
                self._guard = (check, key, plan, self._lean_of(key, plan)) if check else None
                if check is None:  # no C++ check for these inputs: not tried again on every call
                    self._unguarded = key
            self._last_key = key
            lean = self._lean_of(key, None, full)
            return lean(full) if lean is not None else self._run(full, key)
        prepared = self._prepare(args)
        if all(a is b for a, b in zip(prepared, full)):
            self._as_given.add(key)
            return self._run(full, key)
        results = self._run(prepared, _signature(prepared))
        for i in self.mutated:  # a written input the call cast or copied: the caller's gets the result
            if prepared[i] is not args[i]:
                args[i].copy_(prepared[i])
        return results

    def _kept(self):
        """This graph compiled without donated inputs, for calls whose inputs something else
        still holds (made on the first such call)."""
        if self._kept_partition is None:
            import copy
            emitter, outputs, attrs, values, device, dynamic, dump_dir, name, cuda_graphs = self._kept_args
            kept = copy.copy(emitter)
            kept.text = re.sub(r"(?m)^(  %\S+ = input) donated :", r"\1 :", emitter.text)
            kept.donated = []
            log.debug("toroid: %s: an input to donate is held elsewhere; compiled without donation", name)
            self._kept_partition = Partition(kept, outputs, attrs, values, device, dynamic, dump_dir,
                                             name.replace(".tir", "_kept.tir"), cuda_graphs)
        return self._kept_partition

    def _lean_of(self, key, plan, args=None):
        """_lean's function for signature `key` (its plan, or the inputs to make it from), made
        once."""
        lean = self._leans.get(key, False)
        if lean is False:
            lean = self._leans[key] = self._lean(plan or self._plan(args, key))
        return lean

    def _lean(self, plan):
        """_run for one plan, where it is a plain call on the CPU: every input a tensor, every
        output a fresh tensor in order, no workspace, scalar result or view. The per-call work is
        then the data pointers, the outputs' allocation and the C call: one builtin function's
        call where _capi.python_function has it (the plan bound by functools.partial), else one
        Python frame (the C call without ctypes' argument conversion). None where the plan needs
        _run."""
        import torch
        headers, tensors, infos, ws_bytes, outs, allocate, finish, scalars, data_type, out_data_type = plan
        if (self.device != "cpu" or infos is None or ws_bytes or finish or scalars or self.cpu_outputs or
                len(tensors) != len(headers) or [a[0] for a in allocate] != list(range(len(infos)))):
            return None
        raw, handle = self.module.raw_run_into_data()
        check = _capi.check
        data_ptr = torch.Tensor.data_ptr
        specs = [(tuple(int(n) for n in sizes), tuple(int(n) for n in strides), dtype)
                 for _, sizes, strides, dtype in allocate]
        empty = _empty_strided_cpu()
        builtin = _capi.python_function()
        if builtin is not None:
            # No pointer arrays built in Python, no ctypes conversion; `plan` keeps the headers
            # alive.
            fields = (handle.value, ctypes.addressof(headers), ctypes.addressof(outs), empty, tuple(specs), data_ptr,
                      _tensor_data_ptr_function())
            run_builtin = functools.partial(builtin, fields)
            run_builtin.plan = plan
            return run_builtin
        n_in, n_out = len(headers), len(infos)
        no_bytes = ctypes.c_size_t(0)

        def run(full):
            results = [empty(sizes, strides, dtype) for sizes, strides, dtype in specs]
            rc = raw(handle, headers, data_type(*map(data_ptr, full)), n_in, outs,
                     out_data_type(*map(data_ptr, results)), n_out, None, no_bytes, None)
            if rc:
                check(rc)
            return results
        return run

    def _run(self, args, key, plan=None):
        import torch
        headers, tensors, infos, ws_bytes, outs, allocate, finish, scalars, data_type, out_data_type = \
            plan or self._plan(args, key)
        if len(tensors) == len(args):
            data = data_type(*map(torch.Tensor.data_ptr, args))
        else:
            data = data_type()
            for i in tensors:
                data[i] = args[i].data_ptr()
        if infos is None:
            headers = type(headers).from_buffer_copy(headers)
            for i in tensors:
                headers[i].data = data[i]
            return self._run_data_dependent(headers)
        if scalars:  # written by the call: a copy of its own (the plan's is shared by threads)
            outs = type(outs).from_buffer_copy(outs)
        out_data = out_data_type()
        stream = None
        if self.device == "cuda":
            # The raw calls: torch.cuda.current_stream() builds a Stream object (several µs).
            index = torch._C._cuda_getDevice()
            device = self._torch_device.get(index)
            if device is None:
                device = self._torch_device[index] = torch.device("cuda", index)
            stream = torch._C._cuda_getCurrentRawStream(index) or None
        else:
            device = self._torch_device.setdefault("cpu", torch.device("cpu"))
        # The workspace first, then the outputs, from this graph's own pool: the blocks earlier
        # calls freed come back in the same order, so the addresses repeat (at most alternating
        # while the caller keeps the last call's results) and the module replays the CUDA graphs
        # it captured (their key holds the addresses) instead of copying through buffers.
        with self._memory_pool(index) if self.device == "cuda" else _NO_POOL:
            workspace = None
            if ws_bytes and self.device == "cuda":
                workspace = torch.empty(ws_bytes, dtype=torch.uint8, device=device)
            results = [None] * len(infos)
            for i, sizes, strides, dtype in allocate:
                t = torch.empty_strided(sizes, strides, dtype=dtype, device=device)
                results[i] = t
                out_data[i] = t.data_ptr()
        self.module.run_into_data(headers, data, outs, out_data, workspace.data_ptr() if workspace is not None else None,
                                  ws_bytes, stream)
        for i in finish:
            info = infos[i]
            if info.is_scalar or info.ndim < 0:
                kind = self.scalar_kinds[i]
                v = outs[i].scalar
                results[i] = bool(v) if "Bool" in kind or kind == "bool" else int(v) if "Int" in kind or kind == "int" \
                    else v
            elif info.alias_input >= 0 and info.alias_input in self.donated:
                # In a donated input's memory: a tensor of its own on that storage, not a view
                # (whose base would keep the dead input, and count as a holder of the storage
                # when a later step donates this result in turn).
                base = args[info.alias_input]
                results[i] = torch.empty(0, dtype=base.dtype, device=base.device).set_(
                    base.untyped_storage() if hasattr(base, "untyped_storage") else base.storage(),
                    base.storage_offset() + info.offset, list(info.sizes[:info.ndim]), list(info.strides[:info.ndim]))
            elif info.alias_input >= 0 or info.alias_output >= 0:
                base = args[info.alias_input] if info.alias_input >= 0 else results[info.alias_output]
                results[i] = base.as_strided(list(info.sizes[:info.ndim]), list(info.strides[:info.ndim]),
                                             base.storage_offset() + info.offset)
        for i in self.cpu_outputs:
            results[i] = results[i].to("cpu")
        return results

    def _memory_pool(self, index):
        """A context allocating from this graph's torch.cuda.MemPool on device `index`; one that
        changes nothing where PyTorch has no MemPool or CUDA graphs are off (for this partition,
        or TOROID_CUDA_GRAPHS=0: nothing to replay, and a private pool would keep its freed
        blocks from every other allocation)."""
        import torch
        pool = self._pools.get(index, False)
        if pool is False:
            pool = None
            if hasattr(torch.cuda, "MemPool") and hasattr(torch.cuda, "use_mem_pool") and self.cuda_graphs and \
                    env_flag("TOROID_CUDA_GRAPHS", True):
                pool = torch.cuda.MemPool()
            self._pools[index] = pool
        return torch.cuda.use_mem_pool(pool, index) if pool is not None else _NO_POOL

    def _scalar(self, i, v):
        kind = self.scalar_kinds[i]
        return bool(v) if "Bool" in kind or kind == "bool" else int(v) if "Int" in kind or kind == "int" else v

    def _run_data_dependent(self, headers):
        """A run whose output sizes depend on data: toroid allocates the outputs; each is copied
        into a torch tensor (views of one storage stay views) and released."""
        import torch
        stream = (torch.cuda.current_stream().cuda_stream or None) if self.device == "cuda" else None
        outs = self.module.run(headers, stream)
        results, storages = [], {}
        try:
            for i in range(len(outs)):
                t = outs[i]
                if t.ndim < 0:
                    results.append(self._scalar(i, t.scalar))
                    continue
                results.append(_copy_out(t, self.device, storages))
        finally:
            for i in range(len(outs)):
                self.module.release(outs[i])
        for i in self.cpu_outputs:
            results[i] = results[i].to("cpu")
        return results


def _copy_out(t, device, storages):
    """A torch tensor with the contents and layout of toroid output header `t` (memory toroid
    owns until released): its storage span copied once per storage."""
    import ctypes
    import torch
    dtype = _torch_dtype(t.dtype)
    sizes = [t.sizes[d] for d in range(t.ndim)]
    strides = [t.strides[d] for d in range(t.ndim)]
    esize = torch.empty((), dtype=dtype).element_size()
    extent = 0 if 0 in sizes else t.offset + 1 + sum((s - 1) * st for s, st in zip(sizes, strides))
    base = t.data or 0  # the storage's start: elements are at offset + sum(i * stride)
    buf = storages.get(base)
    if buf is None or buf.numel() < extent:
        dev = torch.device("cuda", torch.cuda.current_device()) if device == "cuda" else torch.device("cpu")
        buf = torch.empty(max(extent, 1), dtype=torch.uint8 if dtype == torch.bool else dtype, device=dev)
        if extent and base:
            nbytes = extent * esize
            if device == "cuda":
                src = torch.as_tensor(_RawCuda(base, nbytes), device=dev)
                buf.view(torch.uint8)[:nbytes].copy_(src)
            else:
                ctypes.memmove(buf.data_ptr(), base, nbytes)
        storages[base] = buf
    if dtype == torch.bool:
        buf = buf.view(torch.bool)
    return buf.as_strided(sizes, strides, t.offset)


class _RawCuda:
    """`nbytes` bytes of device memory at `ptr`, as a uint8 array torch can read."""

    def __init__(self, ptr, nbytes):
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "strides": None, "version": 2,
                                         "data": (ptr, False)}


# Why a node computing a symbolic scalar (sym_size, SymInt arithmetic) runs in Python: it is
# cheap there, and partitions use its expression instead of its value.
_SYMBOLIC = "a symbolic scalar"
# item() compiles: its value binds an unbacked symbol in the partition. The asserts on such
# values (they return None) compile too.
_ITEM = "aten._local_scalar_dense.default"
_ASSERTS = ("aten._assert_scalar.default", "aten.sym_constrain_range.default",
            "aten.sym_constrain_range_for_size.default")


def _plain_symbol(v):
    """Whether v is a SymInt/SymFloat whose expression is one symbol (an item()'s u0)."""
    if not is_symbolic(v):
        return False
    try:
        return bool(sym_expr(v)[0].is_Symbol)
    except Unsupported:
        return False


def _inductor_emulates_precision_casts():
    """torch._inductor.config.emulate_precision_casts, False where torch has no such setting."""
    try:
        from torch._inductor import config as inductor_config
    except ImportError:
        return False
    return bool(getattr(inductor_config, "emulate_precision_casts", False))


def _is_cpu_scalar(v):
    return getattr(v, "device", None) is not None and v.device.type == "cpu" and getattr(v, "dim", lambda: -1)() == 0


def _supported(n, values, device):
    """None when toroid may compile node n for `device`, else why not."""
    if n.op != "call_function":
        return None
    op = op_name(n.target)
    if is_symbolic(values.get(n)) and op != _ITEM:
        return _SYMBOLIC
    if n.target is operator.getitem or hop_name(n.target):
        return None  # control flow: its subgraphs must emit, or the partition's compile names it
    if user_kernel_kind(n.target):
        return None if device == "cuda" else "user kernels run on CUDA devices only"
    if op is None:
        return "not an ATen op"
    if not _capi.op_supported(op):
        return "not in toroid's operator registry"
    if not _capi.op_supported(op, device):
        return "no %s kernel in toroid (only the reference kernel)" % device
    outside = _outside_input(n, values)
    if outside:
        return outside
    v = values.get(n)
    for r in (v if isinstance(v, (tuple, list)) else [v]):
        if hasattr(r, "dtype"):
            try:
                tir_dtype(r.dtype)
            except Unsupported as e:
                return str(e)
        elif not isinstance(r, (int, float, bool)) and not is_symbolic(r) and not (r is None and op in _ASSERTS) \
                and not (r is None and isinstance(v, (tuple, list))):  # an undefined result (output_mask)
            return "a result of type %s" % type(r).__name__
    return None


def _span(t):
    """[first, last] storage element a tensor or fake reaches; None when it has no elements."""
    if t.numel() == 0:
        return None
    first = t.storage_offset()
    return first, first + sum((s - 1) * st for s, st in zip(t.shape, t.stride()))


def _outside_input(n, values):
    """Why an as_strided view reaches storage outside its input's own elements (PyTorch allows
    it within the storage; toroid sees an input as its elements only), else None."""
    if op_name(n.target) != "aten.as_strided.default" or not n.args:
        return None
    src, out = values.get(n.args[0]), values.get(n)
    try:
        have, want = _span(src), _span(out)
        if want is None or (have is not None and have[0] <= want[0] and want[1] <= have[1]):
            return None
    except Exception:  # symbolic sizes that cannot be decided
        pass
    return "as_strided reaches storage outside its input's elements"


def _describe(n):
    return op_name(n.target) or getattr(n.target, "__name__", str(n.target))


# A graph whose caller gives up its inputs (free_inputs: AOTAutograd's backward, whose inputs are
# the saved activations) is compiled in up to SEGMENTS partitions, cut where the inputs that die
# since the last cut hold an equal share of its input bytes (at least SEGMENT_MIN_BYTES): each
# input is freed after the partition that reads it last, and each partition allocates its own
# outputs (gradients) and scratch, so that a step never holds all of them at once. More
# segments hold less at once (a segment's inputs live until it returns) but fuse less and cost a
# partition call each: TOROID_BACKWARD_SEGMENTS sets the count.
SEGMENTS = 8
SEGMENT_MIN_BYTES = 16 << 20


def _nbytes(v):
    """A tensor's bytes; 0 for anything else, and for symbolic sizes (int() of a SymInt would
    specialize it, adding a guard)."""
    try:
        n = v.numel()
        return n * v.element_size() if isinstance(n, int) else 0
    except Exception:  # not a tensor
        return 0


def _writes_first(node, a):
    """Whether `node` is an in-place op (or copy_) whose first argument is `a`."""
    name = getattr(getattr(node.target, "_schema", None), "name", "") or ""
    return bool(node.args) and node.args[0] is a and name.endswith("_")


_exclusive_base = None
_exclusive_view = None


def _can_check_exclusive():
    """Whether this torch tells how many tensors share a tensor's memory (torch 2: a tensor's
    use count and its storage's); without, no input is donated."""
    import torch
    return hasattr(torch.Tensor, "_use_count") and hasattr(torch._C, "_storage_Use_Count") and \
        hasattr(torch.Tensor, "untyped_storage")


def _holders(x):
    """Python references to `x`, C++ references to its tensor, and tensors on its storage."""
    import sys
    import torch
    return sys.getrefcount(x), x._use_count(), torch._C._storage_Use_Count(x.untyped_storage()._cdata)


def _referrers(x, held):
    """What else refers to `x` in Python, for a debug line: frames by function and line,
    containers by type and length."""
    import gc
    import types
    out = []
    for r in gc.get_referrers(x):
        if r is held:
            continue
        if isinstance(r, types.FrameType):
            out.append("frame %s (%s:%d)" % (r.f_code.co_name, r.f_code.co_filename.rsplit("/", 1)[-1], r.f_lineno))
        elif isinstance(r, (list, tuple, dict, set)):
            out.append("%s of %d" % (type(r).__name__, len(r)))
        else:
            out.append(type(r).__name__)
    return "[%s]" % ", ".join(out)


_data_ptr_function = None


def _tensor_data_ptr_function():
    """The address of torch's C function from a tensor (PyObject*) to its data pointer (what
    Inductor's CPU kernels' Python bindings call), checked once on a probe tensor; 0 where
    this torch has none (the builtin lean run then calls torch.Tensor.data_ptr)."""
    global _data_ptr_function
    if _data_ptr_function is None:
        _data_ptr_function = 0
        try:
            import torch
            addr = torch._C._dynamo.guards._torchinductor_pyobject_tensor_data_ptr
            probe = torch.empty(3)
            if isinstance(addr, int) and addr and \
                    ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object)(addr)(probe) == probe.data_ptr():
                _data_ptr_function = addr
        except (ImportError, AttributeError, TypeError):
            pass
    return _data_ptr_function


@functools.lru_cache(maxsize=None)
def _empty_strided_cpu():
    """f(sizes, strides, dtype): an uninitialized CPU tensor. torch 2's dynamo ships one that
    skips the dispatcher (what Inductor's CPU wrappers call, ~2 µs less a tensor); else
    torch.empty_strided. Found (and probed) once per process."""
    import torch
    try:
        from torch._C._dynamo.guards import _empty_strided_cpu as fast
        probe = fast((2, 3), (1, 2), torch.bfloat16)  # the signature Inductor calls, checked once
        if probe.shape == (2, 3) and probe.stride() == (1, 2) and probe.dtype == torch.bfloat16 and not probe.is_cuda:
            return fast
    except (ImportError, TypeError, RuntimeError):
        pass
    cpu = torch.device("cpu")
    return lambda sizes, strides, dtype: torch.empty_strided(sizes, strides, dtype=dtype, device=cpu)


def _view_holders(x):
    """_holders of view `x`, then its base's Python references and C++ uses."""
    import sys
    base = x._base
    return _holders(x) + (sys.getrefcount(base), base._use_count())


def _exclusive(held, i):
    """Whether held[i] (a list holds it) is held by nothing else: no other Python reference, no
    C++ one (autograd's saved tensors under retain_graph, another graph's), no other tensor on
    its storage. Compared with a fresh tensor in a list, measured once the same way (the counts
    differ between Python and torch builds). A view (a backward's saved activations often are)
    passes when its base is held by the view alone, compared with a fresh view of a fresh tensor."""
    import torch
    global _exclusive_base, _exclusive_view
    try:
        if _exclusive_base is None:
            fresh = [torch.empty(1)]
            _exclusive_base = _holders(fresh[0])
        if all(n <= b for n, b in zip(_holders(held[i]), _exclusive_base)):
            return True
        if not held[i]._is_view():
            return False
        if _exclusive_view is None:
            fresh = [torch.empty(2)[:1]]
            _exclusive_view = _view_holders(fresh[0])
        return all(n <= b for n, b in zip(_view_holders(held[i]), _exclusive_view))
    except (AttributeError, RuntimeError, TypeError):
        return False


class CompiledGraph:
    """A callable over an FX GraphModule: toroid partitions and eager nodes, in graph order."""

    def __init__(self, gm, example_inputs=None, device=None, dynamic=True, dump_dir=None, name="graph",
                 free_inputs=False, donated_inputs=()):
        import torch
        _capi.lib()  # a missing or mismatched library is an error here, not a fallback per node
        expand_foreach(gm)
        for line in fuse_attention_calls(gm):
            log.info("toroid: fused attention left to PyTorch: %s", line)
        self.gm = gm
        self.values = node_values(gm, example_inputs)
        self.attrs = get_attrs(gm)
        self.placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        self.output = next(n for n in gm.graph.nodes if n.op == "output")
        if device is None:
            devs = {v.device.type for v in self.values.values() if isinstance(v, torch.Tensor)}
            device = "cuda" if "cuda" in devs else "cpu"
        self.device, self.dynamic, self.dump_dir, self.name = device, dynamic, dump_dir, name
        self.free_inputs = free_inputs
        self.donated_placeholders = {self.placeholders[i] for i in donated_inputs} if free_inputs else set()
        self._segment_graphs = True  # False while a backward's segments compile (_compile_run)
        self._position = {n: i for i, n in enumerate(gm.graph.nodes)}
        self.fallbacks = []  # (node name, op, reason)
        self.eager = {}  # node -> why it runs in eager
        for n in gm.graph.nodes:
            why = _supported(n, self.values, self.device)
            if why and n not in self.eager:
                self._fall_back(n, why)
        self.steps = self._build()
        self._get_attrs = None  # the get_attr nodes, found on the first call
        self._fast = None  # _single_partition's answer, found on the first call
        self._direct = None  # _direct_call's answer, found on the first one-partition call
        self._drops = None  # by step: the tensors no later step reads (_drop_plan), found on the first call

    def _fall_back(self, node, why):
        """Runs `node` in eager, with the getitems of its results (logged once per node)."""
        self.eager[node] = why
        if node.target is operator.getitem or why == _SYMBOLIC:
            return
        self.fallbacks.append((node.name, _describe(node), why))
        log.warning("toroid: %s (%s) falls back to eager PyTorch: %s", _describe(node), node.name, why)
        for u in node.users:
            if u.op == "call_function" and u.target is operator.getitem:
                self.eager[u] = "its producer runs in eager"

    def _build(self):
        """Steps in order: ("eager", node) and ("toroid", Partition)."""
        steps, run, deferred = [], [], []
        for n in [n for n in self.gm.graph.nodes if n.op == "call_function"] + [None]:
            if n is not None and n not in self.eager:
                run.append(n)
                continue
            if n is not None and self._deferrable(n):
                deferred.append(n)  # partitions read its expression; Python computes it after
                continue
            self._compile_run(run, steps)
            run = []
            steps += [("eager", d) for d in deferred]
            deferred = []
            if n is not None:
                steps.append(("eager", n))
        return steps

    def _deferrable(self, n):
        """A symbolic scalar that is an expression (u0 >= 0, 2*s0), not a plain symbol: no
        partition needs its value (they write the expression), so it need not end a run."""
        if self.eager.get(n) != _SYMBOLIC:
            return False
        try:
            return not sym_expr(self.values[n])[0].is_Symbol
        except Unsupported:
            return False

    def _compile_run(self, run, steps, split=True):
        """Appends the steps of `run` (compilable nodes in order): one partition (or one per
        segment, _segments), or, when its compile fails at a node, the nodes before it (the same
        way), that node (and its getitems) in eager, then the rest (the same way)."""
        if not run:  # between two eager nodes, or before the first
            return
        if split and self.free_inputs:
            pieces = self._segments(run)
            if len(pieces) > 1:
                # Without CUDA graphs: a segment's inputs move between steps (they are freed and
                # allocated again as the step goes), and pooled graphs would hold copies of them.
                self._segment_graphs = False
                try:
                    for piece in pieces:
                        self._compile_run(piece, steps, split=False)
                finally:
                    self._segment_graphs = True
                return
        while run:
            part, failed = self._partition(run, len(steps))
            if part is not None:
                steps.append(("toroid", part))
                return
            node, why = failed
            self._fall_back(node, why)
            i = run.index(node)
            self._compile_run(run[:i], steps, split=False)
            steps += [("eager", m) for m in run[i:] if m in self.eager]
            run = [m for m in run[i + 1:] if m not in self.eager]

    def _segments(self, run):
        """`run` in pieces, cut after the nodes where the inputs that died since the last cut
        (read by no later node of the run, nor after it) reach 1/SEGMENTS (TOROID_BACKWARD_SEGMENTS)
        of the run's input bytes
        and at least SEGMENT_MIN_BYTES; [run] when its inputs hold less than twice that."""
        inside = set(run)
        end = self._position[run[-1]]
        last = {}
        for i, n in enumerate(run):
            for a in n.all_input_nodes:
                if a not in inside:
                    last[a] = i
        dying = [0] * len(run)
        for a, i in last.items():
            if all(self._position[u] <= end for u in a.users):
                dying[i] += _nbytes(self.values.get(a))
        total = sum(dying)
        if total < 2 * SEGMENT_MIN_BYTES:
            return [run]
        target = max(total // _capi.env_count("TOROID_BACKWARD_SEGMENTS", SEGMENTS), SEGMENT_MIN_BYTES)
        pieces, start, gone = [], 0, 0
        for i, b in enumerate(dying):
            gone += b
            # Never between a multi-result call and its getitems: a piece cannot return a tuple.
            if gone >= target and i + 1 < len(run) and run[i + 1].target is not operator.getitem:
                pieces.append(run[start:i + 1])
                start, gone = i + 1, 0
        pieces.append(run[start:])
        log.info("toroid: %s in %d partitions (inputs of %.1f MiB freed as they die)", self.name, len(pieces),
                 total / 2 ** 20)
        return pieces

    def _drop_plan(self):
        """By step: the tensors (inputs, results of earlier steps) it reads last, and that are no
        output of the graph: the call lets go of them after that step."""
        import torch
        from torch.fx.node import map_arg
        keep = set()
        map_arg(self.output.args[0], keep.add)
        last = {}
        for i, (kind, s) in enumerate(self.steps):
            for a in (s.all_input_nodes if kind == "eager" else s.inputs):
                last[a] = i
        drops = [[] for _ in self.steps]
        for a, i in last.items():
            if a not in keep and a.op != "get_attr" and isinstance(self.values.get(a), torch.Tensor):
                drops[i].append(a)
        return drops

    def _symbol_sources(self, first):
        """sympy symbol -> a node before `first` whose value is exactly that symbol (a SymInt
        placeholder, sym_size): what a partition passes for a symbol no tensor input binds."""
        out = {}
        for n in self.gm.graph.nodes:
            if n is first:
                break
            v = self.values.get(n)
            if is_symbolic(v):
                e = sym_expr(v)[0]
                if e.is_Symbol:
                    out.setdefault(e, n)
        return out

    def _partition(self, run, index):
        """(Partition, None), or (None, (node to drop, reason))."""
        inside = set(run)
        boundary, seen = [], set()
        attrs = []
        for n in run:
            for a in n.all_input_nodes:
                if a in inside or a in seen or (a.op != "placeholder" and is_symbolic(self.values.get(a))):
                    continue
                seen.add(a)
                (attrs if a.op == "get_attr" else boundary).append(a)
        # Plain symbolic values (an item()) are returned too: a later partition or Python's
        # symbolic arithmetic may read the symbol.
        outputs = [n for n in run if any(u not in inside for u in n.users) or _plain_symbol(self.values.get(n))]
        for n in outputs:
            if isinstance(self.values.get(n), (tuple, list)):
                return None, (n, "a multi-result op whose results are used as a tuple")
        # An output may come back in a donated input's memory (the program writes that input where
        # it is), which CUDA graphs would capture per address: donation goes with segments, which
        # run without them.
        donated = self._donatable(run, boundary) if self.device != "cuda" or not self._segment_graphs else set()
        try:
            e = emit_nodes(attrs + run, outputs, self.values, self.attrs, "%s_p%d" % (self.name, index), boundary,
                           self.device, self._symbol_sources(run[0]), donated)
        except Unsupported as err:
            bad = next((n for n in run if str(n.name) in str(err)), run[0])
            return None, (bad, str(err))
        try:
            return Partition(e, outputs, self.attrs, self.values, self.device, self.dynamic, self.dump_dir,
                             "%s_p%d.tir" % (self.name, index), self._segment_graphs), None
        except _capi.ToroidError as err:
            m = re.search(r":(\d+):\d+: error", str(err))
            node = e.node_at_line.get(int(m.group(1))) if m else None
            if node is None or node not in run:
                node = run[0] if len(run) == 1 else None
            if node is None:
                # No location: compile one node at a time to find the culprit.
                for n in run:
                    part, failed = self._partition([n], index)
                    if part is None:
                        return None, failed
                return None, (run[0], str(err))
            return None, (node, str(err).splitlines()[0])

    def _donatable(self, run, boundary):
        """The inputs of `run` whose memory its partition may reuse (`input donated`): where the
        caller gives up its inputs (free_inputs), the tensors no node outside the run reads
        (nor the graph's output) and none of the run writes, that are the graph's donated inputs
        (AOTAutograd's bw_donated_idxs: saved activations, not parameters or the user's tensors)
        or tensors an earlier step computed (not views, which share their base's memory). Empty
        where torch cannot tell at call time that nothing else holds a tensor (_exclusive), or
        with TOROID_DONATE_INPUTS=0."""
        import torch
        if not self.free_inputs or not _can_check_exclusive() or not env_flag("TOROID_DONATE_INPUTS", True):
            return set()
        inside = set(run)
        out = set()
        for a in boundary:
            v = self.values.get(a)
            if not isinstance(v, torch.Tensor) or not all(u in inside for u in a.users):
                continue
            if a.op == "placeholder" and a not in self.donated_placeholders:
                continue
            if a.op != "placeholder" and (a.op == "get_attr" or getattr(v, "_base", None) is not None):
                continue
            if any(_writes_first(u, a) for u in a.users):
                continue
            out.add(a)
        return out

    def _single_partition(self):
        """(partition, positions of its inputs among the placeholders, the outputs' positions in the
        partition's outputs, the function that rebuilds the output structure) when the graph is one
        partition over placeholders that returns only its outputs and constants; else False."""
        import torch
        if len(self.steps) != 1 or self.steps[0][0] != "toroid" or any(
                n.op == "get_attr" for n in self.gm.graph.nodes):
            return False
        part = self.steps[0][1]
        if any(n not in self.placeholders for n in part.inputs):
            return False
        flat, rebuild = flatten_outputs(self.output.args[0])
        if any(isinstance(x, torch.fx.Node) and x not in part.outputs for x in flat):
            return False
        # Each output: its position among the partition's, or a constant (a backward's None
        # for an input that needs no gradient) in a list of its own. None for either list where
        # it is the identity (the call passes the list as it is).
        outputs = [part.outputs.index(x) if isinstance(x, torch.fx.Node) else [x] for x in flat]
        inputs = [self.placeholders.index(n) for n in part.inputs]
        return (part, None if inputs == list(range(len(self.placeholders))) else inputs,
                None if outputs == list(range(len(part.outputs))) else outputs, rebuild)

    def _direct_call(self):
        """For a one-partition graph whose partition takes the inputs and gives the outputs as
        they are (no donation, no parameters): a function of the argument list that runs the
        partition's lean function behind its C++ guard, or returns None (a signature the guard
        does not hold, a guard not yet made) for call_list to take the call. A repeated boxed
        call then skips call_list's and the partition's frames (~2.5 µs of a 1 MB CPU add's
        ~45: bench/RESULTS.md 32c). False where the graph needs more."""
        import torch
        part, inputs, outputs, rebuild = self._fast
        if part.device != "cpu" or inputs is not None or outputs is not None or part.donated or part.params:
            return False
        grad_enabled, set_grad_enabled = torch.is_grad_enabled, torch._C._set_grad_enabled

        def direct(args):
            guard = part._guard
            if guard is None or guard[3] is None or not guard[0](*args):
                return None
            if grad_enabled():
                set_grad_enabled(False)
                try:
                    outs = guard[3](args)
                finally:
                    set_grad_enabled(True)
            else:
                outs = guard[3](args)
            args.clear()
            return rebuild(outs)
        return direct

    def __call__(self, *args):
        return self.call_list(list(args))

    def call_list(self, args):
        """The call on a list of the inputs, which it takes over (and empties): an input no later
        step reads is let go of as the call goes (boxed, below)."""
        import torch  # a lookup in sys.modules; the fx import below costs a µs, so it waits
        if len(args) != len(self.placeholders):
            raise TypeError("%s takes %d inputs, got %d" % (self.name, len(self.placeholders), len(args)))
        if self._fast is None:
            self._fast = self._single_partition()
        if self._fast:
            if self._direct is None:
                self._direct = self._direct_call()
            part, inputs, outputs, rebuild = self._fast
            if inputs is not None:
                picked = [args[i] for i in inputs]
                args.clear()  # the partition's list holds the inputs alone (donated inputs)
                args = picked
            if torch.is_grad_enabled():
                torch._C._set_grad_enabled(False)
                try:
                    outs = part(args)
                finally:
                    torch._C._set_grad_enabled(True)
            else:
                outs = part(args)
            return rebuild(outs if outputs is None else [i[0] if type(i) is list else outs[i] for i in outputs])
        from torch.fx.node import map_arg
        env = dict(zip(self.placeholders, args))
        args.clear()
        if self._drops is None:
            self._drops = self._drop_plan()
        if self._get_attrs is None:
            self._get_attrs = [n for n in self.gm.graph.nodes if n.op == "get_attr"]
        for n in self._get_attrs:
            env[n] = self.attrs[n.target]

        def fetch(x):
            # A deferred symbolic expression (u0 >= 0) runs after its run's partition; a node of
            # that run that fell back to eager (an assert) reads it earlier, so it is computed here.
            if x not in env and x.op == "call_function" and self.eager.get(x) == _SYMBOLIC:
                env[x] = x.target(*map_arg(x.args, fetch), **map_arg(x.kwargs, fetch))
            return env[x]
        try:
            for (kind, s), drops in zip(self.steps, self._drops):
                if kind == "eager":
                    env[s] = s.target(*map_arg(s.args, fetch), **map_arg(s.kwargs, fetch))
                else:
                    # Inputs the partition may reuse leave env first: its list holds them alone.
                    ins = [env.pop(n) if i in s.donated else env[n] for i, n in enumerate(s.inputs)] \
                        if s.donated else [env[n] for n in s.inputs]
                    with torch.no_grad():
                        outs = s(ins)
                    ins = None
                    env.update(zip(s.outputs, outs))  # no loop variable left holding the last one
                    outs = None
                for n in drops:
                    env.pop(n, None)
            flat, rebuild = flatten_outputs(self.output.args[0])
            return rebuild([env[x] if isinstance(x, torch.fx.Node) else x for x in flat])
        finally:
            # fetch refers to itself (a reference cycle through its closure, holding env and so
            # every tensor of the call until the cycle collector runs): broken here.
            fetch = None  # noqa: F841


def compile_graph(gm: "torch.fx.GraphModule", example_inputs: Optional[Sequence[Any]] = None, device: Optional[str] = None,
                  dynamic: bool = True, dump_dir: Optional[str] = None, name: str = "graph",
                  free_inputs: bool = False, donated_inputs: Sequence[int] = ()) -> CompiledGraph:
    """A callable running `gm` (an FX GraphModule of ATen ops) with toroid; see CompiledGraph.
    free_inputs: the caller keeps no reference to the inputs (boxed calls of AOTAutograd's
    backward): the graph runs in segments that let each input go after its last use.
    donated_inputs: with free_inputs, the positions of inputs whose memory the program may reuse
    after their last use (AOTAutograd's bw_donated_idxs), where a call finds nothing else holds
    them."""
    return CompiledGraph(gm, example_inputs, device, dynamic, dump_dir, name, free_inputs, donated_inputs)


def boxed(compiled):
    """AOTAutograd's boxed calling convention: one list argument, which the callee clears so
    that inputs it no longer needs can be freed early."""
    def call(args):
        direct = compiled._direct
        if direct:
            results = direct(args)
            if results is not None:
                return results
        a = list(args)
        args.clear()
        return compiled.call_list(a)
    call._boxed_call = True
    call.compiled = compiled
    return call
