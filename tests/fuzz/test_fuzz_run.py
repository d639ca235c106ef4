"""Fuzz: ``systolic run`` headers (``systolic-run:`` directives) and program paths.

Oracle: a header that parses has each one-value key (device/cpu/platform, devices, function, args) at most once
and names each fill / oracle / in variable at most once - a repeated one would win silently and the report would
claim checks that were replaced.
"""

import re

from hypothesis import given
from hypothesis import strategies as st

from systolic.run import header, run_file

from .harness import examples, ok, outcome

_LINES = ["device spr", "device pvc", "cpu graniterapids", "platform dg2", "devices spr gnr", "function gemm",
          "function @f", "args @A @B 16", "args", "fill @A = random 1", "fill @A = zero", "fill @B = random 2",
          "oracle @C = gemm-int8 A=@A:s8 B=@B:u8 M=16 N=16 K=64", "oracle @C = x", "oracle = y",
          "expect @C:i32[0:2] = 1 2", "expect @C[2:4] = 3 4", "expect D = 1.5 nan inf", "expect D[0:1] = 0x10",
          "expect X = abc", "in SEED = 1,2,3", "in SEED = 4", "in T = 1", "bogus 1", "expect @C:i32[4:2] = 1",
          "expect", "device", "fill @A", "expect Q[:] = 1e400"]


@examples(120, weight=30)
@given(st.lists(st.sampled_from(_LINES), max_size=8), st.sampled_from([";", "//"]), st.booleans())
def test_header(lines, comment, title):
    text = ("%s A title sentence. More.\n" % comment if title else "") + "\n".join(
        f"{comment} systolic-run: {x}" for x in lines) + "\nbody\n"
    r = outcome(header.parse, text, comment)
    if ok(r):
        keys = []
        for x in lines:
            k, _, rest = x.partition(" ")
            k = "device" if k in ("cpu", "platform") else k
            if k in ("device", "devices", "function", "args"):
                keys.append(k)
            elif k in ("fill", "oracle", "in"):
                keys.append((k, rest.partition("=")[0].strip()))
        assert len(keys) == len(set(keys)), f"a repeated directive was accepted: {lines}"


@examples(40, weight=20)
@given(st.text(alphabet="0123456789 ,.-xabcnif", max_size=20), st.sampled_from(["int8", "uint8", "int32",
                                                                                "float16", "float32"]))
def test_values(text, dtype):
    r = outcome(header.parse_values, text, 1)
    if ok(r):
        t = outcome(header.typed_values, r[1], dtype, 1, text)
        if ok(t):
            for v, a in zip(r[1], t[1].tolist()):
                assert v == a or (v != v and a != a), (v, a)


def test_directory_is_named(tmp_path):
    d = tmp_path / "prog.py"
    d.mkdir()
    r = outcome(run_file, d)
    assert not ok(r) and re.search("is a directory", str(r[1])), r


@examples(12, weight=0.05)
@given(st.one_of(st.integers(-5, 200), st.sampled_from([True, "16", 1.5, None, [16]])))
def test_program_sub_group_size_field(tmp_path_factory, sg):
    """A Python program's reported sub_group_size is a positive integer, else the run is a ProgramError (a
    negative size used to be printed in the report)."""
    d = tmp_path_factory.mktemp("prog")
    p = d / "prog.py"
    p.write_text('"""A program."""\nimport numpy as np\nDEVICE = "pvc"\nDEVICES = ("pvc",)\n\n\ndef main(device):\n'
                 f'    return {{"result": np.zeros(2), "oracle": np.zeros(2), "sub_group_size": {sg!r}}}\n')
    r = outcome(run_file, p)
    if ok(r):
        got = r[1].get("sub_group_size")
        assert got is None or (isinstance(got, int) and got >= 1), got
        assert sg is None or (isinstance(sg, int) and not isinstance(sg, bool) and 1 <= sg <= 128), sg
