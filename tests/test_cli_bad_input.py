"""The command line on bad input: each broken rule is a typed error from systolic.errors whose message names the
rule and the values (never a UnicodeDecodeError, a bare 'Aborted!', an LLVM abort or a FileNotFoundError).

Expected bytes, offsets, lines and columns are computed by hand from the bytes each test writes."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from systolic.cli import cli, main
from systolic.errors import AsmSyntaxError, InvalidValue

ROOT = Path(__file__).resolve().parents[1]
SIMD_ADD = ROOT / "examples" / "visa" / "simd_add.visa"


def typed_error(argv, cls):
    """Run the CLI in-process; it must stop with ``cls`` (what `systolic` prints as one `error:` line)."""
    r = CliRunner().invoke(cli, [str(a) for a in argv])
    assert isinstance(r.exception, cls), (r.exception, r.output)
    return r.exception


def one_error_line(capsys, argv):
    with pytest.raises(SystemExit) as e:
        main([str(a) for a in argv])
    assert e.value.code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


# ---- source files that are not UTF-8 text ---------------------------------------------------------------------

#: line 1 "ab", line 2 "c" then 0xff: offset 4, line 2, column 2
NOT_UTF8 = b"ab\nc\xffd\n"


@pytest.mark.parametrize("verb, suffix", [
    (["amx", "compile"], ".ll"), (["amx", "run", "{f}", "-f", "k"], ".ll"),
    (["visa", "run"], ".visa"), (["visa", "encode"], ".visa"), (["visa", "fmt"], ".visa"),
    (["visa", "vars"], ".visa"), (["visa", "decode", "{f}", "00"], ".visa"),
    (["run"], ".ll"), (["run"], ".visa"),
])
def test_non_utf8_source_is_a_syntax_error_naming_byte_and_offset(tmp_path, capsys, verb, suffix):
    f = tmp_path / f"prog{suffix}"
    f.write_bytes(NOT_UTF8)
    argv = [str(f) if a == "{f}" else a for a in verb] + ([] if "{f}" in verb else [f])
    e = typed_error(argv, AsmSyntaxError)
    assert (e.line, e.column) == (2, 2) and e.values == {"byte": "0xff", "offset": 4}
    assert e.rule == "source files are UTF-8 text"
    line = one_error_line(capsys, argv)
    assert "not UTF-8 text: byte 0xff at offset 4" in line and f"{f}:2:2:" in line


def test_llvm_bitcode_is_named(tmp_path):
    f = tmp_path / "k.ll"
    f.write_bytes(b"BC\xc0\xde\x35\x14\x00\x00")         # the raw bitcode magic, LLVM BitCodeFormat
    e = typed_error(["amx", "compile", f], AsmSyntaxError)
    assert e.values == {"byte": "0xc0", "offset": 2} and "LLVM bitcode" in str(e)


def test_unreadable_source_names_the_os_reason(tmp_path):
    e = typed_error(["visa", "fmt", tmp_path / "absent.visa"], InvalidValue)
    assert "No such file or directory" in str(e) and e.values == {"path": str(tmp_path / "absent.visa")}
