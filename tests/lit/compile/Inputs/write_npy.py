# Writes a little-endian .npy: write_npy.py FILE SHAPE VALUES [i8|i4|f4] (comma-separated lists;
# int64 unless i4 says int32 or f4 float32). VALUES "iota" fills the shape with i % 97 - 48;
# "modN" with i * 7 % N (indices in [0, N), scattered).
import struct
import sys

path, shape, values = sys.argv[1], [int(s) for s in sys.argv[2].split(",")], sys.argv[3]
width = sys.argv[4] if len(sys.argv) > 4 else "i8"
code = {"i8": "q", "i4": "i", "f4": "f"}[width]
count = 1
for s in shape:
    count *= s
number = float if width == "f4" else int
if values == "iota":
    values = [i % 97 - 48 for i in range(count)]
elif values.startswith("mod"):
    values = [i * 7 % int(values[3:]) for i in range(count)]
else:
    values = [number(v) for v in values.split(",")]
header = "{'descr': '<%s'," % width + " 'fortran_order': False, 'shape': (%s), }" % "".join("%d, " % s for s in shape)
header += " " * (63 - (10 + len(header)) % 64) + "\n"
with open(path, "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + struct.pack("<%d%s" % (len(values), code), *values))
