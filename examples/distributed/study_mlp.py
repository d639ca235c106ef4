"""A study script for ``systolic study`` (docs/distributed.md): a small MLP on fixed random data.

A study script defines ``model()`` (built the same way on every worker: seeded) and ``data()`` (the samples,
or ``(samples, integer labels)``).
"""

import torch


def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))


def data():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(64, 16, generator=g)
    y = torch.randint(0, 4, (64,), generator=g)
    return x, y
