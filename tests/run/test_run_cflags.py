"""``systolic run file.c``: the ``cflags`` directive of the ``// systolic-run:`` header (docs/run.md)."""

import pytest

from systolic.errors import ClangUnavailable, InvalidValue, ProgramError
from systolic.run import header, run_file

PROGRAM = """// Scale by a constant the header defines.
// systolic-run: function scaled
// systolic-run: args 7
{cflags}
#ifndef SCALE
#define SCALE 1
#endif
int scaled(int x) {{ return x * SCALE + 1; }}
"""


def _run(tmp_path, cflags, suffix=".c"):
    p = tmp_path / f"prog{suffix}"
    p.write_text(PROGRAM.format(cflags=f"// systolic-run: cflags {cflags}" if cflags else ""))
    try:
        return run_file(p)
    except ClangUnavailable as exc:
        pytest.skip(str(exc))


@pytest.mark.parametrize("cflags, want", [(None, 8), ("-DSCALE=3", 22), ("-O0 -g -DSCALE=5", 36),
                                          ("'-DSCALE=(2 + 2)'", 29)])
def test_cflags_reach_clang(tmp_path, cflags, want):
    assert _run(tmp_path, cflags)["extras"]["returned"] == want          # 7 * SCALE + 1, worked out by hand


def test_cflags_parse_and_repeat():
    h = header.parse("// systolic-run: cflags -O1  -DX=1\n", "//")
    assert h.cflags == "-O1  -DX=1"
    assert header.parse("// systolic-run: function f\n", "//").cflags is None
    with pytest.raises(ProgramError, match="cflags is given twice"):
        header.parse("// systolic-run: cflags -O1\n// systolic-run: cflags -O2\n", "//")


def test_cflags_where_there_is_no_clang(tmp_path):
    ll = tmp_path / "p.ll"
    ll.write_text("; systolic-run: function f\n; systolic-run: cflags -O0\ndefine i32 @f() {\n  ret i32 1\n}\n")
    with pytest.raises(ProgramError, match="cflags' applies to C and C\\+\\+"):
        run_file(ll)
    vs = tmp_path / "p.visa"
    vs.write_text("// systolic-run: cflags -O0\n")
    with pytest.raises(ProgramError, match="cflags are LLVM IR and C directives"):
        run_file(vs)


def test_bad_cflags_are_a_typed_error(tmp_path):
    with pytest.raises(InvalidValue, match="No closing quotation"):
        _run(tmp_path, '"-DSCALE=3')
