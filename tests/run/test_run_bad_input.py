"""``systolic run`` on bad input: every broken rule is a typed error naming the rule and the values (never a
segfault, a traceback or a silent wrong answer). Expected rules and values are written out by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from systolic.errors import ProgramError
from systolic.run import run_file

ROOT = Path(__file__).resolve().parents[2]
IR = ROOT / "examples" / "amx" / "tile_gemm_s8u8.ll"
ORACLE = "; systolic-run: oracle @C = gemm-int8 A=@A:s8 B=@B:u8 M=16 N=16 K=256"


def _ir_with_oracle(tmp_path, extra: str) -> Path:
    text = IR.read_text()
    assert ORACLE in text, "the example's oracle line changed: update this test"
    p = tmp_path / "prog.ll"
    p.write_text(text.replace(ORACLE, ORACLE + " " + extra))
    return p


@pytest.mark.parametrize("extra, key, value, row_bytes", [
    ("lda=-100000000", "lda", -100000000, 256),     # was: segfault (as_strided with a negative stride)
    ("lda=-256", "lda", -256, 256),
    ("lda=0", "lda", 0, 256),
    ("lda=255", "lda", 255, 256),                   # overlapping rows of A
    ("ldb=-1", "ldb", -1, 64),
    ("ldc=-64", "ldc", -64, 64),                    # was: a MISMATCH whose result bytes were heap memory
    ("ldc=63", "ldc", 63, 64),
])
def test_gemm_int8_oracle_refuses_strides_below_a_row(tmp_path, extra, key, value, row_bytes):
    with pytest.raises(ProgramError) as ei:
        run_file(_ir_with_oracle(tmp_path, extra))
    e = ei.value
    assert e.rule == "systolic-run oracle gemm-int8: lda >= K, ldb >= 4N, ldc >= 4N"
    assert e.values[key] == value and e.values["K"] == 256 and e.values["N"] == 16
    assert f"{key}={value} is less than" in str(e) and f"= {row_bytes} bytes" in str(e)


def test_gemm_int8_oracle_takes_a_wider_stride_inside_the_global(tmp_path):
    # lda = K exactly is the default layout; the run stays bit-identical with it spelled out
    rep = run_file(_ir_with_oracle(tmp_path, "lda=256 ldb=64 ldc=64"))
    assert rep["verdict"] == "bit-identical"


def _empty_npy(tmp_path) -> Path:
    p = tmp_path / "e.npy"
    p.write_bytes(b"")
    return p


def test_fill_from_an_empty_npy_names_the_header_line(tmp_path):
    _empty_npy(tmp_path)
    text = IR.read_text().replace("; systolic-run: fill @A = random 1", "; systolic-run: fill @A = e.npy")
    line = 1 + text.splitlines().index("; systolic-run: fill @A = e.npy")
    p = tmp_path / "prog.ll"
    p.write_text(text)
    with pytest.raises(ProgramError) as ei:
        run_file(p)
    assert ei.value.values["line"] == line and ei.value.values["bytes"] == 0
    assert "cannot load fill @A from" in str(ei.value) and "not a .npy file" in str(ei.value)


def test_visa_in_from_an_empty_npy_names_the_header_line(tmp_path):
    _empty_npy(tmp_path)
    src = (ROOT / "examples" / "visa" / "simd_add.visa").read_text()
    p = tmp_path / "prog.visa"
    p.write_text("// systolic-run: in V1 = e.npy\n" + src)
    with pytest.raises(ProgramError) as ei:
        run_file(p)
    assert ei.value.values["line"] == 1 and ei.value.values["bytes"] == 0
    assert "cannot load --in V1 from" in str(ei.value)
