"""A small pre-LayerNorm transformer block (random weights, fixed seed) compared under AMX and XMX numerics.

    python examples/torch/transformer_block.py [--json out.json]

Its GEMMs: the QKV projection, the two GEMMs of causal scaled-dot-product attention (one per head), the output
projection and the two MLP layers. LayerNorm, softmax and GELU run in fp32 PyTorch (only the matrix engine is
emulated). top-1 / top-k are read along the last dimension (the model width), per token.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

import systolic.torch as st

ENGINES = [
    ("amx:spr", {"precision": "bf16"}),
    ("amx:gnr", {"precision": "fp16"}),
    ("xmx:pvc", {"precision": "bf16", "model": "stage"}),
    ("xmx:pvc", {"precision": "tf32"}),
    ("xmx:dg2", {"precision": "fp16"}),
    ("xmx:dg2", {"precision": "int8"}),
]


class Block(nn.Module):
    def __init__(self, d: int = 64, heads: int = 4, hidden: int = 256):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, hidden)
        self.gelu = nn.GELU()
        self.fc2 = nn.Linear(hidden, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(self.gelu(self.fc1(self.ln2(x))))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    torch.manual_seed(0)
    model = Block().eval()
    x = torch.randn(2, 32, 64)
    rep = st.compare(model, x, engines=ENGINES, k=5)
    print(rep.table())
    if args.json:
        with open(args.json, "w") as f:
            f.write(rep.to_json(indent=1))
    return rep


if __name__ == "__main__":
    main()
