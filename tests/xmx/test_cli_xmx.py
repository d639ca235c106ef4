"""The ``systolic xmx`` verbs."""

import json

import numpy as np
from click.testing import CliRunner

from systolic.cli import cli


def run(*args):
    r = CliRunner().invoke(cli, ["xmx", *args])
    return r


def test_platforms_json():
    r = run("platforms", "--json")
    assert r.exit_code == 0, r.output
    d = {p["name"]: p for p in json.loads(r.output)}
    assert d["dg2"]["exec_size"] == 8 and d["pvc"]["grf_bytes"] == 64 and d["dg2"]["has_dpasw"]
    assert run("platforms").exit_code == 0


def test_dpas_int_json_matches_numpy():
    r = run("dpas", "--platform", "dg2", "--precision", "s8", "--rc", "3", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    a, b, c = (np.array(d[x], dtype=np.int64) for x in "ABC")
    assert np.array_equal(np.array(d["D"]), a @ b + c)


def test_dpas_float_spec_and_fast_agree():
    outs = [json.loads(run("dpas", "--precision", "bf", "--rc", "2", "--path", path, "--json").output)["D"]
            for path in ("spec", "fast")]
    assert outs[0] == outs[1]


def test_dpas_rule_violation_is_one_error_line():
    r = run("dpas", "--platform", "dg2", "--precision", "tf32")
    assert r.exit_code != 0
    assert "tf32" in str(r.exception) or "tf32" in r.output


def test_gemm_on_npy_files(tmp_path):
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (5, 40)).astype(np.int8)
    b = rng.integers(-128, 128, (40, 7)).astype(np.int8)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    r = run("gemm", str(tmp_path / "a.npy"), str(tmp_path / "b.npy"), "--platform", "dg2", "--out",
            str(tmp_path / "d.npy"), "--json")
    assert r.exit_code == 0, r.output
    assert np.array_equal(np.load(tmp_path / "d.npy"), a.astype(np.int64) @ b.astype(np.int64))


def test_layout_src1_bf16_pvc():
    r = run("layout", "--platform", "pvc", "--precision", "bf16", "--operand", "src1", "--json")
    rows = json.loads(r.output)
    assert rows[0] == {"grf": 0, "dword": 0, "byte": 0, "elements": [[0, 0], [1, 0]]}
    assert rows[17] == {"grf": 1, "dword": 1, "byte": 68, "elements": [[2, 1], [3, 1]]}
    r = run("layout", "--platform", "dg2", "--precision", "s8", "--operand", "src2", "--rc", "2", "--json")
    rows = json.loads(r.output)
    assert rows[8]["elements"] == [[1, 0], [1, 1], [1, 2], [1, 3]] and rows[8]["grf"] == 1
    assert run("layout").exit_code == 0


# ---- errors and ml_dtypes files (one `error: ...` line, exit status 1)

import pytest  # noqa: E402

from systolic.cli import main  # noqa: E402


def one_error_line(capsys, argv):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def test_gemm_bf16_files_need_and_use_a_dtype(tmp_path, capsys):
    import ml_dtypes
    from fractions import Fraction
    rng = np.random.default_rng(1)
    # multiples of 1/8 in [-2, 2]: every product and partial sum is exact in fp32, so D is the exact sum
    a = (rng.integers(-16, 17, (5, 40)) / 8).astype(ml_dtypes.bfloat16)
    b = (rng.integers(-16, 17, (40, 7)) / 8).astype(ml_dtypes.bfloat16)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    assert np.load(tmp_path / "a.npy").dtype.kind == "V"      # what np.save does to ml_dtypes
    fa, fb = str(tmp_path / "a.npy"), str(tmp_path / "b.npy")
    err = one_error_line(capsys, ["xmx", "gemm", fa, fb])
    assert "--a-dtype" in err and "|V2" in err
    main(["xmx", "gemm", fa, fb, "--a-dtype", "bf16", "--b-dtype", "bf", "--out", str(tmp_path / "d.npy")])
    d = np.load(tmp_path / "d.npy")
    assert d.dtype == np.float32
    exact = [[sum(Fraction(float(a[i, k])) * Fraction(float(b[k, j])) for k in range(40)) for j in range(7)]
             for i in range(5)]
    assert [[Fraction(float(x)) for x in row] for row in d] == exact
    assert any(x != 0 for row in exact for x in row)


def test_gemm_int4_files(tmp_path, capsys):
    import ml_dtypes
    rng = np.random.default_rng(2)
    a = rng.integers(-8, 8, (3, 64)).astype(ml_dtypes.int4)
    b = rng.integers(-8, 8, (64, 5)).astype(ml_dtypes.int4)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    fa, fb = str(tmp_path / "a.npy"), str(tmp_path / "b.npy")
    r = run("gemm", fa, fb, "--platform", "dg2", "--a-dtype", "s4", "--b-dtype", "int4", "--json")
    assert r.exit_code == 0, r.output
    ai = [[int(x) for x in row] for row in a.astype(np.int64)]
    bi = [[int(x) for x in row] for row in b.astype(np.int64)]
    exact = [[sum(ai[i][k] * bi[k][j] for k in range(64)) for j in range(5)] for i in range(3)]
    assert json.loads(r.output)["D"] == exact
    # the element size must fit the type, and typed data is never converted
    assert "cannot be bf16" in one_error_line(capsys, ["xmx", "gemm", fa, fb, "--a-dtype", "bf16", "--b-dtype", "s4"])
    np.save(tmp_path / "i8.npy", np.ones((3, 64), np.int8))
    assert "not int4" in one_error_line(capsys, ["xmx", "gemm", str(tmp_path / "i8.npy"), fb, "--a-dtype", "s4",
                                                 "--b-dtype", "s4"])
    assert "unknown element type" in one_error_line(capsys, ["xmx", "gemm", fa, fb, "--a-dtype", "nope"])


def test_gemm_unreadable_npy_is_one_error_line(tmp_path, capsys):
    bad = tmp_path / "bad.npy"
    bad.write_bytes(b"not a numpy file")
    good = tmp_path / "b.npy"
    np.save(good, np.ones((4, 4), np.int8))
    assert "cannot load A" in one_error_line(capsys, ["xmx", "gemm", str(bad), str(good)])
    np.save(tmp_path / "obj.npy", np.array([None, 1], dtype=object), allow_pickle=True)
    assert "cannot load B" in one_error_line(capsys, ["xmx", "gemm", str(good), str(tmp_path / "obj.npy")])


@pytest.mark.parametrize("args,word", [
    (["--rc", "-1"], "repeat count"), (["--rc", "0"], "repeat count"), (["--rc", "9"], "repeat count"),
    (["--seed", "-1"], "seed"), (["--precision", "s8", "--src2-precision", "bf"], "one kind"),
    (["--precision", "s8", "--dst-type", "f"], "illegal"),
])
def test_dpas_cli_bad_values_are_one_error_line(capsys, args, word):
    assert word in one_error_line(capsys, ["xmx", "dpas", *args])
