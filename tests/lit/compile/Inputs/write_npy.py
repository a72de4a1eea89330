# Writes a little-endian int64 .npy: write_npy.py FILE SHAPE VALUES (comma-separated lists).
# VALUES "iota" fills the shape with i % 97 - 48.
import struct
import sys

path, shape, values = sys.argv[1], [int(s) for s in sys.argv[2].split(",")], sys.argv[3]
count = 1
for s in shape:
    count *= s
values = [i % 97 - 48 for i in range(count)] if values == "iota" else [int(v) for v in values.split(",")]
header = "{'descr': '<i8', 'fortran_order': False, 'shape': (%s), }" % "".join("%d, " % s for s in shape)
header += " " * (63 - (10 + len(header)) % 64) + "\n"
with open(path, "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + struct.pack("<%dq" % len(values), *values))
