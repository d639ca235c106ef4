"""``systolic run``: the program-file protocol, the three file kinds, the report, exit status 1 on a mismatch.

Expected values come from the programs' own independent oracles, hand-computed counts and the source text of
the programs (e.g. how many ``mov`` lines a vISA file has), never from the code under test.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from systolic.cli import cli, main
from systolic.errors import ProgramError
from systolic.run import run_file

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = Path(__file__).resolve().parent / "programs"
VISA = ROOT / "examples" / "visa" / "dpas_chain_s8.visa"
IR = ROOT / "examples" / "amx" / "tile_gemm_s8u8.ll"


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


GOOD = '''\
"""A tiny program."""
import numpy as np
DEVICE = "pvc"
DEVICES = ("pvc", "dg2")
def main(device):
    return {"result": np.arange(4, dtype=np.int32), "oracle": np.arange(4, dtype=np.int32), "note": device}
'''


# ------------------------------------------------------------------ the protocol
def test_good_program_and_device_choice(tmp_path):
    p = _write(tmp_path, "good.py", GOOD)
    rep = run_file(p)
    assert rep["verdict"] == "bit-identical" and rep["device"]["name"] == "pvc"
    assert rep["device"]["kind"] == "XMX GPU" and rep["device"]["sub_group_size"] == 16
    assert rep["extras"]["note"] == "pvc" and rep["devices"] == ["pvc", "dg2"]
    rep = run_file(p, "dg2")
    assert rep["extras"]["note"] == "dg2" and rep["device"]["sub_group_size"] == 8


@pytest.mark.parametrize("text, rule", [
    ('import numpy\nDEVICE = "pvc"\ndef main(d):\n    pass\n', "module docstring"),
    ('"""doc"""\ndef main(d):\n    pass\n', "DEVICE ="),
    ('"""doc"""\nDEVICE = 3\ndef main(d):\n    pass\n', "DEVICE ="),
    ('"""doc"""\nDEVICE = "pvc"\nDEVICES = ("dg2",)\ndef main(d):\n    pass\n', "one of DEVICES"),
    ('"""doc"""\nDEVICE = "pvc"\nDEVICES = "pvc"\ndef main(d):\n    pass\n', "DEVICES = (...)"),
    ('"""doc"""\nDEVICE = "pvc"\n', "def main(device: str)"),
    ('"""doc"""\nDEVICE = "pvc"\ndef main():\n    pass\n', "def main(device: str)"),
    ('"""doc"""\nDEVICE = "pvc"\ndef main(d):\n    return [1]\n', "returns"),
    ('"""doc"""\nimport numpy as np\nDEVICE = "pvc"\ndef main(d):\n    return {"result": np.zeros(2)}\n',
     "returns"),
    ('"""doc"""\nimport numpy as np\nDEVICE = "pvc"\ndef main(d):\n    return {"result": [1], "oracle": [1]}\n',
     "numpy arrays"),
    ('"""doc"""\nimport numpy as np\nDEVICE = "pvc"\ndef main(d):\n'
     '    return {"result": np.array(["a"]), "oracle": np.array(["a"])}\n', "numpy arrays of numbers"),
])
def test_protocol_errors_name_the_rule(tmp_path, text, rule):
    p = tmp_path / "bad.py"
    p.write_text(text)
    with pytest.raises(ProgramError) as ei:
        run_file(p)
    assert rule in ei.value.rule


def test_import_failure_is_a_program_error(tmp_path):
    p = _write(tmp_path, "imp.py", '"""Needs a module that is not there."""\nimport systolic_no_such_layer\nDEVICE = "pvc"\n')
    with pytest.raises(ProgramError, match="systolic_no_such_layer") as ei:
        run_file(p)
    assert "imports" in ei.value.rule


def test_device_outside_devices_lists_them(tmp_path):
    p = _write(tmp_path, "good.py", GOOD)
    with pytest.raises(ProgramError) as ei:
        run_file(p, "bmg")
    assert ei.value.values == {"device": "bmg", "DEVICES": ["pvc", "dg2"]}


def test_unknown_suffix_and_missing_file(tmp_path):
    p = _write(tmp_path, "prog.f90", "end")    # (.cpp is a program kind now: C++ with clang's AMX API)
    with pytest.raises(ProgramError, match="'.f90'") as ei:
        run_file(p)
    assert ".py" in ei.value.rule and ".ll" in ei.value.rule and ".visa" in ei.value.rule
    with pytest.raises(ProgramError, match="no such program file"):
        run_file(tmp_path / "absent.py")
    with pytest.raises(ProgramError, match="LLVM IR programs only"):
        run_file(_write(tmp_path, "good.py", GOOD), function="f")


# ------------------------------------------------------------------ verdicts
def test_mismatch_names_the_first_element_and_exits_1(capsys):
    rep = run_file(PROGRAMS / "mismatch.py")
    assert rep["verdict"] == "MISMATCH"
    (c,) = rep["checks"]
    assert c["mismatches"] == 1
    f = c["first_mismatch"]
    assert f["index"] == [2, 5] and f["oracle"] == 21.0 and f["result"] == 21.5
    assert f["oracle_bits"] == "0x41a80000" and f["result_bits"] == "0x41ac0000"   # 21.0, 21.5 in binary32
    with pytest.raises(SystemExit) as ei:
        main(["run", str(PROGRAMS / "mismatch.py")])
    assert ei.value.code == 1
    out = capsys.readouterr().out
    assert "MISMATCH" in out and "[2, 5]" in out


def test_signed_zero_and_nan_bits(tmp_path):
    p = _write(tmp_path, "z.py", '''\
        """Signed zeros differ; equal NaNs agree."""
        import numpy as np
        DEVICE = "spr"
        def main(device):
            r = np.array([np.nan, 1.0, -0.0], np.float32)
            return {"result": r, "oracle": np.array([np.nan, 1.0, 0.0], np.float32)}
        ''')
    (c,) = run_file(p)["checks"]
    assert c["mismatches"] == 1 and c["first_mismatch"]["index"] == [2]
    assert c["first_mismatch"]["result_bits"] == "0x80000000"


def test_dtype_difference_is_a_mismatch(tmp_path):
    p = _write(tmp_path, "d.py", '''\
        """float32 against float64."""
        import numpy as np
        DEVICE = "spr"
        def main(device):
            return {"result": np.zeros(3, np.float32), "oracle": np.zeros(3)}
        ''')
    rep = run_file(p)
    assert rep["verdict"] == "MISMATCH" and "dtype" in rep["checks"][0]["reason"]


# ------------------------------------------------------------------ each kind, with its counts
def test_python_xmx_program_counts():
    rep = run_file(PROGRAMS / "xmx_gemm.py")
    assert rep["verdict"] == "bit-identical"
    # 64x64x64 bf16 on pvc: 8 row tiles x 4 column tiles (exec 16) x 4 DPAS of K 16
    assert rep["instructions"]["totals"] == {"DPAS": 128}
    (lay,) = rep["layouts"]
    assert [o["operand"].split()[0] for o in lay["operands"]] == ["src2", "src1", "dst"]
    assert lay["operands"][1]["shape"] == "16x16 bf16" and lay["operands"][0]["shape"] == "8x16 bf16"
    assert lay["operands"][1]["command"].startswith("systolic layout detail dpas src1 --device pvc")
    rep = run_file(PROGRAMS / "xmx_gemm.py", "dg2")
    assert rep["instructions"]["totals"] == {"DPAS": 256}          # exec 8: twice the column tiles


def test_python_amx_program_counts():
    rep = run_file(PROGRAMS / "amx_int8.py")
    assert rep["verdict"] == "bit-identical" and rep["device"]["kind"] == "AMX CPU"
    assert rep["instructions"]["totals"] == {"AMX TMUL": 12}       # 3 x 2 C blocks x 2 K blocks
    assert len(rep["layouts"]) == 8                                 # 2 x 2 x 2 edge/full combinations


def _opcodes(path: Path) -> dict:
    """Instruction lines of a vISA file by opcode, from its text (declarations and comments excluded)."""
    ops: dict = {}
    for line in path.read_text().splitlines():
        s = line.strip()
        if not s or s.startswith(("//", ".")):
            continue
        op = re.match(r"(?:\([^)]*\)\s*)?([a-z_]+)", s).group(1)
        ops[op] = ops.get(op, 0) + 1
    return ops


def test_visa_example():
    rep = run_file(VISA)
    assert rep["kind"] == "visa" and rep["verdict"] == "bit-identical"
    (c,) = rep["checks"]
    assert c["name"] == "D2" and c["elements"] == 128
    assert rep["instructions"]["visa"] == _opcodes(VISA)
    assert rep["instructions"]["totals"]["DPAS"] == 2
    assert rep["layouts"][0]["instruction"] == "DPAS M 8, N 16, K 32: s8 x s8 -> int32"
    assert run_file(VISA, "bmg")["verdict"] == "bit-identical"
    with pytest.raises(ProgramError, match="does not support device"):
        run_file(VISA, "dg2")


def test_visa_expect_mismatch_and_header_errors(tmp_path):
    text = VISA.read_text()
    bad = text.replace("expect D2[16:32] = 6 14", "expect D2[16:32] = 6 15")
    rep = run_file(_write(tmp_path, "bad.visa", bad))
    f = rep["checks"][0]["first_mismatch"]
    assert rep["verdict"] == "MISMATCH" and f["index"] == [17] and f["result"] == 14 and f["oracle"] == 15
    for old, new, rule in [("expect D2[0:16] = 53 ", "expect D2[0:16] = ", "one value per element"),
                           ("expect D2[0:16] = 53", "expect D2[0:16] = 53.5", "exact in the variable's type"),
                           ("systolic-run: device pvc", "systolic-run: frobnicate pvc", "directives"),
                           ("expect D2[112:128]", "expect D2[120:136]", "inside the variable")]:
        with pytest.raises(ProgramError) as ei:
            run_file(_write(tmp_path, "h.visa", text.replace(old, new)))
        assert rule in ei.value.rule


def test_llvm_ir_example():
    rep = run_file(IR)
    assert rep["kind"] == "llvm-ir" and rep["verdict"] == "bit-identical"
    by = {r["op"]: r["count"] for r in rep["instructions"]["amx"]}
    # args say 4 K tiles: one C load, two loads and one TDPBSUD per K tile, one store
    assert by == {"tdpbsud": 4, "tileloadd": 9, "tilestored": 1, "ldtilecfg": 1, "tilerelease": 1}
    (lay,) = rep["layouts"]
    assert lay["instruction"] == "TDPBSUD M 16, N 16, K 64"


def test_llvm_ir_oracle_catches_a_wrong_program(tmp_path):
    # the same program, but the oracle claims B is signed: the emulator computes TDPBSUD, so bytes >= 128 differ
    p = _write(tmp_path, "wrong.ll", IR.read_text().replace("B=@B:u8", "B=@B:s8"))
    rep = run_file(p)
    assert rep["verdict"] == "MISMATCH" and rep["checks"][0]["mismatches"] > 0


def test_llvm_ir_overrides_and_errors(tmp_path):
    # an existing example without a header: --function/--arg as systolic amx run, no oracle -> unchecked
    rep = run_file(ROOT / "examples" / "amx" / "gemm_o2.ll", function="gemm",
                   args=("@A", "@B", "@C", "32", "32", "192"))
    assert rep["verdict"] == "unchecked"
    assert {r["op"]: r["count"] for r in rep["instructions"]["amx"] if r["op"] == "tdpbssd"} == {"tdpbssd": 12}
    with pytest.raises(ProgramError, match="no function to run"):
        run_file(ROOT / "examples" / "amx" / "gemm_o2.ll")
    text = IR.read_text()
    for old, new, rule in [("fill @A = random 1", "fill @Q = random 1", "a global of the module"),
                           ("gemm-int8 A=@A:s8", "gemm-fp A=@A:s8", "oracle kinds"),
                           ("M=16 N=16 K=256", "M=16 N=16 K=4096", "inside their globals")]:
        with pytest.raises(ProgramError) as ei:
            run_file(_write(tmp_path, "e.ll", text.replace(old, new)))
        assert rule in ei.value.rule


def test_llvm_ir_expect_literal(tmp_path):
    text = textwrap.dedent('''\
        ; Stores a 2 x 8 int32 tile of ones... no: a zeroed tile, then checks it.
        ; systolic-run: function z
        ; systolic-run: fill @C:i32 = 7 7 7 7
        ; systolic-run: expect @C:i32[0:4] = 0 0 0 0
        ; systolic-run: expect @C:i32[16:18] = 0 0
        @C = global [128 x i8] zeroinitializer, align 64
        define void @z() {
        entry:
          %t = tail call x86_amx @llvm.x86.tilezero.internal(i16 2, i16 32)
          tail call void @llvm.x86.tilestored64.internal(i16 2, i16 32, ptr @C, i64 64, x86_amx %t)
          ret void
        }
        declare x86_amx @llvm.x86.tilezero.internal(i16, i16)
        declare void @llvm.x86.tilestored64.internal(i16, i16, ptr, i64, x86_amx)
        ''')
    rep = run_file(_write(tmp_path, "z.ll", text))
    assert rep["verdict"] == "bit-identical", rep["checks"]
    bad = run_file(_write(tmp_path, "z2.ll", text.replace("[16:18] = 0 0", "[16:18] = 0 7")))
    assert bad["checks"][0]["first_mismatch"]["index"] == [17]


# ------------------------------------------------------------------ the command line
def test_cli_json_and_table():
    r = CliRunner().invoke(cli, ["run", str(VISA), "--json"])
    assert r.exit_code == 0, r.output
    rep = json.loads(r.output)
    assert rep["verdict"] == "bit-identical" and rep["device"]["name"] == "pvc"
    r = CliRunner().invoke(cli, ["run", str(IR)], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    assert "bit-identical" in r.output and "TDPBSUD" in r.output
    assert "systolic layout detail amx b --instruction tdpbsud --m 16 --n 16 --k 64" in r.output


def test_cli_error_is_one_line(tmp_path, capsys):
    p = _write(tmp_path, "good.py", GOOD)
    with pytest.raises(SystemExit) as ei:
        main(["run", str(p), "--device", "lnl"])
    assert ei.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "DEVICES" in err and "'pvc'" in err


def test_layouts_fall_back_without_the_explorer(monkeypatch):
    import builtins
    real = builtins.__import__

    def no_explorer(name, *a, **kw):
        if name == "explorer" or name.startswith("systolic.explorer"):
            raise ImportError(name)
        return real(name, *a, **kw)
    monkeypatch.setattr(builtins, "__import__", no_explorer)
    from systolic.run.report import _explorer_line
    assert _explorer_line("dpas", "src1", device="pvc") is None
    rep = run_file(PROGRAMS / "xmx_gemm.py")
    assert "VNNI" in rep["layouts"][0]["operands"][1]["layout"]
    assert np.isfinite(rep["seconds"]["run"])


# ------------------------------------------------------------------ the shipped examples and the layout links
HEADERED = sorted(p for p in (ROOT / "examples").rglob("*") if p.suffix in (".ll", ".visa")
                  and "systolic-run:" in p.read_text())


@pytest.mark.parametrize("path", HEADERED, ids=lambda p: p.name)
def test_examples_with_a_header_are_bit_identical(path):
    rep = run_file(path)
    assert rep["verdict"] == "bit-identical", rep["checks"]


def test_readme_main_job():
    """The README's first command: the seed's joint_matrix GEMM on its embedded default device."""
    seed = ROOT / "examples" / "sycl" / "seed_gemm_2021.py"
    readme = (ROOT / "README.md").read_text()
    assert "systolic run examples/sycl/seed_gemm_2021.py" in readme
    if not seed.exists():
        pytest.skip("examples/sycl/seed_gemm_2021.py is not there yet")
    rep = run_file(seed)
    assert rep["verdict"] == "bit-identical" and rep["device"]["kind"] == "AMX CPU"
    assert rep["device"]["name"] == "spr" and rep["device"]["sub_group_size"] == 1
    # C is 64 x 16 int32, K = 256 int8: 4 row tiles x 1 column tile x 4 K tiles of 64 bytes, one TDPBSSD each
    assert rep["instructions"]["totals"]["AMX TMUL"] == 16
    assert [L["instruction"] for L in rep["layouts"]] == ["TDPBSSD M 16, N 16, K 64"]


def test_layout_commands_run():
    """Every `systolic layout ...` command a report prints is a working command of the layout explorer."""
    import importlib.util
    import shlex
    if importlib.util.find_spec("systolic.cli.layout") is None:
        pytest.skip("the layout explorer's CLI is not there yet")
    cmds = set()
    for rep in (run_file(VISA), run_file(IR), run_file(PROGRAMS / "xmx_gemm.py", "dg2")):
        cmds.update(o["command"] for L in rep["layouts"] for o in L["operands"])
    assert len(cmds) == 9
    for c in sorted(cmds):
        args = shlex.split(c)
        assert args[:3] == ["systolic", "layout", "detail"]
        r = CliRunner().invoke(cli, args[1:] + ["--json"])
        assert r.exit_code == 0, (c, r.output)
        d = json.loads(r.output)
        assert d["layer"] == args[3] and d["operand"] == args[4]


def test_visa_in_directive_and_dataclass_program(tmp_path):
    np.save(tmp_path / "x.npy", np.array([5, 6, 7, 8], np.int32))
    p = _write(tmp_path, "in.visa", '''\
        // Adds two inputs: one literal, one from a file beside the program.
        // systolic-run: in X = x.npy
        // systolic-run: in Y = 1,2,3,4
        // systolic-run: expect Z = 6 8 10 12
        .decl X v_type=G type=d num_elts=4
        .decl Y v_type=G type=d num_elts=4
        .decl Z v_type=G type=d num_elts=4
        add (M1, 4) Z(0,0)<1> X(0,0)<1;1,0> Y(0,0)<1;1,0>
        ''')
    rep = run_file(p)
    assert rep["verdict"] == "bit-identical" and rep["instructions"]["visa"] == {"add": 1}
    assert rep["title"] == "Adds two inputs: one literal, one from a file beside the program."
    q = _write(tmp_path, "dc.py", '''\
        """A program with a dataclass under postponed annotations."""
        from __future__ import annotations
        from dataclasses import dataclass
        import numpy as np
        DEVICE = "spr"
        @dataclass
        class Tile:
            rows: int
        def main(device: str) -> dict:
            return {"result": np.array([Tile(3).rows]), "oracle": np.array([3])}
        ''')
    assert run_file(q)["verdict"] == "bit-identical"
    m = _write(tmp_path, "m.py", '''\
        """Imports an engine at module level."""
        import numpy as np
        from systolic import xmx
        from systolic.amx import matmul
        DEVICE = "spr"
        def main(device):
            return {"result": np.zeros(1), "oracle": np.zeros(1)}
        ''')
    assert run_file(m)["models"] == ["XMX engine", "AMX engine"]


# --- a program that exits or raises never passes silently (review F3/F6) ---------------------------------------

_EXIT_AT_IMPORT = '"""Exits at import."""\nimport sys\nDEVICE = "pvc"\nsys.exit(0)\ndef main(d):\n    pass\n'
_EXIT_IN_MAIN = '"""Exits in main."""\nimport sys\nDEVICE = "pvc"\ndef main(d):\n    sys.exit(0)\n'
_RAISES_IN_MAIN = '"""Raises in main."""\nDEVICE = "pvc"\ndef main(d):\n    return [][3]\n'


@pytest.mark.parametrize("text, when", [(_EXIT_AT_IMPORT, "imported"), (_EXIT_IN_MAIN, "in main")])
def test_sys_exit_is_a_program_error(tmp_path, text, when):
    p = _write(tmp_path, "bye.py", text)
    with pytest.raises(ProgramError, match=r"sys\.exit\(0\)") as ei:
        run_file(p)
    assert when in str(ei.value) and "no sys.exit" in ei.value.rule


@pytest.mark.parametrize("text", [_EXIT_AT_IMPORT, _EXIT_IN_MAIN])
def test_sys_exit_makes_the_cli_fail(tmp_path, text, capsys):
    p = _write(tmp_path, "bye.py", text)
    with pytest.raises(SystemExit) as ei:
        main(["run", str(p)])
    assert ei.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "sys.exit(0)" in err


def test_exception_in_main_is_one_error_line(tmp_path, capsys):
    p = _write(tmp_path, "boom.py", _RAISES_IN_MAIN)
    with pytest.raises(SystemExit) as ei:
        main(["run", str(p)])
    assert ei.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "boom.py" in err and "IndexError" in err
    assert "Traceback" not in err and err.count("\n") == 1
    with pytest.raises(SystemExit):
        main(["run", str(p), "--traceback"])
    err = capsys.readouterr().err
    assert "Traceback" in err and "IndexError" in err and "error: " in err


# --- stdout is the report's; --traceback shows typed errors too -------------------------------------------------

_PRINTS = '"""Prints."""\nimport numpy as np\nDEVICE = "pvc"\nprint("hello at import")\n' \
          'def main(d):\n    print("hello in main")\n    return {"result": np.zeros(2), "oracle": np.zeros(2)}\n'


def test_json_stays_json_when_the_program_prints(tmp_path, capsys):
    p = _write(tmp_path, "talk.py", _PRINTS)
    main(["run", str(p), "--json"])
    out, err = capsys.readouterr()
    assert json.loads(out)["verdict"] == "bit-identical"          # was: "hello at import\nhello in main\n{..."
    assert "hello at import" in err and "hello in main" in err


_TYPED_IN_MAIN = '"""Raises a typed error."""\nDEVICE = "pvc"\ndef main(d):\n' \
                 '    from systolic.errors import InvalidValue\n    raise InvalidValue("bad thing", rule="r1")\n'


def test_traceback_of_a_typed_error_raised_by_the_program(tmp_path, capsys):
    p = _write(tmp_path, "typed.py", _TYPED_IN_MAIN)
    with pytest.raises(SystemExit):
        main(["run", str(p), "--traceback"])
    err = capsys.readouterr().err
    # was: only the error line (the typed error passes through with no __cause__)
    assert "Traceback" in err and "typed.py" in err and "InvalidValue" in err and "error: " in err
    with pytest.raises(SystemExit):
        main(["run", str(p)])
    assert "Traceback" not in capsys.readouterr().err


def test_json_writes_non_finite_floats_as_strings(tmp_path, capsys):
    p = _write(tmp_path, "nan.py", '"""NaN result."""\nimport numpy as np\nDEVICE = "pvc"\ndef main(d):\n'
               '    return {"result": np.array([np.nan, 1.0]), "oracle": np.array([0.0, 1.0]),\n'
               '            "peak": float("inf"), "low": float("-inf")}\n')
    with pytest.raises(SystemExit):
        main(["run", str(p), "--json"])
    out = capsys.readouterr().out

    def refuse(name):                               # RFC 8259 has no NaN/Infinity literals
        raise ValueError(f"bare {name} in the JSON")
    rep = json.loads(out, parse_constant=refuse)    # was: bare NaN / Infinity / -Infinity
    assert rep["checks"][0]["first_mismatch"]["result"] == "NaN"
    assert rep["extras"]["peak"] == "Infinity" and rep["extras"]["low"] == "-Infinity"


# --- sibling modules: importable in main, never shared between programs of different directories ----------------

_SIBLING = '"""Imports a sibling in main."""\nDEVICE = "pvc"\ndef main(d):\n    import sib_helper_mod\n' \
           '    return {"result": sib_helper_mod.f(), "oracle": sib_helper_mod.g()}\n'


def test_sibling_module_imported_in_main_is_the_programs_own(tmp_path):
    import sys
    reps = []
    for i, value in ((1, 7), (2, 9)):
        d = tmp_path / f"dir{i}"
        d.mkdir()
        (d / "sib_helper_mod.py").write_text(
            f"import numpy as np\ndef f():\n    return np.array([{value}])\ndef g():\n    return np.array([{value}])\n")
        _write(d, "prog.py", _SIBLING)
        reps.append(run_file(d / "prog.py"))      # was: ProgramError 'No module named sib_helper_mod' (in main)
    assert [r["verdict"] for r in reps] == ["bit-identical", "bit-identical"]
    assert "sib_helper_mod" not in sys.modules and str(tmp_path / "dir2") not in sys.path


def test_sibling_of_another_directory_is_not_reused(tmp_path):
    # the first directory's module must not answer the second program's import (it returns a mismatching pair)
    for i, (f, g) in ((1, (1, 1)), (2, (2, 3))):
        d = tmp_path / f"dir{i}"
        d.mkdir()
        (d / "sib_helper_mod.py").write_text(
            f"import numpy as np\ndef f():\n    return np.array([{f}])\ndef g():\n    return np.array([{g}])\n")
        _write(d, "prog.py", _SIBLING)
    assert run_file(tmp_path / "dir1" / "prog.py")["verdict"] == "bit-identical"
    assert run_file(tmp_path / "dir2" / "prog.py")["verdict"] == "MISMATCH"


def test_import_error_in_main_follows_the_import_rule(tmp_path):
    p = _write(tmp_path, "imp.py", '"""Imports in main."""\nDEVICE = "pvc"\ndef main(d):\n'
               '    import no_such_module_xyz\n')
    with pytest.raises(ProgramError) as ei:
        run_file(p)
    assert ei.value.rule == "program protocol: the program imports (systolic and its dependencies)"
    assert "no_such_module_xyz" in str(ei.value)


_OS_EXIT_IN_MAIN = '"""Exits hard."""\nimport os\nDEVICE = "pvc"\ndef main(d):\n    os._exit(0)\n'
_OS_EXIT_AT_IMPORT = '"""Exits hard."""\nfrom os import _exit\nDEVICE = "pvc"\n_exit(3)\ndef main(d):\n    pass\n'


@pytest.mark.parametrize("text, when, code", [(_OS_EXIT_IN_MAIN, "in main", 0),
                                              (_OS_EXIT_AT_IMPORT, "while it was imported", 3)])
def test_os_exit_is_a_program_error(tmp_path, text, when, code):
    import os
    real = os._exit
    p = _write(tmp_path, "hard.py", text)
    with pytest.raises(ProgramError) as ei:          # was: the process ended, status 0, no report
        run_file(p)
    assert f"os._exit({code})" in str(ei.value) and when in str(ei.value) and "no os._exit" in ei.value.rule
    assert os._exit is real


def test_a_forked_child_still_exits(tmp_path):
    import multiprocessing
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork here")
    p = _write(tmp_path, "fork.py", '"""Forks."""\nimport multiprocessing\nimport numpy as np\nDEVICE = "pvc"\n'
               'def main(d):\n    ctx = multiprocessing.get_context("fork")\n    pr = ctx.Process(target=int)\n'
               '    pr.start()\n    pr.join(30)\n'
               '    return {"result": np.array([pr.exitcode]), "oracle": np.array([0])}\n')
    assert run_file(p)["verdict"] == "bit-identical"
