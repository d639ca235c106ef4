"""Calling a built-in: overload resolution, argument checks, convergence, then the lowering.

OpenCL overloads each name by argument types; the overload is chosen the way a C compiler would, from the
platform's sub-group size (the sub-group 8 or 16 forms), the accumulator's component count (M) and its type
(``float`` vs ``short`` (bf16) vs ``half`` vs ``int``). Then ``a``, ``b`` and ``acc`` must have exactly the
signature's types (shape ``(S,)`` or ``(S, n)``, the C type's dtype), else :class:`~systolic.errors.InvalidValue`;
a built-in the platform lacks raises :class:`~systolic.errors.UnsupportedCombination`; a call under a partial
execution mask :class:`~systolic.errors.DivergentCollective`.
"""

from __future__ import annotations

import numpy as np

from ..errors import DivergentCollective, InvalidValue, UnsupportedCombination
from ..vocabulary import check_path, renamed
from ..xmx.platform import get_platform
from . import lowering as LW
from . import mapping as MP
from . import table as TB
from .cltypes import check_value
from .runner import collective, current, require_converged

__all__ = ["call"]


def _platform(name, platform):
    c = current()
    if platform is None:
        return MP.platform_for(name)
    P = get_platform(platform)
    if c is not None and P is not c.platform:
        raise InvalidValue("a built-in inside a kernel runs on the kernel's platform",
                           values={"platform": P.name, "kernel_platform": c.platform.name})
    return P


def _choose(name: str, here: list[TB.Builtin], acc: np.ndarray, s: int) -> TB.Builtin:
    if acc.ndim == 0 or acc.shape[0] != s:
        raise InvalidValue(f"{name}: acc's leading axis is the work-item and must have the sub-group size {s}",
                           rule="per-work-item arguments: shape (S,) or (S, components), S = sub-group size",
                           values={"argument": "acc", "shape": acc.shape, "sub_group_size": s})
    ncomp = 1 if acc.ndim == 1 else (acc.shape[1] if acc.ndim == 2 else -1)
    for r in here:
        if r.acc_type.n == ncomp and r.acc_type.dtype == acc.dtype:
            return r
    raise InvalidValue(f"{name} has no overload taking this acc",
                       rule="acc types of this built-in here: " + ", ".join(sorted(
                           {f"{r.acc_type.name} ({r.acc_type.dtype}, shape {r.acc_type.shape(s)})" for r in here})),
                       values={"shape": acc.shape, "dtype": str(acc.dtype)})


def call(name: str, a, b, acc, *, device=None, model=None, path: str | None = None, **renamed_keywords):
    """Execute built-in ``name`` with per-work-item arguments (see :mod:`systolic.opencl`). ``device``: the GPU
    platform; ``path``: "fast" (default) or "spec" (``platform=`` / ``engine=`` are the older names,
    DeprecationWarning; an older and its new keyword both given is InvalidValue)."""
    if renamed_keywords:                 # path=None: not given, so engine= beside any given path= is InvalidValue
        new = renamed(renamed_keywords, {"platform": "device", "engine": "path"}, name, device=device, path=path)
        device, path = new["device"], new["path"]
    path = check_path("fast" if path is None else path, name)
    P = _platform(name, device)
    recs = TB.by_name(name)
    here = [r for r in recs if MP.available(r, P) is None]
    if not here:
        MP.resolve(name, P)  # raises UnsupportedCombination with the reason
    s = P.matrix_subgroup_size
    ctx = current()
    if ctx is not None and ctx.size != s:
        raise UnsupportedCombination(f"{name} needs sub-group size {s} on {P.name}; the kernel runs with "
                                     f"{ctx.size}", rule="the built-ins need the device's minimum sub-group size",
                                     values={"sub_group_size": ctx.size})
    accv = np.asarray(acc)
    split = here[0].split
    if split and ctx is not None and not (accv.ndim >= 1 and accv.shape[0] == 2 and accv.ndim >= 2
                                          and accv.shape[1] == s):
        return _split_in_kernel(name, here, a, b, accv, P, model, ctx)
    if split:
        if accv.ndim < 2 or accv.shape[0] != 2:
            raise InvalidValue(f"{name}: a split built-in called outside a kernel takes both sub-groups' values, "
                               "a leading axis of 2", rule="split: work items of two sub-groups cooperate",
                               values={"acc_shape": accv.shape})
        rec = _choose(name, here, accv[0], s)
        av, bv, cv = (_check2(x, t, s, w) for x, t, w in
                      ((a, rec.a_type, "a"), (b, rec.b_type, "b"), (accv, rec.acc_type, "acc")))
        require_converged(name)
        return LW.execute_split(rec, av, bv, cv, P, model=model)
    rec = _choose(name, here, accv, s)
    av = check_value(a, rec.a_type, s, "a")
    bv = check_value(b, rec.b_type, s, "b")
    cv = check_value(accv, rec.acc_type, s, "acc")
    require_converged(name)
    return LW.execute(rec, av, bv, cv, P, model=model, path=path)


def _check2(x, t, s, what):
    v = np.asarray(x)
    if v.ndim == 0 or v.shape[0] != 2:
        raise InvalidValue(f"{what}: a split built-in takes one slice per participating sub-group (leading axis 2)",
                           values={"argument": what, "shape": v.shape})
    return np.stack([check_value(v[i], t, s, f"{what}[{i}]") for i in range(2)])


def _split_in_kernel(name, here, a, b, acc, P, model, ctx):
    """Inside a kernel: this sub-group's half; rendezvous with its partner (sub-groups 2p, 2p+1)."""
    s = ctx.size
    rec = _choose(name, here, acc, s)
    av = check_value(a, rec.a_type, s, "a")
    bv = check_value(b, rec.b_type, s, "b")
    cv = check_value(acc, rec.acc_type, s, "acc")
    require_converged(name)
    me = ctx.sub_group_id
    pair = (me - me % 2, me - me % 2 + 1)
    if pair[1] >= ctx.num_sub_groups:
        raise UnsupportedCombination(f"{name}: sub-group {me} has no partner sub-group",
                                     rule="split built-ins pair sub-groups 2p and 2p+1 of a work-group: the "
                                          "work-group needs an even number of sub-groups",
                                     values={"num_sub_groups": ctx.num_sub_groups})
    seq = ctx.next_seq("split")

    def complete(slot):
        r0, r1 = slot[pair[0]][0], slot[pair[1]][0]
        if r0 is not r1 or slot[pair[0]][4] != slot[pair[1]][4]:
            raise DivergentCollective(f"the two sub-groups of a split call disagree: {r0.signature} vs "
                                      f"{r1.signature}", rule="both sub-groups execute the same split built-in",
                                      values={"sub_groups": pair})
        out = LW.execute_split(r0, np.stack([slot[i][1] for i in pair]), np.stack([slot[i][2] for i in pair]),
                               np.stack([slot[i][3] for i in pair]), P, model=model)
        return {pair[0]: out[0], pair[1]: out[1]}

    return collective(("split", pair, seq), (rec, av, bv, cv, str(model)), pair, complete)
