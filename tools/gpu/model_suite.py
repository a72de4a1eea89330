#!/usr/bin/env python3
"""Whole models through torch.compile: eager, toroid and Inductor on the same random weights and
inputs, inference in float32 and bfloat16 and a training step in float32.

    TOROID_LIBRARY=build/src/capi/libtoroid.so python3 tools/gpu/model_suite.py
        [--only resnet18,bert,...] [--modes inference,training] [--dtypes float32,bfloat16] [--reps 10]
        [--device cuda] [--out bench/results/models-cuda.jsonl] [--backends toroid,inductor]
        [--attn sdpa|eager] [--tf32] [--shard K/N] [--time-budget S] [--row-timeout S] [--resume]
    python3 tools/gpu/model_suite.py --list [--shard K/N] [--only ...]

Models (--list prints them with sizes): torchvision classifiers (batch 8, 3x224x224), transformers
models built from small configs (2-4 layers, hidden 384-512, batch 4 x 128 tokens; vision ones
batch 8 at 224x224; speech ones 1 s of audio or 15 s of mel frames) and a few timm models; every
weight is random (no download). A missing package makes the model's rows "skip". Transformers
models use --attn (default sdpa, the library's default; the row records what the model took),
and are wrapped so that forward returns one tensor (logits or last_hidden_state); dropout
probabilities in their configs are set to 0.

Rows (one per model, dtype and mode, appended to --out as JSON lines as soon as each finishes):
  - inference float32: model.eval(), torch.no_grad(); a backend passes when every output element
    satisfies |got - eager| <= 1e-3 max|eager| + 1e-3 |eager|.
  - inference bfloat16: model.to(torch.bfloat16), floating inputs bf16; compared with the eager
    bf16 run, |got - eager| <= 5e-2 max|eager| + 5e-2 |eager|; max_err_vs_fp32 gives each
    backend's max |out - fp32 eager| / max|fp32 eager| (the fp32 run has the unrounded weights).
  - training float32 (resnet18, vit_b_16, bert, gpt2, llama, t5): model.train() with dropout off,
    the loss (cross entropy for classifiers and LMs, mean squared error against a fixed random
    target for the others) computed in eager from the compiled model's output, loss.backward(),
    then torch.optim.AdamW(lr=1e-3).step() compiled as torch.compile(opt.step). Each backend and
    eager start from copy.deepcopy of the same model. Pass when the loss and every gradient
    satisfy |got - eager| <= 1e-2 max|eager| + 1e-2 |eager|, the weights after the step are
    within 1e-2 max|eager| + 2.5 lr of eager's (a gradient that agrees within tolerance can still
    differ in sign where it is near 0, and Adam's first step then moves that weight by lr the
    other way), and the compiled step itself matches eager AdamW applied to the same gradients
    within 1e-6 + 1e-5 |w|.
  A tensor outside its tolerance still passes when its error against a more precise run (float64
  eager for float32 rows, float32 eager for bfloat16 ones) is at most 3 times eager's own error
  against it plus a tenth of the tolerance: some results are ill-conditioned, and eager float32
  misses them as much (resnet18's batch-norm backward: its layer4 weight gradients are 4% off
  the float64 ones in eager too). *_passed_on_reference counts such tensors.
Times: compile_s is the first call's wall time (training: the first two steps, since the
optimizer step is traced again once its state exists); *_ms the median of --reps calls after one
more warm-up call, CUDA synchronized; peak_mib is torch.cuda.max_memory_allocated over those calls
(weights included) after reset_peak_memory_stats. TF32 is off unless --tf32, so float32 means
float32 in eager and in the compiled code alike.
status is toroid's: pass, fail (mismatch), error (raised: the first line is in "error"), skip
(package missing, or toroid not in --backends); inductor_status likewise. fallback_ops lists the
ATen ops the "toroid" logger reported falling back to eager during the toroid run, and
fallback_reasons the first reason it gave for each.

Splitting: rows take about 15-30 s each for Inductor on an H100 (its compile included; a training
row about 60 s), and as much again for toroid's compile, so the 70 rows need several 10-minute
commands: --shard K/N runs the models whose index is K mod N (8 shards of 4 models each), and
--time-budget S starts no row after S seconds; rows are appended as they finish, and --resume
skips the rows --out already has for this commit.

Isolation: each model runs in a child process (spawn), its rows one after another; a child that
crashes, or a row past --row-timeout seconds, makes that row an error and the next rows run in a
fresh child. A CUDA error that leaves the context unusable is blamed on the backend that raised
it; the row's other backends run again in a fresh child.
"""
import argparse
import contextlib
import copy
import datetime
import gc
import json
import logging
import os
import statistics
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "python"))
sys.path.insert(0, HERE)
from suite_common import FallbackCounter, commit, cuda_healthy, first_line  # noqa: E402

LR = 1e-3
TOL = {("inference", "float32"): 1e-3, ("inference", "bfloat16"): 5e-2, ("training", "float32"): 1e-2}
ROW_KEYS = ["model", "dtype", "mode", "status", "eager_ms", "toroid_ms", "inductor_ms", "toroid_compile_s",
            "inductor_compile_s", "toroid_peak_mib", "inductor_peak_mib", "fallback_ops", "commit", "gpu"]


class Skip(Exception):
    pass


def in_dtype(case, dtype):
    """The case with its model and floating inputs in `dtype` (the model converted in place)."""
    return Case(case.model.to(dtype), tuple(x.to(dtype) if x.is_floating_point() else x for x in case.inputs),
                case.loss, case.attn)


def built(name, dtype="float32", device="cuda", attn="sdpa"):
    """Model `name` of MODELS as a Case on `device`, its model and floating inputs in `dtype`."""
    import torch
    case = {m[0]: m[2][0] for m in MODELS}[name](device, attn)
    return in_dtype(case, getattr(torch, dtype)) if dtype != "float32" else case


def need(module):
    import importlib
    try:
        return importlib.import_module(module)
    except ImportError:
        raise Skip("%s is not installed" % module)


# ---------------------------------------------------------------------------------------------
# Models. build(device, attn) -> Case; everything random, seeded, built from configs.

class Case:
    def __init__(self, model, inputs, loss, attn=None):
        self.model = model  # forward(*inputs) -> one tensor
        self.inputs = inputs  # tuple of tensors
        self.loss = loss  # loss(output) -> scalar, for training
        self.attn = attn


def _up(out):
    """bf16/f16 logits to float32 for the loss; float32 and float64 stay (the float64 reference)."""
    import torch
    return out.float() if out.dtype in (torch.float16, torch.bfloat16) else out


def classify_loss(target):
    import torch.nn.functional as F
    return lambda out: F.cross_entropy(_up(out), target)


def lm_loss(ids):
    import torch.nn.functional as F
    return lambda out: F.cross_entropy(_up(out[:, :-1]).reshape(-1, out.shape[-1]), ids[:, 1:].reshape(-1))


def seq2seq_loss(labels):
    import torch.nn.functional as F
    return lambda out: F.cross_entropy(_up(out).reshape(-1, out.shape[-1]), labels.reshape(-1))


def hidden_loss():
    """Mean squared error against a fixed random target. (Not out.pow(2).mean(): for a LayerNorm
    output with its initial weight 1 and bias 0 that is a constant, and the gradients are noise.)"""
    import torch
    target = {}

    def loss(out):
        if "t" not in target:
            g = torch.Generator(device=out.device).manual_seed(1)
            target["t"] = torch.randn(out.shape, generator=g, device=out.device)
        o = _up(out)
        return torch.nn.functional.mse_loss(o, target["t"].to(o.dtype))
    return loss


def torchvision_model(name, batch=8, size=224):
    def build(device, attn):
        import torch
        tv = need("torchvision")
        m = getattr(tv.models, name)(weights=None)
        x = torch.randn(batch, 3, size, size, device=device)
        target = torch.randint(0, 1000, (batch,), device=device)
        return Case(m.to(device), (x,), classify_loss(target))
    return build, "%dx3x%dx%d" % (batch, size, size)


def timm_model(name, batch=8, size=224):
    def build(device, attn):
        import torch
        timm = need("timm")
        m = timm.create_model(name, pretrained=False, num_classes=1000)
        x = torch.randn(batch, 3, size, size, device=device)
        target = torch.randint(0, 1000, (batch,), device=device)
        return Case(m.to(device), (x,), classify_loss(target))
    return build, "%dx3x%dx%d" % (batch, size, size)


def _hf_wrapper():
    import torch

    class HFModel(torch.nn.Module):
        """forward(*tensors) -> one tensor: the model called with named inputs, one output field."""

        def __init__(self, m, names, output, kwargs):
            super().__init__()
            self.m, self.names, self.output, self.kwargs = m, names, output, kwargs

        def forward(self, *tensors):
            out = self.m(**dict(zip(self.names, tensors)), **self.kwargs)
            return getattr(out, self.output) if hasattr(out, self.output) else out[0]
    return HFModel


def _no_dropout(cfg):
    """Dropout, layer drop and SpecAugment masking off: training steps must be comparable."""
    for k, v in list(cfg.to_dict().items()):
        if isinstance(v, float) and ("dropout" in k or k.endswith("pdrop") or k in (
                "layerdrop", "mask_time_prob", "mask_feature_prob", "drop_path_rate")):
            setattr(cfg, k, 0.0)


def hf_model(model_cls, config_cls, config, inputs, output, kwargs=None, loss="hidden", sub=None):
    """inputs: [(name, kind, shape)], kind "ids" (random token ids < vocab) or "float"."""
    def build(device, attn):
        import torch
        tr = need("transformers")
        cfg = getattr(tr, config_cls)(**config)
        _no_dropout(cfg)
        m, took = None, attn
        for impl in ([attn, "eager"] if attn != "eager" else ["eager"]):
            try:
                cfg._attn_implementation = impl
            except Exception:
                pass
            try:
                m = getattr(tr, model_cls)(cfg)
                took = impl
                break
            except (ValueError, ImportError) as e:  # the architecture has no such attention
                err = e
        if m is None:
            raise err
        took = getattr(m.config, "_attn_implementation", took)
        if sub:
            m = getattr(m, sub)
        vocab = getattr(cfg, "vocab_size", None)
        tensors, names = [], []
        for name, kind, shape in inputs:
            if kind == "ids":
                tensors.append(torch.randint(0, vocab, shape, device=device))
            else:
                tensors.append(torch.randn(*shape, device=device))
            names.append(name)
        ids = tensors[0]
        if loss == "lm":
            lf = lm_loss(ids)
        elif loss == "seq2seq":
            lf = seq2seq_loss(torch.randint(0, vocab, inputs[1][2], device=device))
        else:
            lf = hidden_loss()
        wrapped = _hf_wrapper()(m, names, output, kwargs or {})
        return Case(wrapped.to(device), tuple(tensors), lf, attn=took)
    shape = ", ".join("%s %s" % (n, "x".join(map(str, s))) for n, _, s in inputs)
    return build, shape


B, S = 4, 128  # text: batch and tokens
TEXT = [("input_ids", "ids", (B, S))]
ENC_DEC = [("input_ids", "ids", (B, S)), ("decoder_input_ids", "ids", (B, S))]
IMAGES = [("pixel_values", "float", (8, 3, 224, 224))]
NO_CACHE = {"use_cache": False}
LM = dict(hidden_size=512, intermediate_size=1376, num_hidden_layers=4, num_attention_heads=8,
          num_key_value_heads=4, vocab_size=32000, max_position_embeddings=2048)

# (name, family, (build, input shapes), modes)
MODELS = [
    ("resnet18", "torchvision", torchvision_model("resnet18"), ("inference", "training")),
    ("resnet50", "torchvision", torchvision_model("resnet50"), ("inference",)),
    ("mobilenet_v3_small", "torchvision", torchvision_model("mobilenet_v3_small"), ("inference",)),
    ("efficientnet_b0", "torchvision", torchvision_model("efficientnet_b0"), ("inference",)),
    ("densenet121", "torchvision", torchvision_model("densenet121"), ("inference",)),
    ("convnext_tiny", "torchvision", torchvision_model("convnext_tiny"), ("inference",)),
    ("regnet_y_400mf", "torchvision", torchvision_model("regnet_y_400mf"), ("inference",)),
    ("vit_b_16", "torchvision", torchvision_model("vit_b_16"), ("inference", "training")),
    ("swin_t", "torchvision", torchvision_model("swin_t"), ("inference",)),
    ("shufflenet_v2_x1_0", "torchvision", torchvision_model("shufflenet_v2_x1_0"), ("inference",)),
    ("squeezenet1_1", "torchvision", torchvision_model("squeezenet1_1"), ("inference",)),
    ("maxvit_t", "torchvision", torchvision_model("maxvit_t"), ("inference",)),
    ("mnasnet1_0", "torchvision", torchvision_model("mnasnet1_0"), ("inference",)),
    ("bert", "transformers", hf_model("BertModel", "BertConfig", dict(
        hidden_size=512, num_hidden_layers=4, num_attention_heads=8, intermediate_size=2048),
        TEXT, "last_hidden_state"), ("inference", "training")),
    ("roberta", "transformers", hf_model("RobertaModel", "RobertaConfig", dict(
        hidden_size=512, num_hidden_layers=4, num_attention_heads=8, intermediate_size=2048),
        TEXT, "last_hidden_state"), ("inference",)),
    ("distilbert", "transformers", hf_model("DistilBertModel", "DistilBertConfig", dict(
        dim=512, n_layers=4, n_heads=8, hidden_dim=2048), TEXT, "last_hidden_state"), ("inference",)),
    ("albert", "transformers", hf_model("AlbertModel", "AlbertConfig", dict(
        embedding_size=128, hidden_size=512, num_hidden_layers=4, num_attention_heads=8,
        intermediate_size=2048), TEXT, "last_hidden_state"), ("inference",)),
    ("gpt2", "transformers", hf_model("GPT2LMHeadModel", "GPT2Config", dict(
        n_embd=512, n_layer=4, n_head=8), TEXT, "logits", NO_CACHE, loss="lm"), ("inference", "training")),
    ("llama", "transformers", hf_model("LlamaForCausalLM", "LlamaConfig", dict(LM), TEXT, "logits", NO_CACHE,
                                       loss="lm"), ("inference", "training")),
    ("mistral", "transformers", hf_model("MistralForCausalLM", "MistralConfig", dict(LM), TEXT, "logits",
                                         NO_CACHE, loss="lm"), ("inference",)),
    ("qwen2", "transformers", hf_model("Qwen2ForCausalLM", "Qwen2Config", dict(LM, num_key_value_heads=2),
                                       TEXT, "logits", NO_CACHE, loss="lm"), ("inference",)),
    ("opt", "transformers", hf_model("OPTForCausalLM", "OPTConfig", dict(
        hidden_size=512, ffn_dim=2048, num_hidden_layers=4, num_attention_heads=8, word_embed_proj_dim=512),
        TEXT, "logits", NO_CACHE, loss="lm"), ("inference",)),
    ("gpt_neox", "transformers", hf_model("GPTNeoXForCausalLM", "GPTNeoXConfig", dict(
        hidden_size=512, num_hidden_layers=4, num_attention_heads=8, intermediate_size=2048, rotary_pct=0.25),
        TEXT, "logits", NO_CACHE, loss="lm"), ("inference",)),
    ("t5", "transformers", hf_model("T5ForConditionalGeneration", "T5Config", dict(
        d_model=512, d_ff=2048, d_kv=64, num_layers=4, num_decoder_layers=4, num_heads=8),
        ENC_DEC, "logits", NO_CACHE, loss="seq2seq"), ("inference", "training")),
    ("bart", "transformers", hf_model("BartModel", "BartConfig", dict(
        d_model=512, encoder_layers=4, decoder_layers=4, encoder_attention_heads=8, decoder_attention_heads=8,
        encoder_ffn_dim=2048, decoder_ffn_dim=2048), ENC_DEC, "last_hidden_state", NO_CACHE), ("inference",)),
    ("vit_hf", "transformers", hf_model("ViTModel", "ViTConfig", dict(
        hidden_size=384, num_hidden_layers=4, num_attention_heads=6, intermediate_size=1536),
        IMAGES, "last_hidden_state"), ("inference",)),
    ("clip_vision", "transformers", hf_model("CLIPVisionModel", "CLIPVisionConfig", dict(
        hidden_size=384, num_hidden_layers=4, num_attention_heads=6, intermediate_size=1536, image_size=224,
        patch_size=16), IMAGES, "last_hidden_state"), ("inference",)),
    ("wav2vec2", "transformers", hf_model("Wav2Vec2Model", "Wav2Vec2Config", dict(
        hidden_size=384, num_hidden_layers=4, num_attention_heads=6, intermediate_size=1536),
        [("input_values", "float", (4, 16000))], "last_hidden_state"), ("inference",)),
    ("whisper_encoder", "transformers", hf_model("WhisperModel", "WhisperConfig", dict(
        d_model=384, encoder_layers=4, decoder_layers=1, encoder_attention_heads=6, decoder_attention_heads=6,
        encoder_ffn_dim=1536, decoder_ffn_dim=1536, num_mel_bins=80, max_source_positions=750),
        [("input_features", "float", (4, 80, 1500))], "last_hidden_state", sub="encoder"), ("inference",)),
    ("timm_deit_tiny", "timm", timm_model("deit_tiny_patch16_224"), ("inference",)),
    ("timm_mixer_s16", "timm", timm_model("mixer_s16_224"), ("inference",)),
    ("timm_ghostnet", "timm", timm_model("ghostnet_100"), ("inference",)),
]


def rows_of(modes, dtypes, model_modes):
    out = []
    for mode in ("inference", "training"):
        if mode not in modes or mode not in model_modes:
            continue
        for dt in ("float32", "bfloat16"):
            if dt in dtypes and (mode, dt) in TOL:
                out.append((mode, dt))
    return out


# ---------------------------------------------------------------------------------------------
# Measuring (in the child process)



def sync(device):
    import torch
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def reset_peak(device):
    import torch
    gc.collect()
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def peak_mib(device):
    import torch
    return round(torch.cuda.max_memory_allocated() / 2 ** 20, 1) if device.startswith("cuda") else None


# --time-lock: a file whose exclusive lock the timed calls hold, so that shards sharing one GPU
# compile side by side but time one at a time.
TIME_LOCK = None


@contextlib.contextmanager
def gpu_turn():
    if not TIME_LOCK:
        yield
        return
    import fcntl
    with open(TIME_LOCK, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def timed(step, reps, device, warm_is_compile=False):
    """(first result, seconds of the first call, median ms of `reps` calls after one more warm-up
    call); warm_is_compile adds the warm-up call to the first call's time. With --time-lock the
    timed calls run in this process's turn, after one more untimed call."""
    sync(device)
    t0 = time.perf_counter()
    out = step()
    sync(device)
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    step()
    sync(device)
    if warm_is_compile:
        first += time.perf_counter() - t0
    times = []
    with gpu_turn():
        if TIME_LOCK:
            step()
            sync(device)
        for _ in range(reps):
            t0 = time.perf_counter()
            step()
            sync(device)
            times.append((time.perf_counter() - t0) * 1e3)
    return out, round(first, 3), round(statistics.median(times), 3) if times else None


def judge(got, want, tol, hi=None):
    """Compares [(name, tensor or None)] lists. A tensor passes when
    |got - want| <= tol max|want| + tol |want| elementwise (NaN where eager has NaN is equal), or,
    failing that, when hi() (a more precise reference: float64 eager, or float32 eager for bf16)
    is given and got's max error against it is at most 3 times eager's own plus tol/10 of its
    max: ill-conditioned results (batch norm's backward, say) differ in eager float32 too.
    Returns (max |got - want|, max over tensors of that / max|want|, None or why it fails,
    number of tensors passed on the second rule)."""
    import torch
    worst, worst_rel, problem, rescued = 0.0, 0.0, None, 0
    ref = None
    for i, ((name, a), (_, b)) in enumerate(zip(got, want)):
        if a is None or b is None:
            present = a if a is not None else b
            if present is None or present.abs().max().item() == 0:
                continue  # no gradient on one side and zeros on the other: the same
            return worst, worst_rel, "%s: None on one side, nonzero on the other" % name, rescued
        if a.shape != b.shape:
            return worst, worst_rel, "%s: shape %s, eager %s" % (name, tuple(a.shape), tuple(b.shape)), rescued
        if a.numel() == 0:
            continue
        a, b = a.detach().double(), b.detach().double()
        diff = torch.where(torch.isnan(a) & torch.isnan(b), torch.zeros_like(a), (a - b).abs())
        scale = b.abs().nan_to_num(0).max().item()
        d = diff.nan_to_num(float("inf")).max().item()
        worst = max(worst, d)
        worst_rel = max(worst_rel, d / scale if scale else (0.0 if d == 0 else float("inf")))
        if (diff - tol * (scale + b.abs())).nan_to_num(float("inf")).max().item() <= 0:
            continue
        if hi is not None:
            if ref is None:
                ref = hi()
            r = ref[i][1].detach().double()
            err_got = (a - r).abs().nan_to_num(float("inf")).max().item()
            err_eager = (b - r).abs().nan_to_num(float("inf")).max().item()
            if err_got <= 3 * err_eager + tol / 10 * r.abs().max().item():
                rescued += 1
                continue
        if problem is None:
            problem = "%s: max |diff| %.3g over tolerance (max |eager| %.3g)" % (name, d, scale)
    return worst, worst_rel, problem, rescued


def err_vs(out, ref):
    a, b = out.detach().float(), ref.detach().float()
    scale = b.abs().max().item()
    return round((a - b).abs().max().item() / scale, 6) if scale else None


def zero_dropout(m):
    """Dropout and stochastic depth off (training rows compare against eager)."""
    for mod in m.modules():
        name = type(mod).__name__
        if ("Dropout" in name or "StochasticDepth" in name or "DropPath" in name):
            for attr in ("p", "drop_prob"):
                if isinstance(getattr(mod, attr, None), float):
                    setattr(mod, attr, 0.0)


def compiler(b):
    """torch.compile with backend b; "uncompiled" is the module itself (the harness's self-check)."""
    import torch
    return (lambda f: f) if b == "uncompiled" else (lambda f: torch.compile(f, backend=b))


def reset_dynamo():
    try:
        import torch._dynamo
        torch._dynamo.reset()
    except ImportError:  # torch < 2: only the "uncompiled" self-check runs there
        pass


def as_pairs(out):
    if isinstance(out, (list, tuple)):
        return [("output %d" % i, t) for i, t in enumerate(out)]
    return [("output", out)]


def to_double(inputs):
    return tuple(x.double() if x.is_floating_point() else x for x in inputs)


def run_inference(case, dtype, backends, reps, device, counter, row, case32=None):
    """Yields each backend's name before running it (the caller reports progress)."""
    import torch
    tol = TOL[("inference", dtype)]
    model = case.model.eval()
    inputs = case.inputs

    def runner(f):
        def step():
            with torch.no_grad():
                return f(*inputs)
        return step
    reset_peak(device)
    want, _, row["eager_ms"] = timed(runner(model), reps, device)
    row["eager_peak_mib"] = peak_mib(device)
    cache = {}
    if case32 is not None:  # bfloat16: the float32 run is the more precise reference
        with torch.no_grad():
            ref32 = case32.model.eval()(*case32.inputs)
        row["max_err_vs_fp32"] = {"eager": err_vs(want, ref32)}
        hi = lambda: as_pairs(ref32)  # noqa: E731
    else:
        def hi():
            if "ref" not in cache:
                with torch.no_grad():
                    cache["ref"] = as_pairs(copy.deepcopy(model).double()(*to_double(inputs)))
            return cache["ref"]
    for b in backends:
        reset_dynamo()
        reset_peak(device)
        counter.clear()
        yield b
        try:
            got, row[b + "_compile_s"], row[b + "_ms"] = timed(runner(compiler(b)(model)), reps, device)
            row[b + "_peak_mib"] = peak_mib(device)
            worst, rel, problem, rescued = judge(as_pairs(got), as_pairs(want), tol, hi)
            result(row, b, "fail" if problem else "pass", worst, problem)
            row[b + "_max_rel_err"] = round(rel, 6)
            if rescued:
                row[b + "_passed_on_reference"] = rescued
            if case32 is not None:
                row["max_err_vs_fp32"][b] = err_vs(got, ref32)
        except Exception as e:
            result(row, b, "error", None, first_line(e))
        if b == "toroid":
            row["fallback_ops"] = sorted(set(counter.ops))
            row["fallback_reasons"] = dict(counter.reasons)
        reset_dynamo()


def run_training(case, backends, reps, device, counter, row):
    """Yields each backend's name before running it (the caller reports progress)."""
    import torch
    tol = TOL[("training", "float32")]

    def train(compile_fn, compile_step):
        m = copy.deepcopy(case.model).train()
        zero_dropout(m)
        named = [(n, p) for n, p in m.named_parameters() if p.requires_grad]
        opt = torch.optim.AdamW([p for _, p in named], lr=LR)
        f = compile_fn(m)
        opt_step = compile_step(opt.step)
        rec = {}

        def step():
            opt.zero_grad(set_to_none=True)
            loss = case.loss(f(*case.inputs))
            loss.backward()
            if not rec:  # the first step: what the checks compare
                rec["loss"] = [("loss", loss.detach().clone())]
                rec["grads"] = [(n, None if p.grad is None else p.grad.detach().clone()) for n, p in named]
                rec["before"] = [(n, p.detach().clone()) for n, p in named]
            opt_step()
            if "after" not in rec:
                rec["after"] = [(n, p.detach().clone()) for n, p in named]
            return loss
        return step, rec

    cache = {}

    def reference64():
        """Loss and gradients of a float64 copy, for the second rule of judge()."""
        if not cache:
            m = copy.deepcopy(case.model).double().train()
            zero_dropout(m)
            loss = case.loss(m(*to_double(case.inputs)))
            loss.backward()
            cache["loss"] = [("loss", loss.detach())]
            cache["grads"] = [(n, p.grad) for n, p in m.named_parameters() if p.requires_grad]
        return cache

    reset_peak(device)
    step, want = train(lambda m: m, lambda s: s)
    _, _, row["eager_ms"] = timed(step, reps, device)
    row["eager_peak_mib"] = peak_mib(device)
    del step
    for b in backends:
        reset_dynamo()
        reset_peak(device)
        counter.clear()
        yield b
        try:
            step, got = train(compiler(b), compiler(b))
            # The second step traces the optimizer again (its state exists now): compile time too.
            _, row[b + "_compile_s"], row[b + "_ms"] = timed(step, reps, device, warm_is_compile=True)
            row[b + "_peak_mib"] = peak_mib(device)
            checks, problems, worst, rescued = {}, [], 0.0, 0
            for what in ("loss", "grads"):
                d, rel, p, r = judge(got[what], want[what], tol, lambda what=what: reference64()[what])
                checks[what], worst, rescued = round(rel, 6), max(worst, d), rescued + r
                problems += [p] if p else []
            # Weights after the step, against eager's: 1e-2 max|w| + 2.5 lr (see the docstring).
            d, rel, p = check_abs(got["after"], want["after"], tol, 2.5 * LR)
            checks["params"], worst = round(rel, 6), max(worst, d)
            problems += [p] if p else []
            # The compiled step against eager AdamW on the same gradients.
            ps = [torch.nn.Parameter(p.clone()) for _, p in got["before"]]
            for p, (_, g) in zip(ps, got["grads"]):
                p.grad = None if g is None else g.clone()
            torch.optim.AdamW(ps, lr=LR).step()
            replay = [(n, p.detach()) for (n, _), p in zip(got["before"], ps)]
            d, rel, p = check_abs(got["after"], replay, 1e-5, 1e-6, rtol=1e-5, floor_only=True)
            checks["step"] = round(d, 9)
            problems += ["optimizer step: " + p] if p else []
            row[b + "_checks"] = checks
            if rescued:
                row[b + "_passed_on_reference"] = rescued
            result(row, b, "fail" if problems else "pass", worst, "; ".join(problems)[:300] or None)
        except Exception as e:
            result(row, b, "error", None, first_line(e))
        if b == "toroid":
            row["fallback_ops"] = sorted(set(counter.ops))
            row["fallback_reasons"] = dict(counter.reasons)
        reset_dynamo()


def check_abs(got, want, rel_of_max, atol, rtol=0.0, floor_only=False):
    """Per tensor: |got - want| <= rel_of_max max|want| + atol + rtol |want| (floor_only: no max term)."""
    worst, worst_rel, problem = 0.0, 0.0, None
    for (name, a), (_, b) in zip(got, want):
        a, b = a.float(), b.float()
        scale = b.abs().max().item() if b.numel() else 0.0
        d = (a - b).abs()
        lim = (0.0 if floor_only else rel_of_max * scale) + atol + (rtol if floor_only else 0.0) * b.abs()
        excess = (d - lim).nan_to_num(float("inf")).max().item() if b.numel() else 0.0
        dm = d.nan_to_num(float("inf")).max().item() if b.numel() else 0.0
        worst = max(worst, dm)
        worst_rel = max(worst_rel, dm / scale if scale else 0.0)
        if excess > 0 and problem is None:
            problem = "%s: max |diff| %.3g over tolerance (max |eager| %.3g)" % (name, dm, scale)
    return worst, worst_rel, problem


def result(row, b, status, err, msg):
    if b == "toroid":
        row["status"], row["max_err"] = status, err
        if msg:
            row["error"] = msg
    else:
        row[b + "_status"], row[b + "_max_err"] = status, err
        if msg:
            row[b + "_error"] = msg


def child_main(conn, cfg, name, jobs):
    """Builds one model and runs its rows [(mode, dtype, backends)], sending each row."""
    global TIME_LOCK
    TIME_LOCK = cfg.get("time_lock")
    try:
        import torch
        torch.backends.cuda.matmul.allow_tf32 = cfg["tf32"]
        torch.backends.cudnn.allow_tf32 = cfg["tf32"]
        if "toroid" in cfg["backends"]:
            import toroid  # noqa: F401  registers the backend
        counter = FallbackCounter()
        log = logging.getLogger("toroid")
        log.addHandler(counter)
        log.propagate = False
        spec = next(m for m in MODELS if m[0] == name)
        device = cfg["device"]
        torch.manual_seed(0)
        case32 = spec[2][0](device, cfg["attn"])
    except Skip as s:
        for mode, dtype, _ in jobs:
            conn.send(("row", {"mode": mode, "dtype": dtype, "status": "skip", "error": str(s)}))
        return
    except Exception as e:
        traceback.print_exc()
        for mode, dtype, _ in jobs:
            conn.send(("row", {"mode": mode, "dtype": dtype, "status": "error", "error": "build: " + first_line(e)}))
        return
    for mode, dtype, backends in jobs:
        row = {"mode": mode, "dtype": dtype, "attn_implementation": case32.attn}
        conn.send(("phase", mode, dtype, "eager"))
        healthy = True
        try:
            if mode == "training":
                gen = run_training(case32, backends, cfg["reps"], device, counter, row)
            elif dtype == "bfloat16":
                c16 = in_dtype(Case(copy.deepcopy(case32.model), case32.inputs, case32.loss), torch.bfloat16)
                x16 = c16.inputs
                c32 = Case(case32.model, tuple(x.float() if x.is_floating_point() else x for x in x16), None)
                gen = run_inference(c16, dtype, backends, cfg["reps"], device, counter, row, case32=c32)
            else:
                gen = run_inference(case32, dtype, backends, cfg["reps"], device, counter, row)
            done = []
            for b in gen:
                if not cuda_healthy(device):
                    if done:  # the backend before broke the context: the others run in a fresh child
                        row["retry"] = [x for x in backends if x not in done]
                    else:
                        row["status"], row["error"] = "error", "eager: the CUDA context is unusable after it"
                    healthy = False
                    break
                conn.send(("phase", mode, dtype, b))
                done.append(b)
            if healthy and not cuda_healthy(device):
                healthy = False
        except Exception as e:  # eager itself failed: the row is an error for every backend
            traceback.print_exc()
            row["status"], row["error"] = "error", "eager: " + first_line(e)
            healthy = cuda_healthy(device)
        conn.send(("row", row))
        gc.collect()
        if not healthy:
            return  # a fresh process for the rest
        if device.startswith("cuda"):
            torch.cuda.empty_cache()


# ---------------------------------------------------------------------------------------------
# The parent


def finish_row(row, meta, name, backends):
    out = {"model": name}
    out.update(row)
    out.setdefault("status", "skip" if "toroid" not in backends else "error")
    if "toroid" not in backends and out["status"] != "error":
        out["status"], out["error"] = "skip", out.get("error") or "toroid not in --backends"
    out.setdefault("fallback_ops", [])
    out.update(meta)
    ordered = {k: out.get(k) for k in ROW_KEYS}
    ordered.update({k: v for k, v in out.items() if k not in ordered and k != "retry"})
    return ordered


def backend_keys(row, b):
    """The keys of a row that one backend's run wrote."""
    own = ("status", "max_err", "error", "fallback_ops", "fallback_reasons") if b == "toroid" else ()
    return [k for k in row if k.startswith(b + "_") or k in own]


def run_model(name, jobs, cfg, timeout, deadline):
    """Rows of one model, through child processes; yields each finished row (without meta). Rows
    not started by the deadline are left for --resume."""
    import multiprocessing
    ctx = multiprocessing.get_context("spawn")
    pending = list(jobs)
    partial = {}  # (mode, dtype) -> the row so far, while some of its backends run again
    retried = set()

    def rerun(row, mode, dtype, backends):
        """Runs `backends` of a row again in a fresh child (once); False when already retried."""
        if not backends or (mode, dtype) in retried:
            return False
        retried.add((mode, dtype))
        partial[(mode, dtype)] = row
        pending.insert(0, (mode, dtype, backends))
        return True

    while pending:
        if deadline and time.time() > deadline:
            return
        conn, child = ctx.Pipe()
        proc = ctx.Process(target=child_main, args=(child, cfg, name, pending), daemon=True)
        proc.start()
        child.close()
        phase, since, why = None, time.time(), None
        while pending:
            if conn.poll(1.0):
                try:
                    msg = conn.recv()
                except (EOFError, OSError):
                    proc.join(5)
                    why = "child died (exit code %s) in %s" % (proc.exitcode, phase[2] if phase else "startup")
                    break
                if msg[0] == "phase":
                    phase, since = msg[1:], time.time()
                    continue
                row = msg[1]
                key = (row["mode"], row["dtype"])
                job = next(j for j in pending if (j[0], j[1]) == key)
                pending.remove(job)
                if key in partial:  # a rerun: its backends' keys over the first run's row
                    merged = partial.pop(key)
                    for k, v in row.items():  # eager's keys, when the first run lost them
                        if merged.get(k) is None:
                            merged[k] = v
                    for b in job[2]:
                        merged.update({k: row[k] for k in backend_keys(row, b)})
                    if isinstance(row.get("max_err_vs_fp32"), dict):
                        merged["max_err_vs_fp32"] = dict(merged.get("max_err_vs_fp32") or {}, **row["max_err_vs_fp32"])
                    merged.pop("retry", None)
                    row = merged
                if row.get("retry") and rerun(row, row["mode"], row["dtype"], row.pop("retry")):
                    break  # that child exits (its CUDA context is gone); the rest runs in a fresh one
                row.pop("retry", None)
                yield row
                phase, since = None, time.time()
                if deadline and time.time() > deadline:
                    break
            elif not proc.is_alive() and not conn.poll():
                proc.join(1)
                why = "child died (exit code %s) in %s" % (proc.exitcode, phase[2] if phase else "startup")
                break
            elif time.time() - since > timeout:
                why = "timeout after %ds in %s" % (timeout, phase[2] if phase else "startup")
                break
        proc.kill()
        proc.join(5)
        if why and pending:  # the row in flight: the backend that was running errs, the others rerun
            mode, dtype, backends = pending.pop(0)
            row = partial.pop((mode, dtype), {"mode": mode, "dtype": dtype})
            b = phase[2] if phase and (phase[0], phase[1]) == (mode, dtype) else "eager"
            if b == "eager":
                row.update(status="error", error="eager: " + why)
            else:
                result(row, b, "error", None, why)
                if rerun(row, mode, dtype, [x for x in backends if x != b]):
                    continue
            yield row


def parse_shard(s):
    if not s:
        return 0, 1
    k, n = (int(v) for v in s.split("/"))
    if not 0 <= k < n:
        raise SystemExit("--shard K/N needs 0 <= K < N")
    return k, n


def fmt(x, spec="%.2f"):
    return "-" if x is None else spec % x


def print_table(rows):
    print()
    print("| model | dtype | mode | toroid | Inductor | eager ms | toroid ms | Inductor ms | toroid compile s | "
          "Inductor compile s | toroid MiB | Inductor MiB | fallbacks | error |")
    print("|" + "---|" * 14)
    for r in rows:
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["model"], r["dtype"], r["mode"], r["status"], r.get("inductor_status", "-"), fmt(r["eager_ms"]),
            fmt(r["toroid_ms"]), fmt(r["inductor_ms"]), fmt(r["toroid_compile_s"], "%.1f"),
            fmt(r["inductor_compile_s"], "%.1f"), fmt(r["toroid_peak_mib"], "%.0f"),
            fmt(r["inductor_peak_mib"], "%.0f"), len(r["fallback_ops"] or []),
            (r.get("error") or r.get("inductor_error") or "")[:80].replace("|", "/")))
    counts = {}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    print("\ntoroid: " + ", ".join("%d %s" % (v, k) for k, v in sorted(counts.items())))
    for r in rows:
        if r["fallback_ops"]:
            print("%s %s %s falls back on: %s" % (r["model"], r["dtype"], r["mode"], ", ".join(r["fallback_ops"])))
            for op, why in (r.get("fallback_reasons") or {}).items():
                print("    %s: %s" % (op, why))


def list_models(args):
    import importlib.util
    modes = set(args.modes.split(","))
    dtypes = set(args.dtypes.split(","))
    k, n = parse_shard(args.shard)
    only = set(filter(None, args.only.split(",")))
    models = [m for i, m in enumerate(MODELS) if i % n == k and (not only or m[0] in only)]
    for name, family, (_, shape), model_modes in models:
        have = importlib.util.find_spec(family) is not None
        rows = ", ".join("%s %s" % r for r in rows_of(modes, dtypes, model_modes))
        print("%-20s %-13s %-48s %s%s" % (name, family, shape, rows, "" if have else "   (%s missing here)" % family))
    print("\n%d models, %d rows" % (len(models), sum(len(rows_of(modes, dtypes, m[3])) for m in models)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="", help="comma-separated model names (--list)")
    ap.add_argument("--modes", default="inference,training")
    ap.add_argument("--dtypes", default="float32,bfloat16")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--out", default=None, help="JSON lines, appended (default bench/results/models-<device>.jsonl)")
    ap.add_argument("--backends", default="toroid,inductor",
                    help="dynamo backends; 'uncompiled' runs the module itself (the harness's self-check)")
    ap.add_argument("--attn", default="sdpa", choices=["sdpa", "eager"], help="transformers attention")
    ap.add_argument("--tf32", action="store_true", help="allow TF32 in float32 matmuls and convolutions")
    ap.add_argument("--shard", default="", help="K/N: only the models with index %% N == K")
    ap.add_argument("--time-budget", type=float, default=0, help="start no model after this many seconds")
    ap.add_argument("--row-timeout", type=float, default=420, help="seconds one row (all backends) may take")
    ap.add_argument("--resume", action="store_true", help="skip rows already in --out for this commit")
    ap.add_argument("--time-lock", default=None,
                    help="a file: the timed calls hold its lock (shards sharing a GPU time one at a time)")
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args()
    if args.list:
        return list_models(args)
    import torch
    backends = [b for b in args.backends.split(",") if b]
    if not hasattr(torch, "compile") and backends != ["uncompiled"]:
        sys.exit("torch %s has no torch.compile (2.0 or later is needed); --list works here" % torch.__version__)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        sys.exit("no CUDA device")
    if "toroid" in backends:
        import toroid  # noqa: F401  a missing library is an error here, not in every row
        from toroid import _capi
        _capi.lib()
    only = set(filter(None, args.only.split(",")))
    unknown = only - {m[0] for m in MODELS}
    if unknown:
        sys.exit("unknown models: %s (--list)" % ", ".join(sorted(unknown)))
    k, n = parse_shard(args.shard)
    models = [m for i, m in enumerate(MODELS) if i % n == k and (not only or m[0] in only)]
    modes, dtypes = set(args.modes.split(",")), set(args.dtypes.split(","))
    out_path = args.out or os.path.join(REPO, "bench", "results", "models-%s.jsonl" % args.device.split(":")[0])
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    meta = {"commit": commit(), "gpu": torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu"}
    done = set()
    if args.resume and os.path.exists(out_path):
        with open(out_path) as f:
            for line in f:
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                if r.get("commit") == meta["commit"]:
                    done.add((r["model"], r["dtype"], r["mode"]))
    cfg = {"device": args.device, "backends": backends, "reps": args.reps, "attn": args.attn, "tf32": args.tf32,
           "time_lock": args.time_lock}
    extra = {"torch": torch.__version__, "tf32": args.tf32, "reps": args.reps, "shared_gpu": bool(args.time_lock),
             "date": datetime.datetime.now().isoformat(timespec="seconds")}
    print("torch %s, %s, toroid library %s, %d models" % (torch.__version__, meta["gpu"],
                                                         os.environ.get("TOROID_LIBRARY", "(default search)"),
                                                         len(models)), flush=True)
    t0 = time.time()
    rows, left = [], []
    for name, family, _, model_modes in models:
        jobs = [(mode, dt, backends) for mode, dt in rows_of(modes, dtypes, model_modes)
                if (name, dt, mode) not in done]
        if not jobs:
            continue
        try:
            for row in run_model(name, jobs, cfg, args.row_timeout, t0 + args.time_budget if args.time_budget else 0):
                row = finish_row(row, meta, name, backends)
                row.update({k: v for k, v in extra.items() if k not in row})
                rows.append(row)
                with open(out_path, "a") as f:
                    f.write(json.dumps(row) + "\n")
                done.add((name, row["dtype"], row["mode"]))
                print("%s %s %s: toroid %s, inductor %s%s" % (
                    name, row["dtype"], row["mode"], row["status"], row.get("inductor_status", "-"),
                    " (%s)" % row["error"] if row.get("error") else ""), flush=True)
        except Exception:  # the harness itself: report and go on with the next model
            traceback.print_exc()
        left += ["%s/%s/%s" % (name, mode, dt) for mode, dt, _ in jobs if (name, dt, mode) not in done]
    print_table(rows)
    print("\nappended %d rows to %s (%.0f s)%s" % (len(rows), out_path, time.time() - t0,
                                                  "; not run (time budget): %s -- rerun with --resume"
                                                  % ",".join(left) if left else ""))


if __name__ == "__main__":
    main()
