"""The ``// systolic-run:`` header of .cl programs (docs/cl.md, "systolic run kernel.cl"): each malformed numeric
field is a ProgramError naming the clause and the value (reviewer's findings: bare ValueError, ZeroDivisionError,
OverflowError)."""
import pytest

from systolic.errors import ProgramError
from systolic.run import run_file

KERNEL = "kernel void k(global int* x, int n) { x[get_global_id(0)] += n; }\n"
HEAD = ["device pvc", "kernel k", "global 16", "local 16"]


def _run(tmp_path, *lines):
    p = tmp_path / "k.cl"
    given = {x.split()[0] for x in lines if x.split()[0] in ("global", "local")}
    head = [x for x in HEAD if x.split()[0] not in given]
    p.write_text("".join(f"// systolic-run: {x}\n" for x in (*head, *lines)) + KERNEL)
    return run_file(p)


@pytest.mark.parametrize("lines, clause, value", [
    (["buffer X:i32[16] = random 5 1 3", "args X 1:int"], "random", "5"),
    (["buffer X:i32[16] = random 1 x 3", "args X 1:int"], "random", "x"),
    (["buffer X:i32[16] = random 1 5 -3", "args X 1:int"], "random", "-3"),
    (["buffer X:i32[16] = zeros", "buffer B:i32[16] = zeros", "args X 1:int",
      "oracle X = matmul X B M=4 N=4 K=4 vnni=0"], "vnni", "0"),
    (["buffer X:i32[16] = zeros", "args X 1:int", "oracle X = matmul X X M=0 N=4 K=4"], "M", "0"),
    (["buffer X:i32[16] = zeros", "args X 1:int", "oracle X = matmul X X M=4 N=4 K=4 Q=2"], "Q", "Q"),
    (["buffer X:i32[16] = zeros", "args X 99999999999:int"], "args", "99999999999"),
    (["buffer X:i32[16] = zeros", "args X 0.5:int"], "args", "0.5"),
    (["buffer X:i32[16] = zeros", "args X 1e40:float"], "args", "1e40"),
    (["buffer X:i32[16] = zeros", "args X local:abc"], "local", "abc"),
    (["buffer X:i32[16] = zeros", "args X 1:int", "expect X:q7 = 1"], "expect", "q7"),
    (["buffer X:i8[66] = zeros", "args X 1:int", "expect X:i32 = 1"], "expect", "i32"),
    (["buffer X:i32[0] = zeros", "args X 1:int"], "buffer", "0"),
    (["buffer X:i32[99999999999999] = zeros", "args X 1:int"], "buffer", "99999999999999"),
    (["buffer X:i32[16] = zeros", "buffer X:i32[16] = range", "args X 1:int"], "buffer", "X"),
    (["buffer X:i32[16] = zeros", "args X 1:int", "kernel k"], "kernel", "kernel"),
    (["buffer X:i32[16] = zeros", "args X 1:int", "global 0"], "global", "0"),
    (["buffer X:i32[16] = zeros", "args X 1:int", "global 16 1 1 1"], "global", "16 1 1 1"),
    (["buffer X:i32[16] = zeros", "args X 1:int", "local 0x"], "local", "0x"),
    (["buffer X:i32[16] = zeros", "args Y 1:int"], "args", "Y"),
])
def test_malformed_field_is_a_program_error_naming_it(tmp_path, lines, clause, value):
    with pytest.raises(ProgramError) as ei:
        _run(tmp_path, *lines)
    msg = str(ei.value) + repr(getattr(ei.value, "values", ""))
    assert clause in msg and value in msg, msg


def test_well_formed_header_still_runs(tmp_path):
    r = _run(tmp_path, "buffer X:i32[16] = random -3 3 7", "args X 5:int")
    assert r["checks"] == [] or all(c.get("ok", True) for c in r["checks"])
