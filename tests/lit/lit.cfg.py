import os
import lit.formats

config.name = "toroid"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".tir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = config.toroid_lit_exec_root
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py.in"]

tool_dirs = [os.path.join(config.toroid_tools_dir, d) for d in ("toroid-opt", "toroidc", "toroid-kernel-ir")] + [config.llvm_tools_dir]
config.environment["PATH"] = os.pathsep.join(tool_dirs + [config.environment.get("PATH", os.environ.get("PATH", ""))])
config.substitutions.append(("%examples", os.path.join(config.toroid_src_root, "examples")))
# Compiled kernels go to a cache inside the build tree, not the user's home.
config.environment["TOROID_CACHE_DIR"] = config.toroid_kernel_cache

# cuda-toolkit: toroid was built with the CUDA backend (NVRTC compiles its kernels, no GPU needed).
# gpu: a GPU is present, so CUDA kernels run. nvcc: the toolkit's compiler, for the standalone check.
if config.toroid_with_cuda:
    config.available_features.add("cuda-toolkit")
    nvcc = os.path.join(os.path.dirname(config.toroid_cuda_include), "bin", "nvcc")
    if os.access(nvcc, os.X_OK):
        config.available_features.add("nvcc")
        config.substitutions.append(("%nvcc", nvcc))
    if os.path.exists("/dev/nvidia0") or os.path.exists("/dev/nvidiactl"):
        config.available_features.add("gpu")

# torch: a Python with torch (for the frontend's emitted .tir): $TOROID_PYTHON, else Debian's.
import subprocess
for py in (os.environ.get("TOROID_PYTHON"), "/usr/bin/python3"):
    if py and subprocess.run([py, "-c", "import torch"], capture_output=True).returncode == 0:
        config.available_features.add("torch")
        config.substitutions.append(("%torch_python", py))
        break
