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


# ---- .npy files: one loader (systolic.cli.inputs.load_npy) for every verb ----------------------------------------

def _forged_npy(path: Path, shape_text: str, descr: str = "|i1", payload: bytes = b"\0" * 64) -> Path:
    """A .npy 1.0 file whose header declares ``shape_text`` over a tiny payload (numpy format spec: magic,
    version 1.0, little-endian u2 header length, a Python-literal dict padded with spaces to 64 bytes, '\\n')."""
    head = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape_text}, }}"
    head += " " * (63 - (10 + len(head)) % 64) + "\n"
    assert (10 + len(head)) % 64 == 0
    path.write_bytes(b"\x93NUMPY\x01\x00" + len(head).to_bytes(2, "little") + head.encode() + payload)
    return path


@pytest.fixture
def npy_cases(tmp_path):
    good = tmp_path / "good.npy"
    import numpy as np
    np.save(good, np.ones((16, 16), np.int8))
    empty = tmp_path / "empty.npy"
    empty.write_bytes(b"")
    bomb = _forged_npy(tmp_path / "bomb.npy", "(1099511627776,)")       # 2**40 int8 declared, 64 bytes held
    return good, empty, bomb


def _npy_verbs(good, bad, tmp_path):
    gemm_o2 = ROOT / "examples" / "amx" / "gemm_o2.ll"
    return [
        (["xmx", "gemm", bad, good], "A"),
        (["xmx", "gemm", good, good, "--c", bad], "C"),
        (["visa", "run", SIMD_ADD, "--in", f"V1={bad}"], "--in V1"),
        (["amx", "run", gemm_o2, "-f", "gemm", "--arg", "@A", "--arg", "@B", "--arg", "@C", "--arg", "32", "--arg",
          "32", "--arg", "192", "--mem", f"A={bad}"], "--mem A"),
    ]


def test_empty_npy_is_an_invalid_value_not_aborted(tmp_path, capsys, npy_cases):
    good, empty, _ = npy_cases
    for argv, what in _npy_verbs(good, empty, tmp_path):
        e = typed_error(argv, InvalidValue)
        assert f"cannot load {what} from {empty}: not a .npy file" in str(e) and e.values["bytes"] == 0, argv
        assert "Aborted" not in one_error_line(capsys, argv)


def test_forged_npy_header_is_checked_against_the_file_size(tmp_path, npy_cases):
    good, _, bomb = npy_cases
    for argv, what in _npy_verbs(good, bomb, tmp_path):
        e = typed_error(argv, InvalidValue)
        # 64 bytes follow the 128-byte header; the header claims 2**40 one-byte elements
        assert e.values["need"] == 2 ** 40 and e.values["have"] == 64 and e.values["shape"] == (2 ** 40,), argv
        assert f"cannot load {what}" in str(e) and "header declares shape (1099511627776,)" in str(e)


def test_npy_loader_refuses_objects_and_truncated_data(tmp_path):
    from systolic.cli.inputs import load_npy
    short = _forged_npy(tmp_path / "short.npy", "(4, 4)", "<i4", payload=b"\0" * 60)   # 64 bytes needed, 60 held
    with pytest.raises(InvalidValue) as ei:
        load_npy(short, "X")
    assert ei.value.values["need"] == 64 and ei.value.values["have"] == 60
    obj = _forged_npy(tmp_path / "obj.npy", "(2,)", "|O")
    with pytest.raises(InvalidValue, match="Python objects"):
        load_npy(obj, "X")
    ok = _forged_npy(tmp_path / "ok.npy", "(2, 2)", "<i2", payload=bytes([1, 0, 2, 0, 3, 0, 4, 0]))
    assert load_npy(ok, "X").tolist() == [[1, 2], [3, 4]]


# ---- amx asm --cpu: systolic's CPU models, checked before LLVM sees the name ------------------------------------

@pytest.mark.parametrize("cpu", ["skylake", "nope", "x86-64"])
def test_asm_refuses_cpus_without_amx_before_llvm(cpu):
    pytest.importorskip("llvmlite")
    e = typed_error(["amx", "asm", "--cpu", cpu], InvalidValue)
    # --cpu is the old spelling of --device (issue 27): the error names the device option's value
    assert e.values == {"device": cpu} and "sapphirerapids (spr)" in e.rule and "diamondrapids (dmr)" in e.rule


def test_asm_takes_aliases_and_refuses_instructions_the_cpu_lacks():
    pytest.importorskip("llvmlite")
    from systolic.errors import UnsupportedCombination
    r = CliRunner().invoke(cli, ["amx", "asm", "--cpu", "spr"])      # was: LLVM abort, "'spr' is not a recognized
    assert r.exit_code == 0 and "tdpbf16ps\t%tmm2, %tmm1, %tmm0" in r.output     # processor" (process killed)
    # TDPFP16PS is AMX-FP16, which Sapphire Rapids lacks (SDM CPUID.(EAX=7,ECX=1):EAX[21]; Granite Rapids has it)
    e = typed_error(["amx", "asm", "--mnemonic", "tdpfp16ps", "--cpu", "sapphirerapids"], UnsupportedCombination)
    assert e.values["needs"] == "amx-fp16" and e.values["cpu"] == "sapphirerapids"
    r = CliRunner().invoke(cli, ["amx", "asm", "--mnemonic", "tdpfp16ps", "--cpu", "gnr"])
    assert r.exit_code == 0 and "tdpfp16ps\t%tmm2, %tmm1, %tmm0" in r.output


def test_asm_refuses_a_cpu_name_older_llvms_do_not_know(monkeypatch):
    pytest.importorskip("llvmlite")
    from systolic.amx import jit
    from systolic.errors import UnsupportedCombination
    monkeypatch.setattr(jit, "llvm_version", lambda: (19, 1, 0))     # diamondrapids arrived in LLVM 20
    e = typed_error(["amx", "asm", "--cpu", "dmr"], UnsupportedCombination)
    assert e.values == {"cpu": "diamondrapids", "llvm": 19} and "diamondrapids since LLVM 20" in e.rule


# ---- output paths: one writer (systolic.cli.inputs.write_output / make_dir) for every verb ----------------------

def _output_verbs(tmp_path, target):
    import numpy as np
    a = tmp_path / "a.npy"
    np.save(a, np.ones((8, 32), np.int8))
    return [
        ["xmx", "gemm", a, a.with_name("b.npy"), "--out", target],
        ["visa", "encode", SIMD_ADD, "-o", target],
        ["layout", "detail", "dpas", "a", "--svg", target],
        ["layout", "table", "dpas", "a", "--svg", target],
        ["layout", "mma", "dpas", "--svg", target],
    ]


def test_output_under_a_file_is_an_invalid_value_naming_path_and_reason(tmp_path, capsys):
    import numpy as np
    np.save(tmp_path / "b.npy", np.ones((32, 16), np.int8))
    blocker = tmp_path / "file"
    blocker.write_text("x")
    for argv in _output_verbs(tmp_path, blocker / "out"):
        e = typed_error(argv, InvalidValue)
        assert e.values == {"path": str(blocker)} and "a file of that name exists" in str(e), argv
        assert str(blocker) in one_error_line(capsys, argv)
    # --save DIR on a file, as the file outputs
    e = typed_error(["visa", "run", SIMD_ADD, "--save", blocker / "d"], InvalidValue)
    assert e.values == {"path": str(blocker / "d")} and "--save directory" in str(e)


def test_output_in_a_missing_directory_creates_it(tmp_path):
    import numpy as np
    np.save(tmp_path / "b.npy", np.ones((32, 16), np.int8))
    for i, argv in enumerate(_output_verbs(tmp_path, None)):
        target = tmp_path / f"new{i}" / "deeper" / "out.x"        # not .npy: written under exactly this name
        r = CliRunner().invoke(cli, [str(a) for a in argv[:-1]] + [str(target)])
        assert r.exit_code == 0, (argv, r.output, r.exception)
        assert target.is_file() and target.stat().st_size > 0, argv
    d = np.load(tmp_path / "new0" / "deeper" / "out.x")
    assert d.tolist() == [[32] * 16] * 8                    # 32 products of 1 x 1 per element, by hand


# ---- seeds: one check (systolic.cli.inputs.check_seed), as xmx dpas always had ---------------------------------

@pytest.mark.parametrize("argv", [["tour", "--seed", "-1"], ["layout", "explain", "dpas", "0", "0", "--seed", "-1"],
                                  ["xmx", "dpas", "--seed", "-1"]])
def test_negative_seed_is_an_invalid_value(argv):
    e = typed_error(argv, InvalidValue)
    assert e.values == {"seed": -1} and e.rule == "numpy SeedSequence takes entropy >= 0"
    assert "--seed must be a non-negative integer" in str(e)


@pytest.mark.parametrize("seed", [-1, 1.5, True, None, "3"])
def test_explain_seed_argument_is_checked(seed):
    from systolic.explorer.explain import explain
    with pytest.raises(InvalidValue) as ei:
        explain("dpas", 0, 0, seed=seed)
    assert ei.value.values == {"seed": seed} and "seed must be a non-negative integer" in str(ei.value)


def test_a_large_seed_still_works():
    from systolic.explorer.explain import explain
    assert explain("dpas", 0, 0, seed=2 ** 80)["consistent"]


def test_source_files_are_read_to_a_bound(tmp_path, monkeypatch):
    """A source larger than the bound, or endless (/dev/zero), is refused once the bound is passed, not read
    forever; a file of exactly the bound is read."""
    from systolic.cli import inputs
    monkeypatch.setattr(inputs, "MAX_SOURCE_BYTES", 1024)
    big = tmp_path / "big.ll"
    big.write_text("; x\n" * 257)                               # 1028 bytes
    with pytest.raises(InvalidValue, match="larger than 1024 bytes") as e:
        inputs.read_text(big)
    assert e.value.rule == "source files are at most 1024 bytes"
    if Path("/dev/zero").exists():
        with pytest.raises(InvalidValue, match="or endless"):
            inputs.read_text("/dev/zero")
    ok = tmp_path / "ok.ll"
    ok.write_text("; x\n" * 256)                                # 1024 bytes
    assert inputs.read_text(ok) == "; x\n" * 256
