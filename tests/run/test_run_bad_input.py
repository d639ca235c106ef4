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


# ---- Python programs: what main returns and raises ---------------------------------------------------------------

def _program(tmp_path, body: str, name: str = "prog.py") -> Path:
    p = tmp_path / name
    p.write_text('"""A program."""\nimport numpy as np\nDEVICE = "spr"\n' + body)
    return p


@pytest.mark.parametrize("expr, dtype", [
    ("np.array([1], 'm8[D]')", "timedelta64[D]"),       # was: TypeError in float(timedelta)
    ("np.zeros(3, 'V4')", "|V4"),                       # was: ValueError converting b'\\x00...' to float
    ("np.zeros(2, [('a', 'i4')])", "[('a', '<i4')]"),
])
def test_results_that_are_not_numbers_are_refused(tmp_path, expr, dtype):
    p = _program(tmp_path, f"def main(device):\n    return {{'result': {expr}, 'oracle': {expr}}}\n")
    with pytest.raises(ProgramError) as ei:
        run_file(p)
    assert ei.value.values == {"result": dtype}
    assert ei.value.rule == "program protocol: main() returns numpy arrays of numbers"


def test_complex_results_are_compared_and_shown_with_both_parts(tmp_path):
    import warnings
    p = _program(tmp_path, "def main(device):\n    return {'result': np.array([1+2j]), 'oracle': np.array([1+3j])}\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")                  # was: ComplexWarning, and "result 1.0 vs oracle 1.0"
        rep = run_file(p)
    first = rep["checks"][0]["first_mismatch"]
    assert rep["verdict"] == "MISMATCH" and first["result"] == 1 + 2j and first["oracle"] == 1 + 3j
    # complex128 = (real, imag) float64 little-endian: 1.0 = 0x3ff0..., 2.0 = 0x4000..., 3.0 = 0x4008...
    assert first["result_bits"] == "0x40000000000000003ff0000000000000"
    assert first["oracle_bits"] == "0x40080000000000003ff0000000000000"
    from systolic.cli.run import _check_lines
    assert "result (1+2j)" in _check_lines(rep["checks"][0]) and "oracle (1+3j)" in _check_lines(rep["checks"][0])


def test_extras_with_other_keys_and_markup_render(tmp_path):
    from rich.console import Console

    from systolic.cli.run import render
    p = _program(tmp_path,
                 "def main(device):\n    return {'result': np.zeros(2), 'oracle': np.zeros(2), 1: 2, None: 3,"
                 " 'note': '[/red] stays text'}\n")
    rep = run_file(p)
    assert rep["extras"] == {"1": 2, "None": 3, "note": "[/red] stays text"}
    con = Console(record=True, width=200)
    render(rep, con)                                    # was: NotRenderableError (int key), MarkupError ([/red])
    out = con.export_text()
    assert "[/red] stays text" in out and "│ None " in out


@pytest.mark.parametrize("body, exc, when", [
    ("class E(BaseException):\n    pass\ndef main(device):\n    raise E('boom')\n", "E", "in main"),
    ("def main(device):\n    raise GeneratorExit\n", "GeneratorExit", "in main"),
    ("raise GeneratorExit\ndef main(device):\n    pass\n", "GeneratorExit", "while it was imported"),
])
def test_base_exceptions_of_the_program_are_program_errors(tmp_path, body, exc, when):
    with pytest.raises(ProgramError) as ei:
        run_file(_program(tmp_path, body))
    assert ei.value.values["exception"] == exc and f"raised {exc}" in str(ei.value) and when in str(ei.value)


def test_keyboard_interrupt_is_not_swallowed(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        run_file(_program(tmp_path, "def main(device):\n    raise KeyboardInterrupt\n"))
    with pytest.raises(KeyboardInterrupt):
        run_file(_program(tmp_path, "raise KeyboardInterrupt\n", "p2.py"))


# ---- expect lines: each one is a claim -----------------------------------------------------------------------------

@pytest.mark.parametrize("second", ["V1[0:2] = 0 1", "V1[1:3] = 1 2", "V1 = " + " ".join(["0"] * 16)])
def test_overlapping_expect_lines_are_refused_naming_both(tmp_path, second):
    # was: the second line overwrote the first in the expected array, so the wrong first line (5 6) went
    # unchecked and the verdict was bit-identical
    src = (ROOT / "examples" / "visa" / "simd_add.visa").read_text()
    p = tmp_path / "prog.visa"
    p.write_text("// systolic-run: expect V1[0:2] = 5 6\n" + f"// systolic-run: expect {second}\n" + src)
    with pytest.raises(ProgramError) as ei:
        run_file(p)
    assert ei.value.rule == "systolic-run expect: the lines of one variable cover disjoint elements"
    assert ei.value.values["line"] == 2 and ei.value.values["other_line"] == 1


def test_disjoint_expect_lines_are_each_checked(tmp_path):
    src = (ROOT / "examples" / "visa" / "simd_add.visa").read_text()
    p = tmp_path / "prog.visa"
    p.write_text("// systolic-run: expect V1[0:2] = 5 6\n// systolic-run: expect V1[2:4] = 2 3\n" + src)
    rep = run_file(p)
    assert rep["verdict"] == "MISMATCH" and rep["checks"][0]["first_mismatch"]["index"] == [0]


# ---- a check must compare something, against an independent oracle ------------------------------------------------

def test_a_check_of_zero_elements_is_unchecked(tmp_path):
    # was: "bit-identical" (and "0 elements bit-identical") though nothing was compared
    p = _program(tmp_path, "def main(device):\n    return {'result': np.zeros((0, 3)), 'oracle': np.zeros((0, 3))}\n")
    rep = run_file(p)
    assert rep["verdict"] == "unchecked" and rep["checks"][0]["ok"] is None
    from systolic.cli.run import _check_lines
    assert "nothing was compared" in _check_lines(rep["checks"][0])


def test_an_empty_ir_oracle_is_unchecked(tmp_path):
    text = IR.read_text().replace(ORACLE, "; systolic-run: oracle @C = gemm-int8 A=@A:s8 B=@B:u8 M=0 N=0 K=0")
    p = tmp_path / "prog.ll"
    p.write_text(text)
    rep = run_file(p)
    assert rep["verdict"] == "unchecked" and rep["checks"][0]["elements"] == 0


def test_a_mismatch_beside_an_empty_check_is_still_a_mismatch(tmp_path):
    text = IR.read_text().replace(ORACLE, "; systolic-run: oracle @C = gemm-int8 A=@A:s8 B=@B:u8 M=0 N=0 K=0\n"
                                  "; systolic-run: expect @C:i32[0:1] = 123456789")
    p = tmp_path / "prog.ll"
    p.write_text(text)
    assert run_file(p)["verdict"] == "MISMATCH"


@pytest.mark.parametrize("ret", ["{'result': a, 'oracle': a}", "{'result': a, 'oracle': a[:]}",
                                 "{'result': a[1:], 'oracle': a[:-1]}"])
def test_result_and_oracle_sharing_memory_are_refused(tmp_path, ret):
    p = _program(tmp_path, f"def main(device):\n    a = np.arange(4)\n    return {ret}\n")
    with pytest.raises(ProgramError) as ei:
        run_file(p)
    assert ei.value.rule == "program protocol: the oracle is computed independently (its own array)"


@pytest.mark.parametrize("value", ["1e40", "0.1"])
def test_a_bad_fill_value_names_the_fill_directive(tmp_path, value):
    text = IR.read_text().replace("; systolic-run: fill @A = random 1", f"; systolic-run: fill @A:f32 = {value}")
    line = 1 + text.splitlines().index(f"; systolic-run: fill @A:f32 = {value}")
    p = tmp_path / "prog.ll"
    p.write_text(text)
    with pytest.raises(ProgramError) as ei:
        run_file(p)
    # was: "the expected values ..." under the rule of the expect directive
    assert ei.value.rule == "systolic-run fill: every value is exact in the variable's type"
    assert "values of fill" in str(ei.value) and ei.value.values["line"] == line


# ---- a time limit: a program that never returns ends with an error naming the limit -------------------------------

@pytest.mark.parametrize("body", ["def main(device):\n    while True:\n        pass\n",
                                  # a program's own `except Exception` must not swallow the limit
                                  "def main(device):\n    while True:\n        try:\n            while True:\n"
                                  "                pass\n        except Exception:\n            pass\n",
                                  "while True:\n    pass\ndef main(device):\n    pass\n"])
def test_a_program_that_never_returns_hits_the_time_limit(tmp_path, body):
    import signal
    import time
    p = _program(tmp_path, body)
    t0 = time.monotonic()
    with pytest.raises(ProgramError) as ei:            # was: a hang (no limit at all)
        run_file(p, timeout=0.3)
    assert time.monotonic() - t0 < 10
    assert ei.value.rule == "systolic run --timeout SECONDS: the program finishes within the limit"
    assert ei.value.values["timeout"] == 0.3 and "0.3 s" in str(ei.value)
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)     # the timer is off again


def test_the_cli_timeout_option(tmp_path, capsys):
    from systolic.cli import main
    p = _program(tmp_path, "def main(device):\n    while True:\n        pass\n")
    with pytest.raises(SystemExit) as ei:
        main(["run", str(p), "--timeout", "0.2"])
    assert ei.value.code == 1 and "time limit of 0.2 s" in capsys.readouterr().err
    ok = _program(tmp_path, "def main(device):\n    return {'result': np.zeros(1), 'oracle': np.zeros(1)}\n", "ok.py")
    main(["run", str(ok), "--timeout", "0", "--json"])           # 0: no limit
    assert '"bit-identical"' in capsys.readouterr().out


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf"), "5", True])
def test_a_bad_time_limit_is_refused(tmp_path, bad):
    p = _program(tmp_path, "def main(device):\n    return {'result': np.zeros(1), 'oracle': np.zeros(1)}\n")
    with pytest.raises(ProgramError) as ei:
        run_file(p, timeout=bad)
    assert ei.value.rule == "systolic run --timeout SECONDS: >= 0"


def test_deadline_gives_an_outer_alarm_only_what_is_left():
    """A timer pending before the run gets back its remaining time, not the time it had at the start."""
    import signal
    import time

    from systolic.run.deadline import limit
    if not hasattr(signal, "setitimer"):
        pytest.skip("no interval timers here")
    old = signal.signal(signal.SIGALRM, lambda *a: None)
    try:
        signal.setitimer(signal.ITIMER_REAL, 5.0)
        with limit(30):
            time.sleep(0.3)
        left = signal.getitimer(signal.ITIMER_REAL)[0]
        assert 4.0 < left < 4.8
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
