"""The sub-group being run: its state (:class:`SubGroup`, one per thread while :func:`systolic.opencl.run` runs
a kernel) and the checks that every sub-group collective makes (converged, uniform arguments).

A module of its own so that the kernel runner (``runner``) and the built-ins it runs (``blockio``, ``calls``)
both import it and not each other (imports point one way; tests/test_layering.py).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np

from ..errors import DivergentCollective
from ..xmx.platform import Platform

__all__ = ["SubGroup", "current", "require_converged"]

_tls = threading.local()


@dataclass
class SubGroup:
    """The state of the sub-group being run (what the work-item functions read)."""

    platform: Platform
    size: int                         # the (maximum) sub-group size S
    sub_group_id: int
    num_sub_groups: int
    group_id: tuple[int, int, int]
    local_size: tuple[int, int, int]
    global_size: tuple[int, int, int]
    work_dim: int
    local_linear: np.ndarray          # (S,) local linear id of each lane
    mask: np.ndarray                  # (S,) bool: lanes executing now
    valid: np.ndarray                 # (S,) bool: lanes that exist (False past a partial sub-group's end)
    seq: dict = field(default_factory=dict)

    def local_id(self, d: int) -> np.ndarray:
        lx, ly, _ = self.local_size
        lin = self.local_linear
        return (lin % lx, (lin // lx) % ly, lin // (lx * ly))[d]

    def next_seq(self, what: str) -> int:
        self.seq[what] = self.seq.get(what, -1) + 1
        return self.seq[what]


def current() -> SubGroup | None:
    """The sub-group being run on this thread, or None outside :func:`run`."""
    return getattr(_tls, "ctx", None)


def require_converged(what: str, ctx: SubGroup | None = None) -> None:
    """Raise DivergentCollective unless every work-item of the sub-group is executing (no-op outside a kernel)."""
    c = ctx if ctx is not None else current()
    if c is None:
        return
    if not c.valid.all():
        raise DivergentCollective(f"{what} in a partial sub-group",
                                  rule="cl_intel_subgroups: behavior is undefined if the sub-group size is smaller "
                                       "than the maximum sub-group size (a partial sub-group)",
                                  values={"sub_group_id": c.sub_group_id, "work_items": int(c.valid.sum()),
                                          "max_sub_group_size": c.size})
    if not c.mask.all():
        raise DivergentCollective(f"{what} reached by only part of the sub-group",
                                  rule="cl_khr_subgroups / cl_intel_subgroup_matrix_multiply_accumulate: must be "
                                       "encountered by all work items in the sub-group",
                                  values={"sub_group_id": c.sub_group_id,
                                          "inactive_work_items": np.nonzero(~c.mask)[0].tolist()})


def _uniform(v, what: str, arg: str):
    """A collective's argument that must be the same for all work-items: a scalar, or an array of equal values."""
    a = np.asarray(v)
    if a.ndim == 0:
        return v if not isinstance(v, np.ndarray) else a.item()
    flat = a.reshape(-1)
    if flat.size and np.all(flat == flat[0]):
        return flat[0].item()
    raise DivergentCollective(f"{what}: {arg} differs between work-items",
                              rule="cl_intel_subgroups: the pointer/coordinate arguments must be the same for all "
                                   "work items in the sub-group", values={arg: a.tolist()[:16]})
