"""DPAS/DPASW register layouts checked against sources independent of our code.

* IGC's own coordinate formula (``DEFINE_GET_COORD`` of IBiF_matrix.cl), for every one-DPAS entry of its table;
* Triton-Intel's DPAS linear layouts (the expected bases of ``DPAStoLinearLayoutTest``, DPAS_perInst);
* sycl-tla's XE MMA atoms (CuTe thread-value layouts of every legacy ``MMA_Traits<XE_...>``);
* the engine itself: the packers of :mod:`systolic.xmx.pack` write the same images as ``Layout.scatter``, and a
  matrix scattered by the layouts into a GRF and run through the spec DPAS gives the exact product.

A sub-group view is the structure-of-arrays rule of SPV_INTEL_subgroup_matrix_multiply_accumulate ("Mapping
Matrix Data to Invocations"): component j of invocation i occupies image bits [(j*SG + i)*w, (j*SG + i + 1)*w).
The tests compute the expected image position from that rule and the peer's (work-item, index) -> (row, col)
map, and compare it with ``Layout.linear_bits()``; none of them calls the layout code to get an expected value.
"""

import json
import re
from pathlib import Path

import numpy as np
import pytest

from systolic.errors import IllegalInstruction, InvalidValue
from systolic.xmx import GRF, dpas, dpasw
from systolic.xmx import pack as PK
from systolic.xmx.layout import layout
from systolic.xmx.platform import get_platform, platform_names
from systolic.xmx.rules import precision_class

DATA = Path(__file__).resolve().parents[1] / "data" / "layouts"


def load(name):
    return json.loads((DATA / name).read_text())


def soa_bit(component, lane, sub, sg, w, elem_bits):
    return (component * sg + lane) * w + sub * elem_bits


# ------------------------------------------------------------------------------------------- IGC get_coord
IGC = load("igc_get_coord.json")


def igc_get_coord(e, wi, index):
    """DEFINE_GET_COORD, transcribed from the macro text stored with the data (C integer division)."""
    pack_factor = e["contrib_bits"] // e["elem_bits"]
    sg_cols = (e["C"] * e["VF"]) // pack_factor
    skip_factor = e["sg"] // sg_cols
    row = (wi // sg_cols + index // pack_factor * skip_factor) * e["VF"] + index % e["VF"]
    col = (wi % sg_cols * pack_factor + index % pack_factor) // e["VF"]
    return row, col


@pytest.mark.parametrize("e", IGC["entries"], ids=lambda e: f"{e['platform']}-{e['layout']}-{e['elem_bits']}-{e['R']}x{e['C']}")
def test_igc_get_coord(e):
    if e["R"] > 8 and e["layout"] != "PackedB":
        pytest.skip("a 16-row joint_matrix is two DPAS (the joint_matrix layer's map, not one register operand)")
    prec = {8: "s8", 16: "bf16", 32: "fp32"}[e["elem_bits"]]
    p1 = "bf16" if prec == "fp32" else prec
    if e["layout"] == "PackedA":
        L = layout(e["platform"], "src2", p1, rc=e["R"])
    elif e["layout"] == "PackedB":
        L = layout(e["platform"], "src1", p1)
    else:
        L = layout(e["platform"], "dst", p1, rc=e["R"])
    assert (L.rows, L.cols) == (e["R"], e["C"])          # R x C is the logical (un-VNNI'd) shape
    pack = e["contrib_bits"] // e["elem_bits"]
    n_idx = e["R"] * e["C"] // e["sg"]
    pos = L.linear_bits()
    seen = set()
    for wi in range(e["sg"]):
        for index in range(n_idx):
            r, c = igc_get_coord(e, wi, index)
            want = soa_bit(index // pack, wi, index % pack, e["sg"], e["contrib_bits"], e["elem_bits"])
            assert pos[r, c] == want, (wi, index, r, c)
            seen.add((r, c))
    assert len(seen) == L.rows * L.cols


# ------------------------------------------------------------------------------------------- Triton-Intel
TRITON = load("triton_dpas_linear_layouts.json")


def ll_apply(bases, x):
    out = [0, 0]
    for i, b in enumerate(bases):
        if x >> i & 1:
            out = [out[0] ^ b[0], out[1] ^ b[1]]
    return tuple(out)


@pytest.mark.parametrize("case", TRITON["cases"], ids=lambda c: f"op{c['opIdx']}-ops{c['opsPerChannel']}-tpw{c['threadsPerWarp']}")
def test_triton_dpas_linear_layout(case):
    assert case["executionSize"] == 16 and case["systolicDepth"] == 8 and case["repeatCount"] == 8
    prec = {1: "tf32", 2: "bf16", 4: "s8"}[case["opsPerChannel"]]
    bits = {"tf32": 32, "bf16": 16, "s8": 8}[prec]
    op = {0: "src2", 1: "src1", 2: "dst"}[case["opIdx"]]
    L = layout("pvc", op, prec)
    assert [L.rows, L.cols] == case["shape"]
    acc_bits = 32
    if op == "src1":
        w = 32
    elif op == "dst":
        w, bits = acc_bits, acc_bits
    else:
        w = max(bits, L.cols * bits // 16)  # A: K*bits per row spread over the 16 channels' lanes
    pack = w // bits
    sg = case["threadsPerWarp"]
    pos = L.linear_bits()
    seen = set()
    for lane in range(sg):
        for reg in range(1 << len(case["register"])):
            r, c = ll_apply(case["lane"], lane)
            r2, c2 = ll_apply(case["register"], reg)
            r, c = r ^ r2, c ^ c2
            want = soa_bit(reg // pack, lane, reg % pack, sg, w, bits)
            assert pos[r, c] == want, (lane, reg, r, c)
            seen.add((r, c))
    assert len(seen) == L.rows * L.cols


# ------------------------------------------------------------------------------------------- sycl-tla CuTe atoms
TLA = load("sycl_tla_xe_mma_atoms.json")


def parse_cute(text):
    """'Layout<Shape<...>, Stride<...>>' -> (shape, stride) as nested tuples of ints."""
    toks = re.findall(r"Shape|Stride|Layout|<|>|,|_\d+", text)
    pos = 0

    def node():
        nonlocal pos
        t = toks[pos]
        pos += 1
        if t.startswith("_"):
            return int(t[1:])
        assert toks[pos] == "<"
        pos += 1
        items = [node()]
        while toks[pos] == ",":
            pos += 1
            items.append(node())
        assert toks[pos] == ">"
        pos += 1
        return tuple(items)

    lay = node()
    return lay[0], lay[1]


def cute_eval(shape, stride, coord):
    """CuTe: a 1-D coordinate into a (nested) mode is split colexicographically, then dotted with the strides."""
    if isinstance(shape, int):
        return coord * stride
    total = 0
    for s, d in zip(shape, stride):
        size = int(np.prod(_flat(s)))
        total += cute_eval(s, d, coord % size)
        coord //= size
    return total


def _flat(s):
    return [s] if isinstance(s, int) else [x for y in s for x in _flat(y)]


def tla_types(atom):
    t = {"bfloat16_t": "bf16", "half_t": "fp16", "int8_t": "s8", "uint8_t": "u8", "tfloat32_t": "tf32",
         "float": "fp32", "int": "int32"}
    return t[atom["ValTypeA"]], t[atom["ValTypeD"]]


@pytest.mark.parametrize("atom", TLA["atoms"], ids=lambda a: a["atom"])
def test_sycl_tla_atoms(atom):
    M, N, K = (int(x.strip("_ ")) for x in atom["Shape_MNK"].split(","))
    assert N == 16 and atom["ThrID"] == "_16"
    p, dt = tla_types(atom)
    for name, op, rows, cols in (("ALayout", "src2", M, K), ("BLayout", "src1", K, N), ("CLayout", "dst", M, N)):
        L = layout("pvc", op, p, rc=M, dst_type=dt)
        assert (L.rows, L.cols) == (rows, cols)
        shape, stride = parse_cute(atom[name])
        n_thr, n_val = int(np.prod(_flat(shape[0]))), int(np.prod(_flat(shape[1])))
        holders = {}
        for t in range(n_thr):
            for v in range(n_val):
                idx = cute_eval(shape[0], stride[0], t) + cute_eval(shape[1], stride[1], v)
                if name == "ALayout":
                    r, c = idx % M, idx // M          # (M, K) column-major
                elif name == "BLayout":
                    c, r = idx % N, idx // N          # (N, K) column-major; our B is K x N
                else:
                    r, c = idx % M, idx // M          # (M, N) column-major
                holders.setdefault((r, c), set()).add((t, v))
        assert len(holders) == rows * cols, name
        w = L.params["lane_bits"]
        pack = w // L.element_bits
        for (r, c), tv in holders.items():
            s = L.lane_of(r, c)
            # the lane (and the value index = component * pack + slot) of our map is one CuTe gives
            assert (s["lane"], s["component"] * pack + s["bits_in_component"][0] // L.element_bits) in tv, \
                (name, r, c, s, tv)


# ------------------------------------------------------------------------------------------- the engine's packers
def combos():
    for pn in platform_names():
        P = get_platform(pn)
        for p1 in sorted(P.precisions):
            for p2 in sorted(P.precisions):
                if precision_class(p1) == precision_class(p2):
                    yield pn, p1, p2


def _raw(rng, shape, bits):
    return rng.integers(0, 1 << bits, size=shape, dtype=np.uint64).astype(np.uint32)


def _as_values(raw, prec):
    """Raw bits -> an array pack.py packs unchanged (its own dtype; tf32 in a float32 container)."""
    from systolic import types as T
    t = T.get(prec)
    if t.fmt is None:
        v = raw.astype(np.int64)
        if t.signed:
            v = np.where(v >= 1 << (t.bits - 1), v - (1 << t.bits), v)
        return v
    if prec == "tf32":
        return (raw & np.uint32(0xFFFFE000)).view(np.float32)
    return raw.astype({8: np.uint8, 16: np.uint16, 4: np.uint8}[t.bits]).view(t.dtype)


@pytest.mark.parametrize("pn,p1,p2", list(combos()))
def test_packers_write_the_layouts(pn, p1, p2):
    rng = np.random.default_rng(1)
    a_l = layout(pn, "src2", p1, p2, rc=5)
    b_l = layout(pn, "src1", p1, p2)
    for L, packer, prec in ((a_l, PK.pack_src2, p2), (b_l, PK.pack_src1, p1)):
        raw = _raw(rng, L.shape, L.element_bits)
        if prec == "tf32":
            raw &= np.uint32(0xBFFFE000)   # tf32 bits (low 13 clear), no NaN (pack.py makes NaNs canonical)
        img = packer(_as_values(raw, prec), prec)
        np.testing.assert_array_equal(img, L.scatter(raw, nbytes=img.size))
        np.testing.assert_array_equal(L.gather(img), raw)
    dst_types = get_platform(pn).acc_types[precision_class(p1)]
    for t in dst_types:
        L = layout(pn, "dst", p1, p2, rc=3, dst_type=t)
        raw = _raw(rng, L.shape, L.element_bits)
        vals = raw.view(np.int32) if t == "int32" else raw if t == "u32" else _as_values(raw, t) if t != "fp32" \
            else raw.view(np.float32)
        img = PK.pack_acc(vals, t)
        np.testing.assert_array_equal(img, L.scatter(raw, nbytes=img.size))


@pytest.mark.parametrize("pn", ["dg2", "pvc"])
def test_layouts_drive_the_spec_dpas(pn):
    """Scatter A, B, C by the layouts into a GRF, run the spec DPAS, gather D by its layout: the exact product."""
    rng = np.random.default_rng(7)
    la, lb, lc = (layout(pn, op, "s8", "u8", rc=7) for op in ("src2", "src1", "src0"))
    ld = layout(pn, "dst", "s8", "u8", rc=7)
    A = rng.integers(0, 256, size=la.shape)
    B = rng.integers(-128, 128, size=lb.shape)
    C = rng.integers(-2**31, 2**31, size=lc.shape)
    g = GRF(pn)
    gb = g.grf_bytes
    g.write(0, la.scatter(A.astype(np.uint32)))
    g.write(8 * gb, lb.scatter((B & 0xFF).astype(np.uint32)))
    g.write(20 * gb, lc.scatter((C & 0xFFFFFFFF).astype(np.uint32)))
    dpas(g, dst=40 * gb, src0=20 * gb, src1=8 * gb, src2=0, dst_type="d", src1_precision="s8",
         src2_precision="u8", rc=7, device=pn)
    D = ld.gather(g.read(40 * gb, ld.image_bits() // 8)).astype(np.int64)
    exact = [[(int(C[i, j]) + sum(int(A[i, k]) * int(B[k, j]) for k in range(la.cols))) % 2**32
              for j in range(ld.cols)] for i in range(ld.rows)]
    np.testing.assert_array_equal(D, np.array(exact))


def test_dpasw_split_layout_drives_dpasw():
    """DPASW's Src2 layout: EU0 holds the first (NGrf+1)//2 GRFs of A, EU1 the rest (DPASW.md)."""
    la = layout("dg2", "a", "s8", rc=7, opcode="dpasw")
    assert la.holder == ("eu", "grf", "dword")
    assert la.params["eu_grfs"] == (4, 3)                 # 7 rows x 32 bytes = 7 GRFs
    assert la.where(3, 0)["eu"] == 0 and la.where(4, 0) == {"row": 4, "col": 0, "eu": 1, "grf": 0, "dword": 0,
                                                            "bits": (0, 7)}
    lb = layout("dg2", "b", "s8", opcode="dpasw")
    ld = layout("dg2", "d", "s8", rc=7, opcode="dpasw")
    rng = np.random.default_rng(3)
    A = rng.integers(-128, 128, size=la.shape)
    B0, B1 = (rng.integers(-128, 128, size=lb.shape) for _ in range(2))
    g0, g1 = GRF("dg2"), GRF("dg2")
    img = la.scatter((A & 0xFF).astype(np.uint32))
    eu0 = la.params["eu_grfs"][0] * 32
    g0.write(0, img[:eu0])                                 # EU0's Src2 part
    g1.write(0, img[eu0:])                                 # EU1's Src2 part
    g0.write(32 * 8, lb.scatter((B0 & 0xFF).astype(np.uint32)))
    g1.write(32 * 8, lb.scatter((B1 & 0xFF).astype(np.uint32)))
    dpasw(g0, pair=g1, dst=32 * 20, src0=None, src1=32 * 8, src2=0, dst_type="d", src1_precision="s8",
          src2_precision="s8", rc=7, device="dg2")
    for g, B in ((g0, B0), (g1, B1)):
        D = ld.gather(g.read(32 * 20, ld.image_bits() // 8)).view(np.int32)
        np.testing.assert_array_equal(D, A @ B)


def test_layout_errors_are_dpas_errors():
    with pytest.raises(IllegalInstruction):
        layout("pvc", "a", "bf16", rc=9)
    with pytest.raises(IllegalInstruction):
        layout("pvc", "a", "bf16", opcode="dpasw")     # no DPASW on PVC
    with pytest.raises(InvalidValue):
        layout("pvc", "e", "bf16")
    L = layout("pvc", "b", "bf16")
    with pytest.raises(InvalidValue):
        L.where(16, 0)


def test_valid_maps_everywhere():
    for pn, p1, p2 in combos():
        for op in ("src2", "src1", "dst"):
            L = layout(pn, op, p1, p2, rc=8)
            assert L.overlaps() == [] and L.held().all()
