# Runs every integer division op of toroid's lowering on i32 and i64 data with toroidc (on the
# device argv[1] names) and prints one line per case: the error toroidc reports, or the values.
#   divide_by_zero.py cpu|cuda|nvrtc WORKDIR      (nvrtc: compile the CUDA kernels only, no GPU)
# Divisors: a tensor holding one 0, the scalar 0, and -1 under the type's most negative value
# (which wraps, as PyTorch's kernels, instead of trapping).
import os
import struct
import subprocess
import sys

device, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)

OPS = [
    ("floor", "aten.div.Tensor_mode", "aten.div.Scalar_mode", ', rounding_mode="floor"'),
    ("trunc", "aten.div.Tensor_mode", "aten.div.Scalar_mode", ', rounding_mode="trunc"'),
    ("remainder", "aten.remainder.Tensor", "aten.remainder.Scalar", ""),
    ("fmod", "aten.fmod.Tensor", "aten.fmod.Scalar", ""),
]
WIDTH = {"i32": ("<i4", "i", -2**31), "i64": ("<i8", "q", -2**63)}


def write_npy(path, dtype, values):
    descr, code, _ = WIDTH[dtype]
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%d, ), }" % (descr, len(values))
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%d%s" % (len(values), code), *values))


def run(name, dtype, call, divisor):
    graph = os.path.join(work, name + ".tir")
    inputs = "  %x = input : {0}[4]\n".format(dtype)
    if divisor is not None:
        inputs += "  %y = input : {0}[4]\n".format(dtype)
    with open(graph, "w") as f:
        f.write("graph @main functional {\n%s  %%q = %s : %s[4]\n  output %%q\n}\n" % (inputs, call, dtype))
    lowest = WIDTH[dtype][2]
    x = os.path.join(work, name + "-x.npy")
    write_npy(x, dtype, [7, -7, lowest, 5])
    args = ["toroidc", "run", graph, "--input", "x=" + x]
    args += ["--device=cuda", "--compile-only"] if device == "nvrtc" else ["--device=" + device]
    if divisor is not None:
        y = os.path.join(work, name + "-y.npy")
        write_npy(y, dtype, divisor)
        args += ["--input", "y=" + y]
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode == 0 and device == "nvrtc":
        return p.stdout.strip()
    if p.returncode == 0:
        line = next((l for l in p.stdout.splitlines() if l.startswith("out0")), p.stdout.strip())
        return "values " + line[line.find("first="):]
    err = p.stderr.strip().splitlines()
    return "exit %d: %s" % (p.returncode, err[-1] if err else "")


for label, tensor_op, scalar_op, extra in OPS:
    for dtype in ("i32", "i64"):
        print("%s %s tensor 0: %s" % (label, dtype, run("%s-%s-t" % (label, dtype), dtype,
              "%s(%%x, %%y%s)" % (tensor_op, extra), [2, 3, -1, 0])))
        print("%s %s scalar 0: %s" % (label, dtype, run("%s-%s-s" % (label, dtype), dtype,
              "%s(%%x, 0%s)" % (scalar_op, extra), None)))
        print("%s %s by -1: %s" % (label, dtype, run("%s-%s-m" % (label, dtype), dtype,
              "%s(%%x, %%y%s)" % (tensor_op, extra), [2, 3, -1, 1])))
