"""Hypothesis-generated tile programs (more live tiles than 8, loops, branches) compiled and run, equal to eager
execution of the same Python function (the intrinsics one at a time on a TileMachine).

A program is data (a list of steps); :func:`build` turns it into a Python function written with
systolic.amx.intrinsics and tracing.if_/for_range, which is both traced (-> IR -> compiler -> TileMachine) and
run eagerly. Every tile is loaded at the start and stored at the end, so 9-14 tiles are live throughout.
"""

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from systolic.amx import intrinsics as I
from systolic.compiler import compile_module
from systolic.compiler.tracing import call, for_range, if_, run_eager, trace
from systolic.errors import SystolicError

from .helpers import native

ABUF, CBUF = 8192, 16384
DOTS = ["tdpbssd", "tdpbsud", "tdpbusd", "tdpbuud", "tdpbf16ps"]


@st.composite
def programs(draw, max_tiles=14):
    """A random tile program: 1-2 groups of (M, K, N) each giving C (M x 4N), A (M x 4K) and B (K x 4N) tiles;
    shapes are constants or, when ``dynamic``, i16 arguments of the function (run-time shapes)."""
    groups = draw(st.integers(1, 2))
    dims = [(draw(st.integers(1, 16)), draw(st.integers(1, 16)), draw(st.integers(1, 16))) for _ in range(groups)]
    shapes = {}
    for g, (M, K, N) in enumerate(dims):
        shapes.update({f"c{g}": (M, 4 * N), f"a{g}": (M, 4 * K), f"b{g}": (K, 4 * N)})
    n = draw(st.integers(9, max_tiles))
    keys = sorted(shapes)
    roles = keys + [draw(st.sampled_from(keys)) for _ in range(n - len(keys))]
    roles = draw(st.permutations(roles))
    by = {k: [i for i, x in enumerate(roles) if x == k] for k in keys}

    def load():
        t = draw(st.integers(0, n - 1))
        rows, cols = shapes[roles[t]]
        stride = draw(st.sampled_from([64, 128, cols]))
        hi = ABUF - ((rows - 1) * stride + cols) - 64
        off = draw(st.integers(0, max(0, hi) // 4)) * 4
        return ("load", t, off, stride, draw(st.booleans()))

    def dot():
        g = draw(st.integers(0, groups - 1))
        return ("dot", draw(st.sampled_from(DOTS)), draw(st.sampled_from(by[f"c{g}"])),
                draw(st.sampled_from(by[f"a{g}"])), draw(st.sampled_from(by[f"b{g}"])))

    def steps(depth):
        out = []
        for _ in range(draw(st.integers(1, 5))):
            kind = draw(st.sampled_from(["dot", "dot", "load", "zero", "if", "loop", "call"] if depth < 2 else
                                        ["dot", "dot", "load", "zero"]))
            if kind == "dot":
                out.append(dot())
            elif kind == "load":
                out.append(load())
            elif kind == "zero":
                out.append(("zero", draw(st.integers(0, n - 1))))
            elif kind == "if":
                out.append(("if", draw(st.integers(0, 3)), steps(depth + 1), steps(depth + 1)))
            elif kind == "call":
                out.append(("call", draw(st.integers(0, 127)) * 4))
            else:
                out.append(("loop", draw(st.integers(0, 2)), steps(depth + 1)))
        return out

    body = steps(0)
    if draw(st.integers(0, 9)) == 0:  # a last load past the end of A: MemoryFault in both executions
        body.append(("load", draw(st.integers(0, n - 1)), ABUF - 2, 64, False))
    return {"shapes": shapes, "dims": dims, "roles": roles, "steps": body, "dynamic": draw(st.booleans())}


def dim_args(prog) -> dict[str, int]:
    """The i16 shape arguments of a dynamic program: rows M, K and byte widths 4N, 4K per group."""
    out = {}
    if prog["dynamic"]:
        for g, (M, K, N) in enumerate(prog["dims"]):
            out.update({f"M{g}": M, f"K{g}": K, f"N4{g}": 4 * N, f"K4{g}": 4 * K})
    return out


def helper(o, A, C):
    """A tile function of its own, called from generated programs: tiles do not survive calls."""
    t, u, v = I.Tile(16, 64), I.Tile(16, 64), I.Tile(16, 64)
    I.tile_loadd(t, A + o, 64)
    I.tile_loadd(u, A + 2048, 64)
    I.tile_loadd(v, A + 4096, 64)
    I.tile_dpbssd(t, u, v)
    I.tile_stored(C + 15 * 1024, 64, t)


def build(prog):
    shapes, roles = prog["shapes"], prog["roles"]

    def kernel(sel, cnt0, cnt1, cnt2, A, C, **dims):
        counts = (cnt0, cnt1, cnt2)
        if prog["dynamic"]:
            def shape(key):
                g = key[1]
                return {"c": (dims[f"M{g}"], dims[f"N4{g}"]), "a": (dims[f"M{g}"], dims[f"K4{g}"]),
                        "b": (dims[f"K{g}"], dims[f"N4{g}"])}[key[0]]
        else:
            shape = shapes.__getitem__
        tiles = [I.Tile(*shape(r)) for r in roles]
        for k, t in enumerate(tiles):
            I.tile_loadd(t, A + 4 * k, 64)

        def run(steps):
            for s in steps:
                if s[0] == "load":
                    _, t, off, stride, stream = s
                    (I.tile_stream_loadd if stream else I.tile_loadd)(tiles[t], A + off, stride)
                elif s[0] == "zero":
                    I.tile_zero(tiles[s[1]])
                elif s[0] == "dot":
                    _, mn, c, a, b = s
                    getattr(I, "tile_" + mn[1:])(tiles[c], tiles[a], tiles[b])
                elif s[0] == "call":
                    call(helper, o=s[1], A=A, C=C)
                elif s[0] == "if":
                    _, k, then, other = s
                    if_(sel == k, lambda then=then: run(then), lambda other=other: run(other))
                else:
                    _, which, body = s
                    for_range(0, counts[which], lambda i, body=body: run(body))

        run(prog["steps"])
        for k, t in enumerate(tiles):
            I.tile_stored(C + 1024 * k, 64, t)

    return kernel


#: SYSTOLIC_SOAK=N runs N times as many generated programs (the CI default stays fast)
SOAK = int(os.environ.get("SYSTOLIC_SOAK", "1"))
SCALARS = {"sel": "i32", "cnt0": "i32", "cnt1": "i32", "cnt2": "i32"}


def check(prog, sel, counts, seed, backend="emulator"):
    kernel = build(prog)
    dims = dim_args(prog)
    module = trace(helper, scalars={"o": "i32"}, buffers={"A": ABUF, "C": CBUF})
    module = trace(kernel, scalars={**SCALARS, **{k: "i16" for k in dims}}, buffers={"A": ABUF, "C": CBUF},
                   module=module)
    compiled = compile_module(module)
    rng = np.random.default_rng(seed)
    A = rng.integers(0, 256, ABUF, dtype=np.uint8)
    C1, C2 = np.zeros(CBUF, np.uint8), np.zeros(CBUF, np.uint8)
    args = dict(sel=sel, cnt0=counts[0], cnt1=counts[1], cnt2=counts[2], **dims)
    pos = list(args.values())
    try:
        run_eager(kernel, scalars=args, buffers={"A": A.copy(), "C": C2})
        expect = None
    except SystolicError as e:
        expect = type(e)
    if expect is None:
        compiled.run(kernel.__name__, *pos, memory={"A": A.copy(), "C": C1}, backend=backend)
        assert np.array_equal(C1, C2)
        # the traced IR interpreted one intrinsic at a time agrees too
        C3 = np.zeros(CBUF, np.uint8)
        compiled.run_eager(kernel.__name__, *pos, memory={"A": A.copy(), "C": C3})
        assert np.array_equal(C3, C2)
    else:
        with pytest.raises(expect):
            compiled.run(kernel.__name__, *pos, memory={"A": A.copy(), "C": C1}, backend=backend)
    return compiled


@settings(max_examples=30 * SOAK, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(prog=programs(), sel=st.integers(0, 3), counts=st.tuples(*[st.integers(0, 3)] * 3),
       seed=st.integers(0, 2 ** 32 - 1))
def test_compiled_equals_eager(prog, sel, counts, seed):
    compiled = check(prog, sel, counts, seed)
    assert len(prog["roles"]) > 8
    info = compiled.info["kernel"]
    assert info["spilled"], "more tiles than registers are live: the allocator must spill"
    # LLVM accepts our physical-register IR (its verifier runs) and emits the AMX instructions for it
    asm = compiled.emit("asm")
    machine = compiled.emit("machine")
    # (LLVM may merge identical tails, e.g. a call + ldtilecfg at the end of both arms of an if)
    assert 1 <= asm.count("ldtilecfg") <= machine.count("LDTILECFG")
    assert 2 <= asm.count("tilerelease") <= machine.count("TILERELEASE") == 2  # helper and kernel
    calls = sum(1 for line in machine.splitlines() if line.strip().startswith("call void @helper"))
    # one each, and again after every call, less those no tile instruction runs under (tileconfig.prune_config:
    # a call before the first tile instruction, a last call before ret)
    pruned = sum(f.meta["tilecfg"]["pruned"] for f in compiled.machine.functions.values()
                 if not f.declaration and f.meta.get("tilecfg"))
    assert machine.count("LDTILECFG") == 2 + calls - pruned


def test_a_fixed_program_with_every_construct():
    prog = {"shapes": {"c0": (16, 64), "a0": (16, 64), "b0": (16, 64)}, "roles": ["c0", "a0", "b0"] * 4,
            "dims": [(16, 16, 16)], "dynamic": False,
            "steps": [("dot", "tdpbssd", 0, 1, 2),
                      ("loop", 0, [("dot", "tdpbusd", 3, 4, 5), ("load", 4, 64, 128, False),
                                   ("if", 1, [("zero", 6)], [("dot", "tdpbf16ps", 9, 10, 11)])]),
                      ("if", 0, [("loop", 1, [("dot", "tdpbuud", 0, 7, 8)])], [("load", 1, 0, 64, True)])]}
    for sel in range(3):
        for counts in [(0, 0, 0), (2, 3, 0), (3, 1, 1)]:
            check(prog, sel, counts, seed=sel * 10 + counts[0])


def test_a_program_whose_shapes_the_hardware_rejects_faults_the_same_way():
    # K = 4 dwords in A, but B has 5 rows: TDPBSSD raises #UD in both executions
    prog = {"shapes": {"c0": (4, 16), "a0": (4, 16), "b0": (5, 16)}, "roles": ["c0", "a0", "b0"] * 3,
            "dims": [(4, 4, 4)], "dynamic": False, "steps": [("dot", "tdpbssd", 0, 1, 2)]}
    check(prog, 0, (0, 0, 0), 1)


@native
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prog=programs(), sel=st.integers(0, 3), counts=st.tuples(*[st.integers(0, 3)] * 3),
       seed=st.integers(0, 2 ** 32 - 1))
def test_native_equals_eager(prog, sel, counts, seed):
    """On a CPU with AMX: the compiled program with each tile instruction on silicon, then JIT-compiled whole."""
    check(prog, sel, counts, seed, backend="native")
    check(prog, sel, counts, seed, backend="llvm")
