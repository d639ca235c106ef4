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
from systolic.compiler.tileconfig import observed_configs
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


def count_calls(steps) -> int:
    """Calls of the helper in the traced kernel: if_ traces both arms, for_range its body once."""
    return sum(1 if s[0] == "call" else count_calls(s[2]) + count_calls(s[3]) if s[0] == "if" else
               count_calls(s[2]) if s[0] == "loop" else 0 for s in steps)


def _writes_tile(steps) -> bool:
    return any(s[0] in ("dot", "load", "zero") or (s[0] == "if" and (_writes_tile(s[2]) or _writes_tile(s[3])))
               or (s[0] == "loop" and _writes_tile(s[2])) for s in steps)


def unobserved_reloads(steps, zero_stays: bool = True) -> int:
    """How many of the configuration reloads after the kernel's calls no tile instruction runs under: from the
    call, every path of the *program* meets another call before any tile step (dot, load, zero, the final
    stores). The kernel starts with tile loads and ends with tile stores, so its entry load and the helper's are
    always observed; what config-prune drops here is a reload followed only by another call (docs/compiler.md:
    config-prune follows each path until a tile instruction, a call, ret or another LDTILECFG).

    ``zero_stays``: a zero step is a tile instruction where it stands, and so is the end of each edge into a
    join whose tiles merge (an if whose arms write a tile, a loop header whose body does: the allocator's phi
    copies or spill stores go there). False: neither is (a tile only tilezero defines is made again before its
    uses, which are tile steps of their own; phi copies coalesced away). The two readings bound the count.
    The steps become a graph of nodes ("tile" | "call" | "join") built here, independently of the compiler."""
    kind, succ = [], []

    def node(k):
        kind.append(k)
        succ.append([])
        return len(kind) - 1

    def edge(src, merges):
        """The end of an edge into a join: a node of its own where tiles merge there (phi copies)."""
        if not merges:
            return src
        n = node("tile" if zero_stays else "join")
        succ[src].append(n)
        return n

    def seq(steps, entry):
        """Nodes for ``steps`` entered from node ``entry``; returns the node they leave from."""
        cur = entry
        for s in steps:
            if s[0] in ("dot", "load", "zero", "call"):
                n = node({"call": "call", "zero": "tile" if zero_stays else "join"}.get(s[0], "tile"))
                succ[cur].append(n)
                cur = n
            elif s[0] == "if":
                join = node("join")
                for arm in (s[2], s[3]):
                    head = node("join")
                    succ[cur].append(head)
                    succ[edge(seq(arm, head), _writes_tile(s[2]) or _writes_tile(s[3]))].append(join)
                cur = join
            else:                                         # for_range(0, n): zero or more trips
                header, body = node("join"), node("join")
                merges = _writes_tile(s[2])
                succ[edge(cur, merges)].append(header)
                succ[header].append(body)
                succ[edge(seq(s[2], body), merges)].append(header)
                exit_ = node("join")
                succ[header].append(exit_)
                cur = exit_
        return cur

    start = node("tile")                                  # the kernel's loads of every tile
    succ[seq(steps, start)].append(node("tile"))          # ... and its stores of every tile before ret
    unobserved = 0
    for c in (n for n, k in enumerate(kind) if k == "call"):
        seen, work, hit = set(succ[c]), list(succ[c]), False
        while work and not hit:
            n = work.pop()
            if kind[n] == "tile":
                hit = True
            elif kind[n] == "join":
                work += [m for m in succ[n] if m not in seen]
                seen.update(succ[n])
        unobserved += not hit
    return unobserved


def test_unobserved_reloads_by_hand():
    dot, call = ("dot", "tdpbssd", 0, 1, 2), ("call", 0)
    assert unobserved_reloads([dot, call, dot]) == 0
    assert unobserved_reloads([call, call]) == 1                      # the first call's reload
    assert unobserved_reloads([call, call, call]) == 2
    assert unobserved_reloads([("loop", 0, [call])]) == 0             # the loop may exit to the final stores
    assert unobserved_reloads([("if", 0, [call], [call]), call]) == 2
    assert unobserved_reloads([("if", 0, [call], [dot]), call], zero_stays=False) == 1
    assert unobserved_reloads([("if", 0, [call], [dot]), call]) == 0         # the phi copies after the arm's call
    assert unobserved_reloads([("if", 0, [call], [call]), call], zero_stays=True) == 2
    assert unobserved_reloads([call, ("if", 0, [call], [dot])]) == 0  # one path reaches a dot
    assert unobserved_reloads([call, ("zero", 0), call]) == 0
    assert unobserved_reloads([call, ("zero", 0), call], zero_stays=False) == 1
    assert count_calls([call, ("if", 0, [call], [("loop", 1, [call, dot])])]) == 3


#: SYSTOLIC_SOAK=N runs N times as many generated programs (the CI default stays fast)
SOAK = int(os.environ.get("SYSTOLIC_SOAK", "1"))
SCALARS = {"sel": "i32", "cnt0": "i32", "cnt1": "i32", "cnt2": "i32"}


def check(prog, sel, counts, seed, backend="cpu"):
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
    assert calls == count_calls(prog["steps"])
    # one each, and again after every call, less those no tile instruction runs under (docs/compiler.md,
    # config-prune), worked out from the program's own steps, not from the compiler's report
    # a tile only tilezero defines is made again before its uses when it would be spilled (docs/compiler.md,
    # assign), so a zero step may leave its place, and phi copies may sit after a call at the end of an arm or
    # a loop body: the count lies between the two readings (equal when no tile merges and no zero step)
    lo, hi = unobserved_reloads(prog["steps"], True), unobserved_reloads(prog["steps"], False)
    assert 2 + calls - hi <= machine.count("LDTILECFG") <= 2 + calls - lo, prog["steps"]
    for f in compiled.machine.functions.values():
        if not f.declaration:
            assert not observed_configs(f)[1], f"{f.name}: an LDTILECFG no tile instruction runs under"


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


def test_back_to_back_calls_reload_the_configuration_once():
    """The reload after the first of two calls runs under no tile instruction: config-prune drops it."""
    prog = {"shapes": {"c0": (4, 16), "a0": (4, 16), "b0": (4, 16)}, "roles": ["c0", "a0", "b0"] * 3,
            "dims": [(4, 4, 4)], "dynamic": False,
            "steps": [("dot", "tdpbssd", 0, 1, 2), ("call", 0), ("call", 64), ("dot", "tdpbssd", 3, 4, 5)]}
    compiled = check(prog, 0, (0, 0, 0), 7)
    assert unobserved_reloads(prog["steps"]) == 1
    assert compiled.emit("machine").count("LDTILECFG") == 2 + 2 - 1
    assert not observed_configs(compiled.machine.function("kernel"))[1]
