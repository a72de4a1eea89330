"""What eager PyTorch's convolution_backward gives for grad_weight where the output gradient holds
NaN or inf and a weight tap only ever meets the zero padding (IEEE: 0 * NaN = NaN; a kernel that
skips the padding gives 0). Decides which answer toroid's CPU and CUDA backward should match.
  python3 tools/gpu/conv_nan_probe.py          (CPU; CUDA too where there is a GPU)"""
import torch


def probe(device):
    x = torch.tensor([[[1.5, -2.0]], [[0.5, 3.0]]], device=device)          # N=2, C=1, L=2
    w = torch.arange(10, dtype=torch.float32, device=device).reshape(2, 1, 5) / 7
    g = torch.tensor([[[float("nan"), 1.0], [2.0, float("inf")]],
                      [[1.0, -1.0], [0.5, 0.25]]], device=device)             # N=2, O=2, L=2
    gi, gw, gb = torch.ops.aten.convolution_backward(g, x, w, [2], [1], [2], [1], False, [0], 1,
                                                     [True, True, True])
    print(f"{device}: grad_weight {gw.flatten().tolist()}")
    print(f"{device}: grad_input  {gi.flatten().tolist()}")


print("torch", torch.__version__, "mkldnn" if torch.backends.mkldnn.is_available() else "no mkldnn")
probe("cpu")
with torch.backends.mkldnn.flags(enabled=False):
    print("mkldnn off:")
    probe("cpu")
if torch.cuda.is_available():
    probe("cuda")
