"""ctypes bindings of toroid's C ABI (include/toroid/c_api.h), with no torch dependency.

The library is found through $TOROID_LIBRARY (a path to libtoroid.so), else next to this
package (a wheel built with the library bundles it), else in a build directory of the source
tree (build/, build/src/capi/), else installed: under this Python's prefix or /usr/local (where
`cmake --install` puts it), else wherever the dynamic linker finds libtoroid.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
from typing import Any, Optional

ABI_VERSION = 2
MAX_DIMS = 16

# toroid_dtype codes, in the header's order.
DTYPE_NAMES = ["bool", "u8", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64", "c64", "c128"]


class ToroidError(RuntimeError):
    """A toroid call failed; the message is toroid_last_error()."""


class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("sizes", ctypes.c_int64 * MAX_DIMS), ("strides", ctypes.c_int64 * MAX_DIMS),
                ("offset", ctypes.c_int64), ("scalar", ctypes.c_double), ("owner", ctypes.c_void_p)]


class CompileOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("device", ctypes.c_char_p), ("dynamic", ctypes.c_int32),
                ("dump_dir", ctypes.c_char_p), ("reference_kernels", ctypes.c_int32),
                ("deterministic", ctypes.c_int32), ("cuda_graphs", ctypes.c_int32),
                ("tf32_convolutions", ctypes.c_int32), ("tf32_matmuls", ctypes.c_int32),
                ("emulate_precision_casts", ctypes.c_int32)]


class DeviceMemory(ctypes.Structure):
    _fields_ = [("lent_bytes", ctypes.c_int64), ("peak_lent_bytes", ctypes.c_int64), ("cached_bytes", ctypes.c_int64),
                ("fresh_blocks", ctypes.c_int64), ("reused_blocks", ctypes.c_int64)]


class OutputInfo(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("sizes", ctypes.c_int64 * MAX_DIMS), ("strides", ctypes.c_int64 * MAX_DIMS),
                ("offset", ctypes.c_int64), ("alias_input", ctypes.c_int32), ("alias_output", ctypes.c_int32),
                ("is_scalar", ctypes.c_int32), ("reserved", ctypes.c_int32)]


def env_flag(name: str, default: bool) -> bool:
    """A toroid environment variable that is 0 or 1 (unset or empty: `default`); anything else
    is a ToroidError naming it, as the library's own variables are (docs/environment.md)."""
    v = os.environ.get(name, "")
    if v in ("0", "1"):
        return v == "1"
    if v == "":
        return default
    raise ToroidError("%s=%r: 0 (off) or 1 (on)" % (name, v))


def env_count(name: str, default: int) -> int:
    """A toroid environment variable that is a positive integer (unset or empty: `default`);
    anything else is a ToroidError naming it."""
    v = os.environ.get(name, "")
    if v == "":
        return default
    if v.isdigit() and int(v) > 0:
        return int(v)
    raise ToroidError("%s=%r: a positive integer" % (name, v))


def _candidates():
    env = os.environ.get("TOROID_LIBRARY")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    out = [os.path.join(here, "libtoroid.so")]
    for build in ("build", "build-release", "build-debug"):
        out += [os.path.join(root, build, "libtoroid.so"), os.path.join(root, build, "src", "capi", "libtoroid.so")]
    for prefix in (sys.prefix, "/usr/local"):
        out += [os.path.join(prefix, lib, "libtoroid.so") for lib in ("lib", "lib64")]
    found = ctypes.util.find_library("toroid")  # a name (libtoroid.so.0.2): the linker resolves it
    if found:
        out.append(found)
    return out


_lib = None


def lib():
    """The loaded libtoroid.so with its function types declared (loaded once)."""
    global _lib
    if _lib is not None:
        return _lib
    tried = _candidates()
    path = next((p for p in tried if os.path.exists(p) or os.sep not in p), None)
    if path is None:
        raise ToroidError("libtoroid.so not found; set TOROID_LIBRARY to its path (looked in: " + ", ".join(tried) + ")")
    L = ctypes.CDLL(path)
    vp, cp, i, P = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER
    sigs = {
        "toroid_last_error": ([], cp), "toroid_version": ([], cp), "toroid_abi_version": ([], i),
        "toroid_cuda_available": ([], i), "toroid_op_supported": ([cp], i),
        "toroid_op_supported_on": ([cp, cp], i), "toroid_check_errors": ([vp], i),
        "toroid_compile_with_options": ([cp, cp, P(CompileOptions), P(vp)], i),
        "toroid_module_free": ([vp], None), "toroid_num_inputs": ([vp], i), "toroid_num_outputs": ([vp], i),
        "toroid_get_output_info": ([vp, P(Tensor), i, P(OutputInfo), i, P(ctypes.c_size_t)], i),
        "toroid_run_into": ([vp, P(Tensor), i, P(Tensor), i, vp, ctypes.c_size_t, vp], i),
        "toroid_run_into_data": ([vp, P(Tensor), vp, i, P(Tensor), vp, i, vp, ctypes.c_size_t, vp], i),
        "toroid_run": ([vp, P(Tensor), i, P(Tensor), i, vp], i), "toroid_tensor_release": ([P(Tensor)], None),
        "toroid_compile_ms": ([vp], ctypes.c_double), "toroid_num_specializations": ([vp], i),
        "toroid_analyze_kernel": ([cp, cp, i, P(cp)], i),
        "toroid_device_memory_stats": ([P(DeviceMemory), i], i),
        "toroid_package_write": ([cp, cp, P(CompileOptions), P(Tensor), i, cp], i),
    }
    sigs["toroid_python_call_available"] = ([], i)
    optional = {"toroid_analyze_kernel", "toroid_device_memory_stats", "toroid_package_write",
                "toroid_python_call_available"}  # newer than some libraries of this ABI version
    for name, (args, res) in sigs.items():
        try:
            fn = getattr(L, name)
        except AttributeError:
            if name in optional:
                continue
            raise ToroidError("%s lacks %s: rebuild it from the same sources as this package" % (path, name))
        fn.argtypes, fn.restype = args, res
    if L.toroid_abi_version() != ABI_VERSION:
        raise ToroidError("%s has ABI version %d, this package needs %d" % (path, L.toroid_abi_version(), ABI_VERSION))
    _lib = L
    return L


_python_function = False  # not looked for yet


def python_function():
    """libtoroid's lean run as a builtin function of this CPython: fn(plan, inputs) -> the list of
    outputs (toroid_python_function; a library error raises ToroidError). None where the library
    lacks it, finds no CPython API in this process, or TOROID_PYTHON_CALL=0 (docs/environment.md).
    runtime.Partition's lean run uses it."""
    global _python_function
    if _python_function is False:
        _python_function = None
        L = lib()
        if env_flag("TOROID_PYTHON_CALL", True) and hasattr(L, "toroid_python_function") and \
                L.toroid_python_call_available():
            make = ctypes.PyDLL(L._name, handle=L._handle)["toroid_python_function"]
            make.argtypes, make.restype = [ctypes.py_object], ctypes.py_object
            _python_function = make(ToroidError)
    return _python_function


def check(rc):
    if rc != 0:
        raise ToroidError(lib().toroid_last_error().decode(errors="replace"))


_supported = {}


def analyze_kernel(text: str, kind: str = "cuda", arch: int = 90) -> list[dict[str, Any]]:
    """Which parameters each kernel of a user kernel's IR writes and reads: `kind` "cuda" (CUDA
    C++ source, compiled to PTX with NVRTC), "ptx" or "ttir" (Triton's). A list with one dict per
    kernel: {"kernel", "params": [{"name", "type", "written", "read"}], "notes"} (notes: where the
    analysis was conservative). docs/user_kernels.md says what is analysed."""
    import json
    if not hasattr(lib(), "toroid_analyze_kernel"):
        raise ToroidError("this libtoroid predates toroid_analyze_kernel: rebuild it")
    out = ctypes.c_char_p()
    check(lib().toroid_analyze_kernel(text.encode(), kind.encode(), arch, ctypes.byref(out)))
    return json.loads(out.value.decode())


def device_memory(reset_peak: bool = False) -> dict[str, int]:
    """The device memory toroid's own caching allocator lends (CUDA runs' intermediates without a
    workspace, CUDA graphs' static buffers), which torch.cuda's statistics do not include: a dict
    of lent_bytes, peak_lent_bytes (since the last reset), cached_bytes, fresh_blocks and
    reused_blocks (counts since the process started). reset_peak=True restarts the peak after
    reading it."""
    if not hasattr(lib(), "toroid_device_memory_stats"):
        raise ToroidError("this libtoroid predates toroid_device_memory_stats: rebuild it")
    m = DeviceMemory()
    check(lib().toroid_device_memory_stats(ctypes.byref(m), 1 if reset_peak else 0))
    return {name: getattr(m, name) for name, _ in DeviceMemory._fields_}


def op_supported(name: str, device: Optional[str] = None) -> bool:
    """Whether toroid's operator registry has the ATen overload `name` ("aten.add.Tensor"); with
    a `device` ("cpu", "cuda"), whether it compiles for it: only ops that become generated code or
    a library call for some dtype (not ones that would only run their reference kernel, which
    PyTorch runs faster)."""
    key = (name, device)
    if key not in _supported:
        r = lib().toroid_op_supported(name.encode()) if device is None else \
            lib().toroid_op_supported_on(name.encode(), device.encode())
        if r < 0:
            raise ToroidError(lib().toroid_last_error().decode())
        _supported[key] = bool(r)
    return _supported[key]


def write_package(text, path, params, device="cpu", dynamic=False, filename="<python>", tf32_convolutions=False,
                  tf32_matmuls=False):
    """toroid_package_write: `params` are toroid_tensor headers of host tensors, in the order of
    the graph's param nodes."""
    L = lib()
    if not hasattr(L, "toroid_package_write"):
        raise ToroidError("this libtoroid.so predates AOT packages: rebuild it")
    o = CompileOptions(ctypes.sizeof(CompileOptions), device.encode(), 1 if dynamic else 0, None, 1, 0, 1,
                       1 if tf32_convolutions else 0, 1 if tf32_matmuls else 0)
    arr = (Tensor * max(len(params), 1))(*params)
    check(L.toroid_package_write(text.encode(), filename.encode(), ctypes.byref(o), arr, len(params), path.encode()))


class Module:
    """A compiled graph: a toroid_module handle, freed with the object."""

    def __init__(self, text, device="cpu", dynamic=True, dump_dir=None, filename="<python>", reference_kernels=True,
                 deterministic=False, cuda_graphs=True, tf32_convolutions=False, tf32_matmuls=False,
                 emulate_precision_casts=False):
        from . import config
        L = lib()
        dump_dir = config.debug_root(dump_dir)
        o = CompileOptions(ctypes.sizeof(CompileOptions), device.encode(), 1 if dynamic else 0,
                           dump_dir.encode() if dump_dir else None, 1 if reference_kernels else 0,
                           1 if deterministic else 0, 1 if cuda_graphs else 0,
                           1 if tf32_convolutions else 0, 1 if tf32_matmuls else 0,
                           1 if emulate_precision_casts else 0)
        h = ctypes.c_void_p()
        check(L.toroid_compile_with_options(text.encode(), filename.encode(), ctypes.byref(o), ctypes.byref(h)))
        self._h = h
        self._raw_run_into_data = None
        self.device = device
        self.num_inputs = L.toroid_num_inputs(h)
        self.num_outputs = L.toroid_num_outputs(h)

    def __del__(self):
        h = getattr(self, "_h", None)
        if h and _lib is not None:
            _lib.toroid_module_free(h)
            self._h = None

    def output_info(self, inputs):
        """OutputInfo per output and the workspace bytes, for an array of Tensor headers."""
        infos = (OutputInfo * self.num_outputs)()
        ws = ctypes.c_size_t()
        check(lib().toroid_get_output_info(self._h, inputs, len(inputs), infos, self.num_outputs, ctypes.byref(ws)))
        return list(infos), ws.value

    def run_into(self, inputs, outputs, workspace=None, workspace_bytes=0, stream=None):
        check(lib().toroid_run_into(self._h, inputs, len(inputs), outputs, len(outputs), workspace, workspace_bytes,
                                    stream))

    def raw_run_into_data(self):
        """(the C function toroid_run_into_data without ctypes' argument conversion, this module's
        handle): for a caller that builds the arguments itself (runtime.Partition's lean run)."""
        raw = self._raw_run_into_data
        if raw is None:
            # Indexing a CDLL gives a function object of its own (attribute access shares one,
            # whose argtypes lib() declared); its arguments go as given.
            raw = self._raw_run_into_data = lib()["toroid_run_into_data"]
            raw.restype = ctypes.c_int
        return raw, self._h

    def run_into_data(self, inputs, input_data, outputs, output_data, workspace=None, workspace_bytes=0, stream=None):
        """run_into with the data pointers in arrays of their own (c_void_p arrays, or None for the
        headers' own): the headers of a repeated call stay as they are. The hot path of every
        call: the C function is called without ctypes' argument conversion (1-2 µs a call on the
        dev machine), so the pointer and size arguments are wrapped here."""
        raw, _ = self.raw_run_into_data()
        if getattr(inputs, "_type_", None) is not Tensor or getattr(outputs, "_type_", None) is not Tensor:
            raise TypeError("run_into_data takes arrays of Tensor headers")
        rc = raw(self._h, inputs, input_data, len(inputs), outputs, output_data, len(outputs),
                 None if workspace is None else ctypes.c_void_p(workspace), ctypes.c_size_t(workspace_bytes),
                 None if stream is None else ctypes.c_void_p(stream))
        if rc:
            check(rc)

    def run(self, inputs, stream=None):
        """Runs with toroid allocating the outputs (for sizes only the run knows: nonzero, item());
        returns the output headers, each to be released with release()."""
        outs = (Tensor * self.num_outputs)()
        check(lib().toroid_run(self._h, inputs, len(inputs), outs, self.num_outputs, stream))
        return outs

    @staticmethod
    def release(t):
        lib().toroid_tensor_release(ctypes.byref(t))

    def check_errors(self):
        """Waits for this module's earlier CUDA runs; raises ToroidError for an out of range
        gather position one of them hit (CUDA runs do not wait to check)."""
        check(lib().toroid_check_errors(self._h))

    @property
    def num_specializations(self):
        return lib().toroid_num_specializations(self._h)

    @property
    def compile_ms(self):
        return lib().toroid_compile_ms(self._h)
