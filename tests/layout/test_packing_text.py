"""`layout detail` says the VNNI factor and the packing in text, and packed and row-major B read differently
(issue 27). The factors are the glossary's: 32 bits / element bits for B of DPAS and AMX."""

from __future__ import annotations

from click.testing import CliRunner

from systolic.cli import cli


def out(*args):
    r = CliRunner().invoke(cli, list(args))
    assert r.exit_code == 0, r.output
    return r.output


def test_detail_prints_vnni_factor_in_text():
    for args, factor in ((["dpas", "b", "--precision", "bf16"], 2), (["dpas", "b", "--precision", "s8"], 4),
                         (["amx", "b", "--instruction", "tdpbssd"], 4), (["amx", "a"], 1)):
        text = out("layout", "detail", *args)
        assert f"vnni_factor        {factor}" in text, text
        assert ("VNNI-packed" in text) == (factor > 1)


def test_packed_and_row_major_b_differ_visibly():
    base = ["layout", "table", "sycl", "b", "--device", "pvc", "--type", "bf16", "--rows", "16", "--cols", "16"]
    packed = out(*base, "--layout", "ext_intel_packed")
    row = out(*base, "--layout", "row_major")
    assert packed != row
    assert "ext_intel_packed (VNNI x2): B[2r+i][n] at element (r * ld + 2n + i)" in packed.splitlines()[0]
    assert "row_major: B[k][n] at element k * ld + n" in row.splitlines()[0]
