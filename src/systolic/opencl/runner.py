"""A sub-group kernel runner: an ND-range of work-groups, each split into sub-groups (cl_intel_subgroups).

A kernel is a Python function written **per sub-group**: it runs once for each sub-group, vectorised over its S
work-items, so per-work-item values are numpy arrays with the work-item on the leading axis
(``get_sub_group_local_id()`` is ``arange(S)``), and uniform values (``get_sub_group_id()``,
``get_group_id(d)``) are Python ints. The OpenCL work-item functions are module-level functions that read the
sub-group being run.

Mapping of work-items to sub-groups (cl_intel_subgroups "Execution Model": implementation-defined; this is the
one Intel's compilers use): the local linear id ``x + Lx*(y + Ly*z)`` divided by S gives the sub-group id, the
remainder the sub-group local id. A work-group whose size is not a multiple of S ends with a partial sub-group,
whose missing work-items are inactive lanes.

**Divergence.** Control flow that only some work-items take is written with ``with where(cond): ...``, which
narrows the sub-group's execution mask (as a SIMD compiler predicates a divergent branch). Collectives (the
matrix built-ins, block reads and writes, barriers) must be reached by all work-items of the sub-group
(cl_khr_subgroups / cl_intel_subgroups: "must be encountered by all work items in a sub-group"); reaching one
under a partial mask, in a partial sub-group, or with non-uniform arguments raises
:class:`systolic.errors.DivergentCollective` naming the inactive work-items.

**Cooperation between sub-groups.** Each sub-group runs in its own greenlet; ``barrier()`` and the split
built-ins park it until every participant arrives (sub-groups 2p and 2p+1 of a work-group pair up for DPASW: the
pairing is an implementation detail the split extension leaves open). A participant that finishes without
arriving is a divergent collective too.
"""

from __future__ import annotations

import itertools
from collections import deque

import numpy as np

from ..errors import DivergentCollective, InvalidValue, UnsupportedCombination
from ..vocabulary import renamed
from ..xmx.platform import MAX_WORK_GROUP_SIZE, get_platform
from .blockio import GlobalPtr
from .subgroup import SubGroup, _tls, _uniform, current, require_converged  # noqa: F401  (re-exported)

__all__ = ["run", "current", "where", "barrier", "collective", "get_sub_group_local_id", "get_sub_group_id",
           "get_sub_group_size", "get_max_sub_group_size", "get_num_sub_groups", "get_group_id", "get_local_id",
           "get_global_id", "get_local_size", "get_global_size", "get_num_groups", "get_work_dim",
           "sub_group_broadcast", "require_converged", "SubGroup", "CLK_LOCAL_MEM_FENCE", "CLK_GLOBAL_MEM_FENCE"]

CLK_LOCAL_MEM_FENCE = 1
CLK_GLOBAL_MEM_FENCE = 2


def _ctx(fn: str) -> SubGroup:
    c = current()
    if c is None:
        raise InvalidValue(f"{fn}() is a work-item function: call it inside a kernel run by systolic.opencl.run",
                           rule="OpenCL C work-item functions exist only in a kernel", values={"function": fn})
    return c


def _dim(d, fn: str) -> int:
    if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)):
        raise InvalidValue(f"{fn}: the dimension index must be an integer", values={"dimindx": d})
    return int(d)


# ---- OpenCL C work-item functions (OpenCL C 6.15.1) and the sub-group ones (cl_khr_subgroups) -------------------

def get_work_dim() -> int:
    return _ctx("get_work_dim").work_dim


def get_group_id(d: int) -> int:
    c = _ctx("get_group_id")
    d = _dim(d, "get_group_id")
    return c.group_id[d] if 0 <= d < 3 else 0


def get_local_size(d: int) -> int:
    c = _ctx("get_local_size")
    d = _dim(d, "get_local_size")
    return c.local_size[d] if 0 <= d < 3 else 1


def get_global_size(d: int) -> int:
    c = _ctx("get_global_size")
    d = _dim(d, "get_global_size")
    return c.global_size[d] if 0 <= d < 3 else 1


def get_num_groups(d: int) -> int:
    c = _ctx("get_num_groups")
    d = _dim(d, "get_num_groups")
    return c.global_size[d] // c.local_size[d] if 0 <= d < 3 else 1


def get_local_id(d: int) -> np.ndarray:
    """(S,) uint: each work-item's local id in dimension d."""
    c = _ctx("get_local_id")
    d = _dim(d, "get_local_id")
    return c.local_id(d).astype(np.int64) if 0 <= d < 3 else np.zeros(c.size, np.int64)


def get_global_id(d: int) -> np.ndarray:
    """(S,): ``get_group_id(d) * get_local_size(d) + get_local_id(d)``."""
    c = _ctx("get_global_id")
    d = _dim(d, "get_global_id")
    if not 0 <= d < 3:
        return np.zeros(c.size, np.int64)
    return c.group_id[d] * c.local_size[d] + c.local_id(d).astype(np.int64)


def get_sub_group_local_id() -> np.ndarray:
    """(S,) uint32: 0, 1, ..., S-1."""
    return np.arange(_ctx("get_sub_group_local_id").size, dtype=np.uint32)


def get_sub_group_id() -> int:
    return _ctx("get_sub_group_id").sub_group_id


def get_sub_group_size() -> int:
    """The size of this sub-group (smaller than the maximum for a partial last sub-group)."""
    return int(_ctx("get_sub_group_size").valid.sum())


def get_max_sub_group_size() -> int:
    return _ctx("get_max_sub_group_size").size


def get_num_sub_groups() -> int:
    return _ctx("get_num_sub_groups").num_sub_groups


def sub_group_broadcast(x, sub_group_local_id: int):
    """cl_khr_subgroups: the value of ``x`` (an (S, ...) array) of one work-item, given to all of them."""
    c = _ctx("sub_group_broadcast")
    require_converged("sub_group_broadcast")
    i = _uniform(sub_group_local_id, "sub_group_broadcast", "sub_group_local_id")
    a = np.asarray(x)
    if a.ndim == 0 or a.shape[0] != c.size or not 0 <= i < c.size:
        raise InvalidValue("sub_group_broadcast takes a per-work-item value and a work-item in the sub-group",
                           values={"shape": a.shape, "sub_group_local_id": i, "sub_group_size": c.size})
    return np.broadcast_to(a[i], a.shape).copy()


# ---- divergence ---------------------------------------------------------------------------------------------------

class where:
    """``with where(cond): ...``: execute the body with the lanes where ``cond`` holds (a divergent branch)."""

    def __init__(self, cond) -> None:
        self.cond = cond

    def __enter__(self):
        c = _ctx("where")
        cond = np.asarray(self.cond)
        if cond.shape != (c.size,):
            raise InvalidValue("a branch condition is one value per work-item", values={"shape": cond.shape,
                                                                                        "sub_group_size": c.size})
        self._saved = c.mask
        c.mask = c.mask & cond.astype(bool)
        return c.mask

    def __exit__(self, *exc) -> None:
        current().mask = self._saved


# ---- cooperation between sub-groups ---------------------------------------------------------------------------

def collective(key, payload, members, complete):
    """Park this sub-group until every sub-group in ``members`` has called with the same ``key``; then
    ``complete({sub_group_id: payload})`` returns ``{sub_group_id: value}`` and each gets its value."""
    from greenlet import getcurrent
    c = _ctx("collective")
    g = getcurrent()
    if g.parent is None or getattr(c, "_greenlet", None) is not g:
        raise InvalidValue("cross-sub-group collectives run only inside systolic.opencl.run",
                           values={"key": str(key)})
    return g.parent.switch(("collective", key, payload, tuple(members), complete))


def barrier(flags: int = CLK_LOCAL_MEM_FENCE) -> None:
    """OpenCL ``barrier()`` / ``work_group_barrier()``: every work-item of the work-group waits here."""
    c = _ctx("barrier")
    require_converged("barrier")
    n = c.next_seq("barrier")
    collective(("barrier", n), None, range(c.num_sub_groups), lambda slot: {i: None for i in slot})


# ---- the ND-range ----------------------------------------------------------------------------------------------

def _sizes(v, what: str) -> tuple[tuple[int, int, int], int]:
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        t = (v,)
    elif isinstance(v, (tuple, list)):
        t = tuple(v)
    else:                               # a float, a string, None: not a size (tuple() of it failed bare)
        raise InvalidValue(f"{what} is 1 to 3 positive integers, not {type(v).__name__}",
                           rule="OpenCL: work_dim 1..3", values={what: repr(v)[:40]})
    if not 1 <= len(t) <= 3 or any(isinstance(x, bool) or not isinstance(x, (int, np.integer)) or x < 1 for x in t):
        raise InvalidValue(f"{what} is 1 to 3 positive integers", rule="OpenCL: work_dim 1..3",
                           values={what: v})
    return tuple(int(x) for x in t) + (1,) * (3 - len(t)), len(t)


def run(kernel, global_size, local_size, args=(), *, device=None, sub_group_size: int | None = None,
        **renamed_keywords) -> None:
    """Run ``kernel(*args)`` over an ND-range, once per sub-group (see the module text).

    ``device``: the GPU platform (default pvc; ``platform=`` is its older name, DeprecationWarning).
    ``global_size`` must be a multiple of ``local_size`` in each dimension (OpenCL 1.2 uniform work-groups);
    ``sub_group_size`` defaults to the platform's matrix sub-group size (``intel_reqd_sub_group_size``). numpy
    arrays among ``args`` are passed as :class:`systolic.opencl.GlobalPtr` to their first element.
    """
    from greenlet import greenlet

    if renamed_keywords:                 # platform=: the older name of device= (systolic.vocabulary)
        device = renamed(renamed_keywords, {"platform": "device"}, "opencl.run", device=device)["device"]
    if not callable(kernel):
        raise InvalidValue("run needs a kernel: a Python function run once per sub-group",
                           rule="run(kernel, global_size, local_size, args=())",
                           values={"kernel": type(kernel).__name__})
    if not isinstance(args, (tuple, list)):
        raise InvalidValue("args is a tuple of the kernel's arguments", rule="run(kernel, global_size, local_size, "
                           "args=(...))", values={"args": type(args).__name__})
    P = get_platform(device)
    G, dim = _sizes(global_size, "global_size")
    L, ldim = _sizes(local_size, "local_size")
    if ldim != dim:
        raise InvalidValue("global_size and local_size have the same number of dimensions",
                           values={"global_size": global_size, "local_size": local_size})
    if any(g % loc for g, loc in zip(G, L)):
        raise InvalidValue("global_size must be a multiple of local_size in every dimension",
                           rule="OpenCL 1.2: uniform work-groups", values={"global_size": G, "local_size": L})
    S = P.matrix_subgroup_size if sub_group_size is None else sub_group_size
    if S not in P.subgroup_sizes:
        raise InvalidValue(f"{P.name} has no sub-group size {S}", rule=f"{P.name} sub-group sizes: "
                           f"{list(P.subgroup_sizes)}", values={"sub_group_size": S})
    args = tuple(GlobalPtr(a) if isinstance(a, np.ndarray) else a for a in args)
    wg = L[0] * L[1] * L[2]
    if wg > MAX_WORK_GROUP_SIZE:
        raise UnsupportedCombination(f"a work-group of {wg} work-items exceeds {P.name}'s maximum of "
                                     f"{MAX_WORK_GROUP_SIZE} (CL_INVALID_WORK_GROUP_SIZE)",
                                     rule="intel/compute-runtime device_caps.cpp: maxWorkGroupSize = "
                                          "min(threads x SIMD, 1024)",
                                     values={"local_size": L[:dim], "work_group_size": wg,
                                             "max": MAX_WORK_GROUP_SIZE})
    nsg = -(-wg // S)
    groups = [G[d] // L[d] for d in range(3)]
    try:
        order = itertools.product(range(groups[2]), range(groups[1]), range(groups[0]))
    except MemoryError:     # product() holds each range as a tuple: a global size this emulator cannot hold
        raise InvalidValue("the ND-range has more work-groups than this host can enumerate",
                           rule="the runner holds the work-group ids of each dimension in host memory",
                           values={"global_size": G[:dim], "local_size": L[:dim], "groups": groups[:dim]}) from None
    for gz, gy, gx in order:
        ctxs = []
        for sg in range(nsg):
            lin = sg * S + np.arange(S)
            valid = lin < wg
            ctxs.append(SubGroup(P, S, sg, nsg, (gx, gy, gz), L, G, dim, np.minimum(lin, wg - 1), valid.copy(),
                                 valid))
        _run_group(kernel, args, ctxs, greenlet)


def _run_group(kernel, args, ctxs, greenlet) -> None:
    lets = []
    for c in ctxs:
        g = greenlet(lambda *_: kernel(*args))
        c._greenlet = g
        lets.append(g)
    waiting: dict = {}
    resume: dict = {}
    ready = deque(range(len(ctxs)))
    while ready:
        i = ready.popleft()
        prev = current()
        _tls.ctx = ctxs[i]
        try:
            token = lets[i].switch(resume.pop(i, None))
        finally:
            _tls.ctx = prev
        if lets[i].dead:
            continue
        _, key, payload, members, complete = token
        slot = waiting.setdefault(key, ({}, members, complete))[0]
        slot[i] = payload
        if set(slot) == set(members):
            del waiting[key]
            prev = current()
            _tls.ctx = ctxs[i]
            try:
                out = complete(slot)
            finally:
                _tls.ctx = prev
            for j, v in out.items():
                resume[j] = v
                ready.append(j)
    if waiting:
        key, (slot, members, _) = next(iter(waiting.items()))
        raise DivergentCollective(f"{key[0]}: sub-groups {sorted(set(members) - set(slot))} finished without "
                                  "reaching it",
                                  rule="a work-group / split collective must be reached by every participating "
                                       "sub-group", values={"arrived": sorted(slot), "participants": list(members),
                                                            "group_id": ctxs[0].group_id})
