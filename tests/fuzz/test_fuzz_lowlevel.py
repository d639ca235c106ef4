"""Fuzz: the vISA parser and interpreter, the LLVM reader (``systolic.compiler.compile_ir``), TILECFG decode
and TileMachine instruction sequences.

Inputs are the example programs mutated (lines dropped, duplicated, swapped, characters replaced, numbers
changed) and random byte strings / instruction sequences. Every case ends ok or with a typed error; a
TILECFG that decodes encodes back to the same 64 bytes (the decode loses nothing).
"""

from pathlib import Path

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from systolic import compiler, visa
from systolic.amx import TileConfig, TileMachine

from .harness import examples, hostile, maybe, ok, outcome

ROOT = Path(__file__).resolve().parents[2]
VISA = {p.name: p.read_text() for p in sorted((ROOT / "examples" / "visa").glob("*.visa"))}
LL = {p.name: p.read_text() for p in sorted((ROOT / "examples" / "amx").glob("*.ll"))}
_TOKENS = ["0x0", "-1", "4294967296", "99999999999999999999", "(M1, 64)", "(M1, 3)", "<0;1,0>", "<1>", ":d",
           ":ub", ":hf", ":bf", "V33", "nan", "@", ")", "(", ",", "dpas.bf.bf.8.8", "i32", "i8 addrspace(1)*",
           "x86_amx", "call", "%x", "undef", "poison", "!0", "<256 x i32>", "align 64", "\x00", "\u00e9"]


def mutate(text: str, data) -> str:
    lines = text.splitlines()
    for _ in range(data.draw(st.integers(1, 4))):
        if not lines:
            break
        i = data.draw(st.integers(0, len(lines) - 1))
        how = data.draw(st.sampled_from(["drop", "dup", "swap", "token", "digit", "cut"]))
        if how == "drop":
            del lines[i]
        elif how == "dup":
            lines.insert(i, lines[i])
        elif how == "swap":
            j = data.draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif how == "token":
            words = lines[i].split(" ")
            k = data.draw(st.integers(0, len(words) - 1))
            words[k] = data.draw(st.sampled_from(_TOKENS))
            lines[i] = " ".join(words)
        elif how == "digit":
            lines[i] = "".join(str(data.draw(st.integers(0, 9))) if c.isdigit() and data.draw(st.booleans()) else c
                               for c in lines[i])
        else:
            lines[i] = lines[i][: data.draw(st.integers(0, len(lines[i])))]
    return "\n".join(lines) + "\n"


@examples(40, weight=1)
@given(st.sampled_from(sorted(VISA)), st.data())
def test_visa_mutated(name, data):
    text = mutate(VISA[name], data)
    r = outcome(visa.parse, text)
    if ok(r) and data.draw(st.booleans()):
        outcome(visa.run_text, text, device=data.draw(maybe(st.sampled_from(["pvc", "dg2", "bmg"]), 6)))


@examples(40, weight=20)
@given(st.text(max_size=200), st.data())
def test_visa_random_text(text, data):
    outcome(visa.parse, data.draw(st.sampled_from(["", ".version 3.6\n.kernel k\n"])) + text)


@examples(20, weight=0.5)
@given(st.sampled_from(sorted(LL)), st.data())
def test_llvm_reader_mutated(name, data):
    outcome(compiler.compile_ir, mutate(LL[name], data))


@examples(60, weight=40)
@given(st.one_of(st.binary(min_size=64, max_size=64), st.binary(max_size=80), hostile()), st.data())
def test_tilecfg_decode(raw, data):
    if isinstance(raw, bytes) and len(raw) == 64 and data.draw(st.booleans()):
        b = bytearray(raw)          # mostly-valid configs: palette 1, reserved zero
        b[0] = data.draw(st.sampled_from([0, 1, 1, 1, 2]))
        for i in list(range(2, 16)) + list(range(32, 48)) + list(range(56, 64)):
            b[i] = 0
        raw = bytes(b)
    r = outcome(TileConfig.from_bytes, raw)
    if ok(r):
        assert r[1].to_bytes() == bytes(raw), "TILECFG decode/encode changed the bytes"


_OPS = ["tilezero", "tileloadd", "tilestored", "tdpbssd", "tdpbf16ps", "tdpfp16ps", "tilerelease", "ldtilecfg",
        "write_tile", "read_tile", "tdpbuud"]


@examples(40, weight=12)
@given(st.lists(st.tuples(st.sampled_from(_OPS), st.lists(maybe(st.integers(0, 9), 6), min_size=3, max_size=3)),
                max_size=6), st.sampled_from(["sapphirerapids", "graniterapids"]))
def test_tile_machine_sequences(seq, cpu):
    m = TileMachine(cpu)
    mem = np.zeros(4096, dtype=np.uint8)
    cfg = TileConfig(1, tiles={i: (16, 64) for i in range(8)})
    for op, (x, y, z) in seq:
        if op == "ldtilecfg":
            outcome(m.ldtilecfg, TileConfig(2) if isinstance(x, int) and x == 0 else cfg)
        elif op == "tilerelease":
            outcome(m.tilerelease)
        elif op == "tilezero":
            outcome(m.tilezero, x)
        elif op in ("tileloadd", "tilestored"):
            outcome(getattr(m, op), x, mem, y, z)
        elif op == "write_tile":
            fill = y if isinstance(y, int) and not isinstance(y, bool) and abs(y) < 100 else 1
            outcome(m.write_tile, x, np.full((16, 16), fill, dtype=np.int32))
        elif op == "read_tile":
            outcome(m.read_tile, x, np.int32)
        else:
            outcome(getattr(m, op), x, y, z)


def test_tilecfg_from_an_integer_is_refused():
    """bytes(64) is 64 zero bytes: TileConfig.from_bytes(64) decoded an all-zero image (and 10**12 exhausted
    memory) instead of refusing a value that is not an image."""
    from systolic.errors import InvalidValue
    for v in (64, 10 ** 12, True, "x" * 64):
        r = outcome(TileConfig.from_bytes, v)
        assert not ok(r) and isinstance(r[1], InvalidValue), v
