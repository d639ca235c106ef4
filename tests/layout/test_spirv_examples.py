"""The layout builders against the worked examples of SPV_INTEL_subgroup_matrix_multiply_accumulate,
"Mapping Matrix Data to Invocations" (KhronosGroup/SPIRV-Registry, revision 1, 2025-01-07), transcribed here from
the text: invocation i's component j holds the listed elements, "hi | ... | lo" (the last listed in the lowest
bits). The examples use N = 4 invocations, which the builders take as a primitive parameter."""

import pytest

from systolic.layout import dpas as LD

# Example 1: A, M=2, K=4 (N == K); 2: A, M=2, K=8 (N < K); 3: A, M=4, K=2 (N > K); 4: A, M=1, K=2
EX1 = {0: ["0,0", "1,0"], 1: ["0,1", "1,1"], 2: ["0,2", "1,2"], 3: ["0,3", "1,3"]}
EX2 = {0: ["0,1 | 0,0", "1,1 | 1,0"], 1: ["0,3 | 0,2", "1,3 | 1,2"], 2: ["0,5 | 0,4", "1,5 | 1,4"],
       3: ["0,7 | 0,6", "1,7 | 1,6"]}
EX3 = {0: ["0,0", "2,0"], 1: ["0,1", "2,1"], 2: ["1,0", "3,0"], 3: ["1,1", "3,1"]}
EX4 = {0: ["0,0"], 1: ["0,1"]}
# Example 5: B, K=8, 8-bit; 6: B, K=4, 16-bit; 7: B, K=2, 32-bit; 8/9: C and result, M=2
EX5 = {i: [f"3,{i} | 2,{i} | 1,{i} | 0,{i}", f"7,{i} | 6,{i} | 5,{i} | 4,{i}"] for i in range(4)}
EX6 = {i: [f"1,{i} | 0,{i}", f"3,{i} | 2,{i}"] for i in range(4)}
EX7 = {i: [f"0,{i}", f"1,{i}"] for i in range(4)}
EX8 = {i: [f"0,{i}", f"1,{i}"] for i in range(4)}


def expected(listing, bits):
    out = {}
    for inv, comps in listing.items():
        for j, comp in enumerate(comps):
            for p, rc in enumerate(reversed([x.strip() for x in comp.split("|")])):
                r, c = (int(v) for v in rc.split(","))
                out[(r, c)] = (inv, j, p * bits)
    return out


def check(L, listing, bits):
    want = expected(listing, bits)
    assert len(want) == L.rows * L.cols
    for (r, c), (inv, j, lo) in want.items():
        s = L.lane_of(r, c)
        assert (s["lane"], s["component"], s["bits_in_component"][0]) == (inv, j, lo), (r, c, s)


@pytest.mark.parametrize("listing,m,k,bits", [(EX1, 2, 4, 8), (EX1, 2, 4, 16), (EX2, 2, 8, 8), (EX2, 2, 8, 16),
                                              (EX3, 4, 2, 8), (EX3, 4, 2, 32), (EX4, 1, 2, 8)])
def test_matrix_a(listing, m, k, bits):
    check(LD.src2(m, k, "x", bits, grf_bytes=64, exec_size=4), listing, bits)


@pytest.mark.parametrize("listing,k,bits", [(EX5, 8, 8), (EX6, 4, 16), (EX7, 2, 32)])
def test_matrix_b(listing, k, bits):
    check(LD.src1(k, 4, "x", bits, grf_bytes=16), listing, bits)


def test_matrix_c():
    check(LD.acc(2, 4, "int32", 32, grf_bytes=16), EX8, 32)
