"""The Python package's PEP 517 build backend, in the repository so that `pip install ./python`
needs nothing from the network (pyproject.toml's build-system.requires is empty).

The wheel holds the `toroid` package (with py.typed) and, when a build of libtoroid.so is found
($TOROID_LIBRARY at build time, else the repository's build/src/capi/libtoroid.so), the library
beside the package, where `import toroid` finds it first: a platform wheel. Without a build it is
pure Python, and the package looks for an installed libtoroid.so (docs/python.md).
"""
import base64
import hashlib
import os
import re
import sysconfig
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)  # python/
PACKAGE = os.path.join(ROOT, "toroid")


def _version():
    with open(os.path.join(PACKAGE, "__init__.py")) as f:
        return re.search(r'^__version__ = "([^"]+)"$', f.read(), re.M).group(1)


def _library():
    env = os.environ.get("TOROID_LIBRARY")
    candidates = [env] if env else [os.path.join(ROOT, "..", "build", "src", "capi", "libtoroid.so")]
    for c in candidates:
        if c and os.path.exists(c):
            return os.path.realpath(c)
    return None


def _metadata(version):
    return ("Metadata-Version: 2.1\nName: toroid\nVersion: %s\n"
            "Summary: toroid's PyTorch frontend: torch.compile(backend=\"toroid\") and FX graphs through libtoroid\n"
            "License: BSD-3-Clause\nRequires-Python: >=3.9\n" % version)


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    version = _version()
    info = os.path.join(metadata_directory, "toroid-%s.dist-info" % version)
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(info, "METADATA"), "w") as f:
        f.write(_metadata(version))
    return os.path.basename(info)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version = _version()
    library = _library()
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    tag = "py3-none-" + (platform if library else "any")
    dist = "toroid-%s" % version
    path = os.path.join(wheel_directory, "%s-%s.whl" % (dist, tag))
    records = []
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        def add(name, data):
            z.writestr(name, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            records.append("%s,sha256=%s,%d" % (name, digest, len(data)))

        for name in sorted(os.listdir(PACKAGE)):
            if name.endswith(".py") or name == "py.typed":
                with open(os.path.join(PACKAGE, name), "rb") as f:
                    add("toroid/" + name, f.read())
        if library:
            with open(library, "rb") as f:
                add("toroid/libtoroid.so", f.read())
        license_path = os.path.join(ROOT, "..", "LICENSE")
        if os.path.exists(license_path):
            with open(license_path, "rb") as f:
                add("%s.dist-info/LICENSE" % dist, f.read())
        add("%s.dist-info/METADATA" % dist, _metadata(version).encode())
        add("%s.dist-info/WHEEL" % dist, ("Wheel-Version: 1.0\nGenerator: toroid_build\nRoot-Is-Purelib: %s\nTag: %s\n"
                                          % ("false" if library else "true", tag)).encode())
        record = "%s.dist-info/RECORD" % dist
        z.writestr(record, "\n".join(records + [record + ",,"]) + "\n")
    return os.path.basename(path)
