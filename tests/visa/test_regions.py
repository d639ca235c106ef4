"""Regions: visa-operands.md "Region-based Addressing" and "Region Restrictions"."""

import os
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from systolic.errors import IllegalInstruction
from systolic.visa import regions as R

SOAK = int(os.environ.get("SYSTOLIC_SOAK", "1"))  # long runs: SYSTOLIC_SOAK=50

EXEC = (1, 2, 4, 8, 16, 32)


def oracle_src(row, col, vs, w, hs, n, size, grf):
    """Independent: channel c is in row c // w, column c % w of the region."""
    first = row * grf // size + col
    return [first + (c // w) * vs + (c % w) * hs for c in range(n)]


@st.composite
def legal_src(draw):
    n = draw(st.sampled_from(EXEC))
    w = draw(st.sampled_from([x for x in R.LEGAL_WIDTH if x <= n]))
    return (draw(st.integers(0, 7)), draw(st.integers(0, 7)), draw(st.sampled_from(R.LEGAL_VSTRIDE)), w,
            draw(st.sampled_from(R.LEGAL_HSTRIDE)), n, draw(st.sampled_from([1, 2, 4, 8])),
            draw(st.sampled_from([32, 64])))


@settings(max_examples=400 * SOAK, deadline=None)
@given(legal_src())
def test_source_indices_match_oracle_and_fast_path(p):
    row, col, vs, w, hs, n, size, grf = p
    R.check_src_region(vs, w, hs, n)
    spec = R.source_element_indices(*p)
    assert spec == oracle_src(*p)
    assert R.source_element_indices_np(*p).tolist() == spec


@settings(max_examples=200 * SOAK, deadline=None)
@given(st.integers(0, 7), st.integers(0, 15), st.sampled_from([1, 2, 4]), st.sampled_from(EXEC),
       st.sampled_from([1, 2, 4, 8]), st.sampled_from([32, 64]))
def test_dest_indices(row, col, hs, n, size, grf):
    R.check_dst_region(hs)
    spec = R.dest_element_indices(row, col, hs, n, size, grf)
    assert spec == [row * grf // size + col + i * hs for i in range(n)]
    assert R.dest_element_indices_np(row, col, hs, n, size, grf).tolist() == spec


def test_figure3_example():
    """fig3: add(16) V3(0,0)<2> V1(0,1)<16;8,2> V2(1,0)<0;1,0>, V1/V2 ub, V3 w, 32-byte GRF."""
    assert R.source_element_indices(0, 1, 16, 8, 2, 16, 1, 32) == [1, 3, 5, 7, 9, 11, 13, 15,
                                                                    17, 19, 21, 23, 25, 27, 29, 31]
    assert R.source_element_indices(1, 0, 0, 1, 0, 16, 1, 32) == [32] * 16
    assert R.dest_element_indices(0, 0, 2, 16, 2, 32) == list(range(0, 32, 2))


def test_first_element_index_uses_grf_size():
    # R * (GRF_Size_in_Bytes / sizeof(VN_type)) + C
    assert R.first_element_index(2, 3, 4, 32) == 19
    assert R.first_element_index(2, 3, 4, 64) == 35


@pytest.mark.parametrize("w", [0, 3, 5, 32])
def test_rule1_width(w):
    with pytest.raises(IllegalInstruction, match="rule 1"):
        R.check_src_region(1, w, 1, 32)


@pytest.mark.parametrize("vs", [3, 5, 64, -1])
def test_rule2_vstride(vs):
    with pytest.raises(IllegalInstruction, match="rule 2"):
        R.check_src_region(vs, 1, 0, 8)


@pytest.mark.parametrize("hs", [3, 8, -1])
def test_rule3_hstride(hs):
    with pytest.raises(IllegalInstruction, match="rule 3"):
        R.check_src_region(1, 1, hs, 8)
    with pytest.raises(IllegalInstruction, match="rule 3"):
        R.check_dst_region(hs)


def test_rule4_exec_ge_width():
    with pytest.raises(IllegalInstruction, match="rule 4") as e:
        R.check_src_region(8, 8, 1, 4)
    assert e.value.values == {"exec_size": 4, "width": 8}
    R.check_src_region(8, 8, 1, 8)


def test_rule5_dst_hstride_zero():
    with pytest.raises(IllegalInstruction, match="rule 5"):
        R.check_dst_region(0)


def test_multi_address_only_when_allowed():
    with pytest.raises(IllegalInstruction, match="multi-address"):
        R.check_src_region(None, 4, 1, 8)
    R.check_src_region(None, 4, 1, 8, multi_address_ok=True)


def test_exec_size_legal():
    for n in (0, 3, 64):
        with pytest.raises(IllegalInstruction, match="execution size"):
            R.check_src_region(0, 1, 0, n)


def test_rule6_two_adjacent_grfs():
    R.check_two_grfs([0, 32, 60], 4, 32)          # GRFs 0 and 1
    with pytest.raises(IllegalInstruction, match="rule 6") as e:
        R.check_two_grfs([0, 64], 4, 32)           # GRFs 0..2
    assert e.value.values["first_grf"] == 0 and e.value.values["last_grf"] == 2
    with pytest.raises(IllegalInstruction, match="rule 6"):
        R.check_two_grfs([30, 62], 4, 32)          # last element straddles into GRF 2


def test_out_of_bounds_and_column():
    with pytest.raises(IllegalInstruction, match="outside its variable"):
        R.check_in_variable([0, 8], 8, "V")
    with pytest.raises(IllegalInstruction, match="GRF boundary"):
        R.check_column_offset(8, 4, 32)
    R.check_column_offset(7, 4, 32)


def test_region_encoding_table():
    table = {0: None, 1: 0, 2: 1, 3: 2, 4: 4, 5: 8, 6: 16, 7: 32}
    for code, v in table.items():
        assert R.decode_region_value(code) == v
        assert R.encode_region_value(v) == code
    for code in range(8, 16):
        with pytest.raises(IllegalInstruction, match="region encoding"):
            R.decode_region_value(code)
    with pytest.raises(IllegalInstruction):
        R.encode_region_value(3)


def test_text():
    assert R.SrcRegion(8, 8, 1).text() == "<8;8,1>"
    assert R.SrcRegion(None, 4, 1).text() == "<4,1>"
    assert R.DstRegion(2).text() == "<2>"
    assert np.array_equal(R.source_element_indices_np(0, 0, 0, 1, 0, 4, 4, 32), [0, 0, 0, 0])


@settings(max_examples=200 * SOAK, deadline=None)
@given(legal_src(), st.lists(st.integers(0, 4000), min_size=32, max_size=32), st.integers(-512, 511),
       st.integers(0, 3))
def test_indirect_addressing_pseudo_code(p, an, off, k):
    """Single-address: origin AN(k)+offset then the general pattern; multi-address: row i starts at AN(k+i)+offset."""
    from systolic.visa import indirect as I
    _, _, vs, w, hs, n, size, _ = p
    single = I.single_address_source(an, k, off, vs, w, hs, n, size)
    assert single == [an[k] + off + ((c // w) * vs + (c % w) * hs) * size for c in range(n)]
    if k + n // w <= len(an):
        multi = I.multi_address_source(an, k, off, w, hs, n, size)
        assert multi == [an[k + c // w] + off + (c % w) * hs * size for c in range(n)]
    else:
        with pytest.raises(IllegalInstruction, match="past the end"):
            I.multi_address_source(an, k, off, w, hs, n, size)
    if hs:
        assert I.indirect_dest(an, k, off, False, hs, n, size) == [an[k] + off + c * hs * size for c in range(n)]
    with pytest.raises(IllegalInstruction, match="Additional Region Restrictions"):
        I.indirect_dest(an, k, off, True, 1, n, size)
