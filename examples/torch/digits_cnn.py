"""Train a small CNN in fp32 on scikit-learn's digits (8x8 images, shipped inside the package), then run its
inference under AMX and XMX numerics and print where and how much its results move (systolic.torch.compare).

    python examples/torch/digits_cnn.py [--json out.json] [--plot out.png] [--epochs 30] [--limit N]

Needs ``pip install 'systolic[torch-examples]'`` (torch, scikit-learn, matplotlib). Runs in about a minute on 2 cores.
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn as nn
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import systolic.torch as st

ENGINES = [
    ("amx:spr", {"precision": "bf16"}),
    ("amx:spr", {"precision": "int8"}),
    ("xmx:pvc", {"precision": "bf16", "model": "stage"}),
    ("xmx:dg2", {"precision": "fp16"}),
    ("xmx:dg2", {"precision": "int8"}),
]


class DigitsCNN(nn.Module):
    """conv(1->16, 3x3) relu, conv(16->32, 3x3, stride 2) relu, linear(32*4*4 -> 64) relu, linear(64 -> 10)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.act1 = nn.ReLU()
        self.conv2 = nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.act2 = nn.ReLU()
        self.flat = nn.Flatten()
        self.fc1 = nn.Linear(32 * 4 * 4, 64)
        self.act3 = nn.ReLU()
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        return self.fc2(self.act3(self.fc1(self.flat(self.act2(self.conv2(self.act1(self.conv1(x))))))))


def data(seed: int = 0):
    d = load_digits()
    x = torch.tensor(d.images, dtype=torch.float32).unsqueeze(1) / 16.0     # pixels 0..16 -> 0..1
    y = torch.tensor(d.target)
    xtr, xte, ytr, yte = train_test_split(x, y, test_size=0.25, random_state=seed, stratify=y)
    return xtr, xte, ytr, yte


def train(model, x, y, epochs: int = 30, seed: int = 0):
    """Plain fp32 training (Adam, mini-batches of 64); no emulation here."""
    torch.manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    loss_fn = nn.CrossEntropyLoss()
    model.train()
    for _ in range(epochs):
        perm = torch.randperm(len(x))
        for i in range(0, len(x), 64):
            idx = perm[i:i + 64]
            opt.zero_grad()
            loss_fn(model(x[idx]), y[idx]).backward()
            opt.step()
    return model.eval()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--limit", type=int, default=None, help="compare on the first LIMIT held-out digits only")
    ap.add_argument("--json", help="write the report as JSON here")
    ap.add_argument("--plot", help="write a bar chart (max relative error per layer) here")
    args = ap.parse_args(argv)
    torch.manual_seed(0)
    xtr, xte, ytr, yte = data()
    xte, yte = xte[:args.limit], yte[:args.limit]
    t0 = time.perf_counter()
    model = train(DigitsCNN(), xtr, ytr, epochs=args.epochs)
    print(f"trained DigitsCNN in fp32 on {len(xtr)} digits ({args.epochs} epochs, {time.perf_counter() - t0:.1f} s); "
          f"inference on the {len(xte)} held-out digits:\n")
    rep = st.compare(model, xte, engines=ENGINES, targets=yte, k=3)
    print(rep.table())
    if args.json:
        with open(args.json, "w") as f:
            f.write(rep.to_json(indent=1))
    if args.plot:
        rep.plot(args.plot)
    return rep


if __name__ == "__main__":
    main()
