"""``systolic visa`` commands and the runnable examples under examples/visa/."""

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from systolic.cli import cli, main

EX = Path(__file__).resolve().parents[2] / "examples" / "visa"


def invoke(*args):
    return CliRunner().invoke(cli, ["visa", *args])


@pytest.mark.parametrize("path", sorted(EX.glob("*.visa")), ids=lambda p: p.name)
def test_every_example_runs_without_arguments(path):
    r = invoke("run", str(path))
    assert r.exit_code == 0, r.output
    assert "=" in r.output


def run_json(path, *extra):
    r = invoke("run", str(path), "--json", *extra)
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def test_examples_compute_what_their_comments_say():
    out = run_json(EX / "simd_add.visa")
    assert out["V2"] == [i + 100 for i in range(16)]
    assert out["V4"] == [(c // 4) * 8 + (c % 4) * 2 + 115 for c in range(8)]
    out = run_json(EX / "predicated_select.visa")
    assert out["Y"] == [abs(x) for x in range(-8, 8)] and out["W"] == [7] * 16
    assert out["Z"] == [int(x >= 0) for x in range(-8, 8)]
    out = run_json(EX / "indirect.visa")
    assert out["T"] == [20, 30, 40, 50] and out["G"] == [70, 0, 30, 50]
    d = np.array(run_json(EX / "dpas_gemm_bf16.visa", "--out", "D")["D"]).reshape(8, 16)
    a = np.array([[k - 8 + m for k in range(16)] for m in range(8)], float)
    b = np.array([[(k == n) + (k == n + 1) for n in range(16)] for k in range(16)], float)
    assert np.array_equal(d, 1000 * np.arange(8)[:, None] + a @ b)
    assert run_json(EX / "dpas_gemm_bf16.visa", "--out", "D", "--path", "fast")["D"] == d.ravel().tolist()
    out = run_json(EX / "masks.visa")
    assert out["Y"] == [1, 1, 1, 1, 0, 0, 0, 0] and out["Z"] == [0] * 8 and out["U"] == [0x0F0F00FF]
    assert run_json(EX / "masks.visa", "--em", "0")["W"] == [0, 0, 0, 0, 3, 3, 3, 3]
    d = np.array(run_json(EX / "dpas_int8.visa", "--out", "D")["D"]).reshape(8, 16)
    assert np.array_equal(d, [[100 + (m + 1) * (4 * n - 31) for n in range(16)] for m in range(8)])


def test_run_with_inputs_and_save(tmp_path):
    prog = tmp_path / "p.visa"
    prog.write_text(".decl X v_type=G type=f num_elts=4\n.decl Y v_type=G type=f num_elts=4\n"
                    "mul (M1, 4) Y(0,0)<1> X(0,0)<1;1,0> 2.0:f\n")
    np.save(tmp_path / "x.npy", np.array([1, 2.5, -3, 0.25], np.float32))
    r = invoke("run", str(prog), "--in", f"X={tmp_path / 'x.npy'}", "--out", "Y", "--save", str(tmp_path / "o"),
               "--platform", "dg2")
    assert r.exit_code == 0, r.output
    assert np.load(tmp_path / "o" / "Y.npy").tolist() == [2, 5, -6, 0.5]
    r = invoke("run", str(prog), "--in", "X=1,2,3,4", "--out", "Y", "--json")
    assert json.loads(r.output) == {"Y": [2.0, 4.0, 6.0, 8.0]}


def test_run_inputs_are_read_exactly(tmp_path):
    """--in values keep their exact value until the variable's type rounds them once (worked by hand):
    2**60 + 2**52 + 1 lies above bf16's midpoint and rounds to 2**60 + 2**53 (0x5d81; through float64 it became
    the midpoint, 2**60); 1.00390625000000000001 = 1 + 2**-8 + 1e-20 rounds to 1 + 2**-7 (0x3f81; as a float64
    literal it was the midpoint 1 + 2**-8 and went to 1.0); -0.0 keeps its sign; 0x1e is thirty."""
    prog = tmp_path / "p.visa"
    prog.write_text(".decl X v_type=G type=bf num_elts=3\n.decl D v_type=G type=d num_elts=2\n")
    r = invoke("run", str(prog), "--in", "X=1157425104234217473,1.00390625000000000001,-0.0", "--in", "D=0x1e,-7",
               "--save", str(tmp_path / "o"))
    assert r.exit_code == 0, r.output
    assert np.load(tmp_path / "o" / "X.npy").view(np.uint16).tolist() == [0x5D81, 0x3F81, 0x8000]
    assert np.load(tmp_path / "o" / "D.npy").tolist() == [30, -7]
    r = invoke("run", str(prog), "--in", "D=1.5")
    assert r.exit_code != 0 and "input value 3/2" in str(r.exception) and "not an integer" in str(r.exception)


def test_broken_program_exits_nonzero_with_line_column(tmp_path, capsys):
    prog = tmp_path / "bad.visa"
    prog.write_text(".decl X v_type=G type=d num_elts=8\n\nadd (M1, 8) X(0,0)<1> X(0,0)<1;1 0x1:d\n")
    with pytest.raises(SystemExit) as e:
        main(["visa", "run", str(prog)])
    assert e.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and f"{prog}:3:34:" in err
    prog.write_text(".decl X v_type=G type=d num_elts=8\nadd (M1, 8) X(0,0)<0> X(0,0)<1;1,0> 0x1:d\n")
    with pytest.raises(SystemExit):
        main(["visa", "run", str(prog)])
    err = capsys.readouterr().err
    assert "2:13:" in err and "rule 5" in err


def test_encode_decode_roundtrip(tmp_path):
    src = EX / "indirect.visa"
    r = invoke("encode", str(src), "-o", str(tmp_path / "b.bin"))
    assert r.exit_code == 0, r.output
    hexes = "".join(line.split()[0] for line in r.output.splitlines())
    texts = [line.split(None, 1)[1] for line in r.output.splitlines()]
    r2 = invoke("decode", str(src), hexes)
    assert r2.exit_code == 0 and r2.output.splitlines() == texts
    r3 = invoke("decode", str(src), "--file", str(tmp_path / "b.bin"))
    assert r3.output.splitlines() == texts
    bad = CliRunner().invoke(cli, ["visa", "decode", str(src), "29ff"])
    assert bad.exit_code != 0


def test_fmt_and_region():
    r = invoke("fmt", str(EX / "simd_add.visa"))
    assert "mul (M1, 8) V3(0,0)<2> V1(0,0)<8;8,1> 0x2:d" in r.output
    r = invoke("region", "(1,2)<8;4,2>", "-t", "d", "-n", "8", "-p", "pvc", "--json")
    rows = json.loads(r.output)
    assert [x["element"] for x in rows] == [18, 20, 22, 24, 26, 28, 30, 32]
    assert rows[0]["grf"] == 1 and rows[0]["subreg_byte"] == 8
    r = invoke("region", "(1,2)<8;4,2>", "-t", "d", "-n", "8", "-p", "dg2")  # 32-byte GRFs: spans 1..3
    assert r.exit_code != 0 and "rule 6" in str(r.exception)
    r = invoke("region", "(0,0)<0>", "-n", "8")
    assert r.exit_code != 0
    for t in ("v", "bool"):                       # types no general operand has (the library's one check)
        r = invoke("region", "(0,0)<1>", "-t", t, "-n", "8")
        assert r.exit_code != 0 and "may not have type" in str(r.exception)
    r = invoke("region", "(0,0)<1>", "-n", "3")
    assert r.exit_code != 0 and "execution size" in str(r.exception)


def test_trace_and_large_grf():
    r = invoke("run", str(EX / "predicated_select.visa"), "--trace", "--out", "W")
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0].startswith("11: add (M1, 8) X(0,0)<1>") and "-> X = [-8 -7" in lines[0]
    assert any("(P1.any) mov (M1, 16) W(0,0)<1> 0x7:d  -> W = [7 7" in ln for ln in lines)
    r = invoke("run", str(EX / "simd_add.visa"), "--num-grf", "256", "--out", "V4", "--json")
    assert json.loads(r.output)["V4"][0] == 115
    r = invoke("run", str(EX / "simd_add.visa"), "--num-grf", "100")
    assert r.exit_code != 0 and "GRF mode" in str(r.exception)


def test_vars_shows_the_placement():
    r = invoke("vars", str(EX / "dpas_int8.visa"), "--json")
    assert r.exit_code == 0, r.output
    rows = {x["name"]: x for x in json.loads(r.output)}
    assert rows["SEQ"]["offset"] == 0 and rows["SEQ"]["bytes"] == 64
    assert rows["A"]["offset"] == 64 and rows["A"]["first"] == "r1.0" and rows["Ab"]["offset"] == 64
    assert rows["B"]["first"] == "r5.0" and rows["D"]["last"] == "r28.63"
    r = invoke("vars", str(EX / "dpas_int8.visa"), "-p", "dg2", "--json")
    assert {x["name"]: x for x in json.loads(r.output)}["A"]["first"] == "r2.0"


def test_decode_missing_file_is_one_error_line(capsys, tmp_path):
    missing = tmp_path / "nonexistent.bin"
    with pytest.raises(SystemExit) as e:
        main(["visa", "decode", str(EX / "simd_add.visa"), "--file", str(missing)])
    assert e.value.code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: cannot read ") and str(missing) in err[0]


def test_decode_file_round_trips_encode(tmp_path):
    # encode -> bytes on disk -> decode --file gives the program's instruction lines back
    from systolic.visa import asm
    prog = str(EX / "simd_add.visa")
    r = invoke("encode", prog, "--output", str(tmp_path / "b.bin"))
    assert r.exit_code == 0, r.output
    r = invoke("decode", prog, "--file", str(tmp_path / "b.bin"))
    assert r.exit_code == 0, r.output
    p = asm.parse(Path(prog).read_text())
    assert r.output.splitlines() == [asm.format_instruction(i, p) for i in p.instructions]


# ---- Machine arguments the CLI passes through: typed errors, not TypeError/AttributeError

@pytest.mark.parametrize("kw,key", [
    (dict(em="x"), "em"), (dict(em=1.0), "em"), (dict(em=True), "em"), (dict(em=-1), "em"),
    (dict(em=1 << 32), "em"), (dict(num_grf="x"), "num_grf"), (dict(num_grf=100), "num_grf"),
])
def test_machine_bad_arguments(kw, key):
    from systolic.errors import InvalidValue
    from systolic.visa import asm
    from systolic.visa.interp import Machine
    p = asm.parse((EX / "simd_add.visa").read_text())
    with pytest.raises(InvalidValue) as e:
        Machine(p, "pvc", **kw)
    assert key in e.value.values


def test_machine_needs_a_program_and_takes_numpy_em():
    from systolic.errors import InvalidValue
    from systolic.visa import asm
    from systolic.visa.interp import Machine
    for bad in (None, "add (M1, 8) X(0,0)<1> X(0,0)<1;1,0> 0x1:d"):
        with pytest.raises(InvalidValue) as e:
            Machine(bad, "pvc")
        assert e.value.values == {"program": type(bad).__name__}
    p = asm.parse((EX / "simd_add.visa").read_text())
    assert Machine(p, "pvc", em=np.uint32(0b101)).em[:4] == [1, 0, 1, 0]
