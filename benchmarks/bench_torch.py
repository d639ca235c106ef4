"""The example model's inference under systolic.torch.emulate vs plain PyTorch on the same machine.

    python benchmarks/bench_torch.py [--rounds 5] [--batch 450] [--md FILE]

Model: examples/torch/digits_cnn.py's DigitsCNN (2 conv2d + 2 linear; its weights do not change the time),
inputs: the 450 held-out scikit-learn digits when scikit-learn is installed, else random 1x8x8 images of the
same count. Each engine's forward pass and plain fp32 torch are timed *interleaved* (one call of each per round)
and the median is taken; ratio = emulated time / plain torch time (lower is better). The emulated outputs are
checked against plain torch first (same argmax on most rows), so a broken dispatch cannot post a time.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import statistics
import time
from pathlib import Path

import torch

import systolic.torch as st

ROOT = Path(__file__).resolve().parents[1]
ENGINES = [("amx:spr", {"precision": "bf16"}), ("amx:spr", {"precision": "int8"}),
           ("xmx:pvc", {"precision": "bf16", "model": "stage"}), ("xmx:dg2", {"precision": "fp16"}),
           ("xmx:dg2", {"precision": "int8"})]


def _example():
    spec = importlib.util.spec_from_file_location("digits_cnn", ROOT / "examples" / "torch" / "digits_cnn.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--batch", type=int, default=450)
    ap.add_argument("--md", help="append the table (markdown) to this file")
    args = ap.parse_args(argv)
    ex = _example()
    torch.manual_seed(0)
    model = ex.DigitsCNN().eval()
    try:
        x = ex.data()[1][:args.batch]
        src = "scikit-learn digits (held-out)"
    except ImportError:
        x = torch.rand(args.batch, 1, 8, 8)
        src = "random 1x8x8 images"
    ref = model(x).detach()

    def plain():
        with torch.no_grad():
            return model(x)

    def under(name, opts):
        def f():
            with st.emulate(name, **opts):
                return model(x)
        return f

    fns = {"plain": plain}
    for name, opts in ENGINES:
        label = st.parse_engine(name, **opts).name
        fns[label] = under(name, opts)
        agree = float((fns[label]().argmax(-1) == ref.argmax(-1)).double().mean())
        assert agree > 0.9, (label, agree)
    times = {k: [] for k in fns}
    for _ in range(args.rounds):
        for k, f in fns.items():
            t = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t)
    med = {k: statistics.median(v) for k, v in times.items()}
    lines = [f"DigitsCNN inference, batch {len(x)} ({src}); torch {torch.__version__}, {torch.get_num_threads()} "
             f"threads; {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; load "
             f"{os.getloadavg()[0]:.1f}; median of {args.rounds} interleaved rounds", "",
             "| engine | emulated (ms) | plain torch fp32 (ms) | ratio |", "|---|---:|---:|---:|"]
    for k, v in med.items():
        if k != "plain":
            lines.append(f"| {k} | {1e3 * v:.1f} | {1e3 * med['plain']:.2f} | {v / med['plain']:.1f}x |")
    text = "\n".join(lines)
    print(text)
    if args.md:
        with open(args.md, "a") as f:
            f.write(text + "\n\n")


if __name__ == "__main__":
    main()
