"""Golden layout tests: the worked examples of SPV_INTEL_subgroup_matrix_multiply_accumulate,
"Mapping Matrix Data to Invocations" (KhronosGroup/SPIRV-Registry, revision 1, 2025-01-07), transcribed from
the text.

In a SIMD-N kernel, component j of every invocation's vector lies in register row j, invocation i's value at
position i (structure of arrays). The DPAS operands are exactly those register images, so each example's
listing, laid out that way, must equal our packing of the logical matrix. Element (r, c) is given the value
16*r + c so that every element is distinct.
"""

import numpy as np
import pytest

from systolic.xmx import GRF, dpas
from systolic.xmx import pack as PK


def val(rc: str) -> int:
    r, c = (int(x) for x in rc.replace(".", ",").split(","))  # the text writes "1.7" once for "1,7"
    return 16 * r + c


def soa_image(listing, elem_bits, value=None):
    """Per-invocation component listings -> the register bytes (component rows, invocations across)."""
    n_inv = len(listing)
    n_comp = max(len(v) for v in listing.values())
    comp_bits = max(len(x.split("|")) for v in listing.values() for x in v) * elem_bits
    rows = []
    for j in range(n_comp):
        row = 0
        for i in range(n_inv):
            comps = listing[i]
            word = 0
            if j < len(comps) and comps[j] is not None:
                # "hi | ... | lo": the last listed value is in the lowest bits
                for pos, rc in enumerate(reversed([s.strip() for s in comps[j].split("|")])):
                    word |= (value or val)(rc) << (pos * elem_bits)
            row |= word << (i * comp_bits)
        rows.append(row.to_bytes(n_inv * comp_bits // 8, "little"))
    return np.frombuffer(b"".join(rows), dtype=np.uint8)


def logical(m, k):
    return np.array([[16 * r + c for c in range(k)] for r in range(m)])


# Example 1: Matrix A, M=2, K=4, N=4 (N == K)
EX1 = {0: ["0,0", "1,0"], 1: ["0,1", "1,1"], 2: ["0,2", "1,2"], 3: ["0,3", "1,3"]}
# Example 2: Matrix A, M=2, K=8, N=4 (N < K)
EX2 = {0: ["0,1 | 0,0", "1,1 | 1,0"], 1: ["0,3 | 0,2", "1,3 | 1,2"], 2: ["0,5 | 0,4", "1,5 | 1,4"],
       3: ["0,7 | 0,6", "1.7 | 1,6"]}
# Example 3: Matrix A, M=4, K=2, N=4 (N > K)
EX3 = {0: ["0,0", "2,0"], 1: ["0,1", "2,1"], 2: ["1,0", "3,0"], 3: ["1,1", "3,1"]}
# Example 4: Matrix A, M=1, K=2, N=4: invocations 2 and 3 are ignored
EX4 = {0: ["0,0"], 1: ["0,1"]}
# Example 5: Matrix B, K=8, N=4, 8-bit data
EX5 = {i: [f"3,{i} | 2,{i} | 1,{i} | 0,{i}", f"7,{i} | 6,{i} | 5,{i} | 4,{i}"] for i in range(4)}
# Example 6: Matrix B, K=4, N=4, 16-bit data
EX6 = {i: [f"1,{i} | 0,{i}", f"3,{i} | 2,{i}"] for i in range(4)}
# Example 7: Matrix B, K=2, N=4, 32-bit data
EX7 = {i: [f"0,{i}", f"1,{i}"] for i in range(4)}
# Examples 8 and 9: Matrix C and the Result, M=2, N=4
EX8 = {i: [f"0,{i}", f"1,{i}"] for i in range(4)}


@pytest.mark.parametrize("listing,m,k,prec,bits", [
    (EX1, 2, 4, "u8", 8), (EX1, 2, 4, "bf16", 16), (EX2, 2, 8, "u8", 8), (EX2, 2, 8, "fp16", 16),
    (EX3, 4, 2, "u8", 8), (EX3, 4, 2, "tf32", 32)])
def test_matrix_a_examples(listing, m, k, prec, bits):
    a = logical(m, k)
    if prec == "tf32":
        # tf32 keeps the top 19 bits of a dword: carry the element id in bits 16 and up
        img = PK.pack_src2((a.astype(np.uint32) << 16).view(np.float32), prec)
        img = (img.view("<u4") >> 16).astype("<u4").view(np.uint8)
    elif prec in ("bf16", "fp16"):
        img = PK.pack_src2(a.astype(np.uint16).view(PK.acc_dtype(prec)), prec)
    else:
        img = PK.pack_src2(a, prec)
    np.testing.assert_array_equal(img, soa_image(listing, bits))


def test_matrix_a_example_4_ignores_extra_invocations():
    a = logical(1, 2)
    img = PK.pack_src2(a, "u8")
    np.testing.assert_array_equal(img, soa_image(EX4, 8))


@pytest.mark.parametrize("listing,k,prec,bits", [(EX5, 8, "u8", 8), (EX6, 4, "fp16", 16)])
def test_matrix_b_packed_examples(listing, k, prec, bits):
    b = logical(k, 4)
    vals = b if prec == "u8" else b.astype(np.uint16).view(np.float16)
    np.testing.assert_array_equal(PK.pack_src1(vals, prec), soa_image(listing, bits))


def test_matrix_b_32bit_example():
    b = (logical(2, 4).astype(np.uint32) << 16).view(np.float32)
    img = (PK.pack_src1(b, "tf32").view("<u4") >> 16).astype("<u4").view(np.uint8)
    np.testing.assert_array_equal(img, soa_image(EX7, 32))


def test_matrix_c_and_result_examples():
    c = logical(2, 4)
    np.testing.assert_array_equal(PK.pack_acc(c.astype(np.int32), "int32"), soa_image(EX8, 32))
    np.testing.assert_array_equal(PK.unpack_acc(soa_image(EX8, 32), "int32", 2, 4), c)


def subgroup_a_image(a, n, elem_bits, value=None):
    """Apply the extension's Matrix A rule for N invocations to a logical A (M x K) -> register image."""
    m, k = a.shape
    listing = {}
    if n <= k:
        per = k // n
        for i in range(n):
            listing[i] = [" | ".join(f"{r},{c}" for c in reversed(range(i * per, (i + 1) * per))) for r in range(m)]
    else:
        rows_per = n // k
        for i in range(n):
            col, sub = i % k, i // k
            listing[i] = [f"{r},{col}" for r in range(sub, m, rows_per)]
    return soa_image(listing, elem_bits, value)


def test_dpas_on_subgroup_images_dg2_int8():
    # sub-group 8, int8 K=32, M=4: A, B, C laid out per the extension's rules, then one DPAS
    rng = np.random.default_rng(0)
    m, k, n = 4, 32, 8
    a = rng.integers(0, 8, (m, k))
    b = rng.integers(0, 8, (k, n))
    g = GRF("dg2")

    def value(rc):
        r, c = (int(x) for x in rc.split(","))
        return int(a[r, c])

    g.write(0, subgroup_a_image(a, n, 8, value))        # A: each invocation packs K/N = 4 columns per row
    dwords = np.zeros((8, n), dtype=np.uint32)           # B: invocation i = column i, 4 rows per dword
    for i in range(n):
        for j in range(8):
            dwords[j, i] = sum(int(b[4 * j + t, i]) << (8 * t) for t in range(4))
    g.write(256, dwords.astype("<u4"))
    dpas(g, dst=1024, src0=None, src1=256, src2=0, dst_type="d", src1_precision="u8", src2_precision="u8", rc=m)
    np.testing.assert_array_equal(g.view(1024, np.int32, m * n).reshape(m, n), a @ b)


def test_dpas_on_subgroup_images_pvc_tf32_rows_interleave():
    # sub-group 16, tf32 K=8 (N > K): invocations 0-7 hold even rows, 8-15 odd rows (REFERENCE.md 4)
    m, k, n = 4, 8, 16
    img = subgroup_a_image(logical(m, k), n, 32)
    words = img.view("<u4")
    assert list(words[:16]) == [16 * 0 + c for c in range(8)] + [16 * 1 + c for c in range(8)]
    np.testing.assert_array_equal(words, logical(m, k).ravel())
