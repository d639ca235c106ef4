"""Bad input to the vISA layer found by the bad-input audit: typed errors naming the rule and the values.

Oracles: visa-operands.md (``gen_opnd``: ``ub row_offset``; a general variable has any type but V, UV, VF and
BOOL; the execution sizes of instructions/*.md Exec_size: 1, 2, 4, 8, 16, 32) and the byte layout of the operands
it gives, written out by hand here.
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from systolic.cli import cli
from systolic.errors import IllegalInstruction
from systolic.visa import regions as R


# ------------------------------------------------- finding 8: a destination region checks what a source does

@pytest.mark.parametrize("n", [3, 0, -5, 64])   # 10**9 had been a MemoryError: no test allocates that
def test_dest_region_checks_exec_size(n):
    for fn in (R.dest_element_indices, R.dest_element_indices_np):
        with pytest.raises(IllegalInstruction, match="execution size must be 1, 2, 4, 8, 16 or 32") as ei:
            fn(0, 0, 1, n, 4, 64)
        assert ei.value.values == {"exec_size": n} and "Exec_size" in ei.value.rule
    with pytest.raises(IllegalInstruction, match="execution size"):
        R.region_elements("(0,0)<1>", "d", n, 64)


@pytest.mark.parametrize("n", [3, 0, -5, 33])
def test_cli_region_dest_exec_size(n):
    r = CliRunner().invoke(cli, ["visa", "region", "(0,0)<1>", "-n", str(n)])
    assert r.exit_code == 1 and isinstance(r.exception, IllegalInstruction)
    assert r.exception.values == {"exec_size": n}


@pytest.mark.parametrize("spec, field, value", [("(99999999999999999999,0)<1>", "row_offset", 99999999999999999999),
                                                ("(256,0)<1>", "row_offset", 256),
                                                ("(256,0)<0;1,0>", "row_offset", 256)])
def test_row_offset_is_a_ub(spec, field, value):
    with pytest.raises(IllegalInstruction, match="row offset out of range") as ei:
        R.region_elements(spec, "ub", 1, 64)
    assert ei.value.values[field] == value and ei.value.values["max"] == 255
    assert ei.value.rule == "visa-operands.md: gen_opnd.row_offset (ub)"
    r = CliRunner().invoke(cli, ["visa", "region", spec, "-t", "ub", "-n", "1"])
    assert r.exit_code == 1 and isinstance(r.exception, IllegalInstruction)
    assert r.exception.values[field] == value


def test_row_255_still_answers():
    # (255, 0) of ub at exec size 1, 64-byte GRF: element 255 * 64 = 16320
    assert R.region_elements("(255,0)<1>", "ub", 1, 64) == [
        {"channel": 0, "element": 16320, "byte": 16320, "grf": 255, "subreg_byte": 0}]


@pytest.mark.parametrize("tname", ["v", "uv", "vf", "bool"])
@pytest.mark.parametrize("spec", ["(0,0)<1>", "(0,0)<8;8,1>"])
def test_region_type_is_a_general_variable_type(tname, spec):
    with pytest.raises(IllegalInstruction, match=f"may not have type {tname.upper()}") as ei:
        R.region_elements(spec, tname, 8, 64)
    assert ei.value.values == {"type": tname} and "V, UV, VF and BOOL" in ei.value.rule


def test_region_elements_hand_worked():
    # fig. 3 of visa-operands.md: V1(0,1)<16;8,2> of ub at exec size 16, 32-byte GRF: 1, 3, ..., 31
    rows = R.region_elements("(0,1)<16;8,2>", "ub", 16, 32)
    assert [r["element"] for r in rows] == list(range(1, 32, 2))
    # a dst (1,2)<2> of w, exec size 4, 64-byte GRF: elements 32 + 2 + 2i, bytes twice that
    rows = R.region_elements("(1,2)<2>", "w", 4, 64)
    assert [(r["element"], r["byte"], r["grf"], r["subreg_byte"]) for r in rows] == [
        (34, 68, 1, 4), (36, 72, 1, 8), (38, 76, 1, 12), (40, 80, 1, 16)]


# ------------------------------------------------- finding 17: addr_add's &V Src0 is canonical or refused

# indirect.visa: SRC is variable 1 (type d); A0 an address variable. The bytes, written out by hand:
# 28 addr_add | 00 exec (M1, 1) | 01 0000 00 00 dst A0(0) | src0 tag, gen_opnd id 1, row 0, col 0, region |
# 05 02 00000000 src1 0x0:uw. The canonical &SRC is tag 0x00 (General, no modifier) and region 0x0121 = <0;1,0>
# (vstride code 1 = 0, width code 2 = 1, hstride code 1 = 0).
_HEAD, _SRC1 = "2800" "0100000000", "0502" "00000000"


def _decode(hexbytes):
    from pathlib import Path

    from systolic.visa import asm, encoding
    root = Path(__file__).resolve().parents[2]
    p = asm.parse((root / "examples/visa/indirect.visa").read_text())
    return [asm.format_instruction(i, p) for i in encoding.decode_program(bytes.fromhex(hexbytes), p)], p


def test_addr_add_canonical_address_of_decodes():
    text, _ = _decode(_HEAD + "00" "01000000" "00" "00" "2101" + _SRC1)
    assert text == ["addr_add (M1, 1) A0(0) &SRC 0x0:uw"]


@pytest.mark.parametrize("src0, key, value", [
    ("08" "01000000" "00" "00" "0000", "modifier", "abs"),          # the audit's bytes: modifier 1 and region 0
    ("08" "01000000" "00" "00" "2101", "modifier", "abs"),          # modifier bits only
    ("00" "01000000" "00" "00" "2201", "region", "<1;1,0>"),        # region only (vstride code 2 = 1)
    ("00" "01000000" "00" "00" "0000", "region", "<None;None,None>"),
    ("10" "01000000" "01" "00" "2101", "modifier", "neg"),          # row 1 (kept as a general operand)
])
def test_addr_add_noncanonical_address_of_is_refused(src0, key, value):
    with pytest.raises(IllegalInstruction, match="addr_add's general Src0") as ei:
        _decode(_HEAD + src0 + _SRC1)
    assert ei.value.values == {key: value} and "ADDR_ADD.md notes" in ei.value.rule
    assert "<0;1,0>" in ei.value.rule


@pytest.mark.parametrize("operand, key, value", [("SRC(0,1)<1;1,0>", "region", "<1;1,0>"),
                                                 ("(-)SRC(0,1)<0;1,0>", "modifier", "neg"),
                                                 ("(-)SRC(1,0)<0;1,0>", "modifier", "neg")])
def test_addr_add_text_refuses_what_it_would_drop(operand, key, value):
    from systolic.visa import asm
    src = (".version 3.6\n.kernel k\n.decl SRC v_type=G type=d num_elts=64\n.decl A0 v_type=A num_elts=1\n"
           f"addr_add (M1, 1) A0(0) {operand} 0x0:uw\n")
    with pytest.raises(IllegalInstruction, match="addr_add's general Src0") as ei:
        asm.parse(src)
    assert ei.value.values == {key: value}
    assert ei.value.message.startswith("5:")


# ------------------------------------------------- DPAS/DPASW operands (visa-DPAS.md; visa-operands.md Raw Operands)
# The audit's programs: A (64 D = 256 bytes), B and D (128 D = 512 bytes), all GRF-aligned; on PVC (64-byte GRF,
# exec size 16) dpas.s8.s8.8.8 reads A as 8 rows of 8 * 4 = 32 bytes (256 bytes), B as 8 GRFs (512 bytes) and
# writes D as 8 rows of 16 * 4 = 64 bytes (512 bytes): sizes worked out by hand from visa-DPAS.md "Semantics".
_DPAS_HEAD = (".version 3.6\n.kernel k\n.decl A v_type=G type=d num_elts=64 align=GRF\n"
              ".decl B v_type=G type=d num_elts=128 align=GRF\n.decl D v_type=G type=d num_elts=128 align=GRF\n"
              "mov (M1, 16) A(0,0)<1> 0x01010101:d\nmov (M1, 16) B(0,0)<1> 0x01010101:d\n")
# DG2 (32-byte GRF, exec size 8): dpas(w).s8.s8.8.8 reads A as 8 rows of 32 bytes = 8 GRFs; DPASW.md splits them
# 4 + 4 between the fused pair, so each EU reads 4 GRFs = 128 bytes of its own Src2; D is 8 rows of 8 * 4 bytes.
_DG2_HEAD = (".version 3.6\n.kernel k\n.decl A v_type=G type=d num_elts={na} align=GRF\n"
             ".decl B v_type=G type=d num_elts=64 align=GRF\n.decl D v_type=G type=d num_elts=64 align=GRF\n")


def _dpas_text(src2, op="dpas", head=_DPAS_HEAD, n=16):
    return head + f"{op}.s8.s8.8.8 (M1, {n}) D.0 %null.0 B.0 {src2}\n"


def test_dpas_clean_program_still_runs():
    # only the first 16 dwords of A and B hold 0x01010101 (the rest is zero): A rows 0 and 1 (32 bytes each) are
    # all ones; B's GRF 0 is depth 0 = K rows 0..3 (4 s8 per dword channel). So D rows 0, 1 = 4 and the rest 0.
    from systolic.visa import run_text
    d = run_text(_dpas_text("A(0,0)"), device="pvc", inputs={}).read("D").reshape(8, 16)
    assert d[0].tolist() == [4] * 16 and d[1].tolist() == [4] * 16 and not d[2:].any()


@pytest.mark.parametrize("mod, name", [("(-)", "neg"), ("(abs)", "abs"), ("(-abs)", "neg_abs")])
def test_dpas_src2_modifier_refused(mod, name):
    """visa-DPAS.md "Source Modifier: false": the modifier was parsed and dropped (D came out 4)."""
    from systolic.visa import asm, run_text
    for run in (lambda t: asm.parse(t), lambda t: run_text(t, device="pvc", inputs={})):
        with pytest.raises(IllegalInstruction, match="Src2 takes no source modifier") as ei:
            run(_dpas_text(f"{mod}A(0,0)"))
        assert ei.value.values == {"opcode": "dpas", "modifier": name} and "Source Modifier: false" in ei.value.rule
        assert ei.value.message.startswith("8:")
    with pytest.raises(IllegalInstruction, match="Src2 takes no source modifier"):
        asm.parse(_dpas_text(f"{mod}A(0,0)", "dpasw", _DG2_HEAD.format(na=64), 8))


@pytest.mark.parametrize("region", ["<1;1,0>", "<0;1,0>", "<8;8,1>", "<1,0>"])
def test_dpas_src2_region_refused(region):
    """visa-DPAS.md Notes "Register region: No": a written region was accepted and ignored."""
    from systolic.visa import asm
    with pytest.raises(IllegalInstruction, match="Src2 takes no register region") as ei:
        asm.parse(_dpas_text(f"A(0,0){region}"))
    assert "Register region: No" in ei.value.rule and ei.value.values["opcode"] == "dpas"


def _dpas_record(**src2):
    """The audit's dpas as records, Src2 replaced (a Program built without the assembler)."""
    from dataclasses import replace

    from systolic.visa import asm
    p = asm.parse(_dpas_text("A(0,0)"))
    i = p.instructions[-1]
    p.instructions[-1] = replace(i, srcs=i.srcs[:2] + (replace(i.srcs[2], **src2),))
    return p


@pytest.mark.parametrize("src2, match", [({"modifier": "neg"}, "no source modifier"),
                                         ({"vstride": 0, "width": 1, "hstride": 0}, "no register region"),
                                         ({"hstride": 2}, "no register region")])
def test_dpas_src2_rules_hold_for_every_consumer(src2, match):
    """Run, encode and decode read the same check: records built by hand, and bytes with the modifier bits set."""
    from systolic.visa import encoding
    from systolic.visa.interp import Machine
    p = _dpas_record(**src2)
    with pytest.raises(IllegalInstruction, match=match):
        Machine(p, "pvc").run()
    with pytest.raises(IllegalInstruction, match=match):
        encoding.encode_instruction(p.instructions[-1], p)
    # bytes: opcode 0x83, exec byte, three raw operands (ud id + uw offset = 6 bytes each), then Src2's tag byte
    clean = bytearray(encoding.encode_instruction(_dpas_record().instructions[-1], p))
    assert clean[0] == 0x83 and clean[20] == 0x00           # general operand, no modifier
    assert encoding.decode_program(bytes(clean), p)[0].srcs[2].modifier == "none"
    clean[20] = 2 << 3                                       # modifier bits 3-5 = 2 (neg)
    with pytest.raises(IllegalInstruction, match="no source modifier"):
        encoding.decode_program(bytes(clean), p)


@pytest.mark.parametrize("region", [(1, 1, 0), (0, 1, 0)])
def test_dpas_src2_region_bits_from_igc_decode(region):
    """IGC writes DPAS Src2's record with its source helper's default region word (<1;1,0>, <0;1,0> for a uniform
    variable: CISABuilder.cpp GetSourceOperand) and prints Src2 without one: the bits are don't-care ("Register
    region: No"), so such bytes decode to the region-less Src2 and run as the clean program does."""
    import struct

    from systolic.visa import encoding
    from systolic.visa.interp import Machine
    p = _dpas_record()
    clean = encoding.encode_instruction(p.instructions[-1], p)
    igc = bytearray(clean)
    assert struct.unpack_from("<H", igc, 27)[0] == encoding.encode_region(None, None, 1)   # Src2's region word
    struct.pack_into("<H", igc, 27, encoding.encode_region(*region))
    got = encoding.decode_program(bytes(igc), p)[0]
    assert got == encoding.decode_program(clean, p)[0] == p.instructions[-1]
    p.instructions[-1] = got
    d = Machine(p, "pvc").run().read("D").reshape(8, 16)
    assert d[0].tolist() == [4] * 16 and d[1].tolist() == [4] * 16 and not d[2:].any()


def test_dpas_sat_refused_on_records():
    from dataclasses import replace

    from systolic.visa import encoding
    from systolic.visa.interp import Machine
    p = _dpas_record()
    p.instructions[-1] = replace(p.instructions[-1], sat=True)
    for f in (lambda: Machine(p, "pvc").run(), lambda: encoding.encode_instruction(p.instructions[-1], p)):
        with pytest.raises(IllegalInstruction, match="does not support .sat"):
            f()


def _oob(text, platform="pvc"):
    from systolic.visa import run_text
    with pytest.raises(IllegalInstruction) as ei:
        run_text(text, device=platform, inputs={})
    return ei.value


def test_dpas_dst_may_not_overwrite_the_next_variable():
    """The audit's repro: D of one GRF, E after it; the 8-row Dst wrote 4 into E."""
    from systolic.visa import asm
    from systolic.visa.interp import Machine
    head = _DPAS_HEAD.replace(".decl D v_type=G type=d num_elts=128 align=GRF\n",
                              ".decl D v_type=G type=d num_elts=16 align=GRF\n"
                              ".decl E v_type=G type=d num_elts=16 align=GRF\n") + "mov (M1, 16) E(0,0)<1> 0x7:d\n"
    p = asm.parse(_dpas_text("A(0,0)", head=head))
    m = Machine(p, "pvc")
    for inst in p.instructions[:-1]:
        m.step(inst)
    with pytest.raises(IllegalInstruction, match="dpas Dst reaches past its variable D") as ei:
        m.step(p.instructions[-1])
    assert ei.value.values == {"operand": "Dst", "variable": "D", "offset": 0, "bytes": 512, "end": 512, "size": 64}
    assert "Raw Operands" in ei.value.rule and ei.value.message.startswith("10:1: ")
    assert m.read("E").tolist() == [7] * 16


@pytest.mark.parametrize("dst, src1, values", [
    ("D.64", "B.0", {"operand": "Dst", "variable": "D", "offset": 64, "bytes": 512, "end": 576, "size": 512}),
    ("D.0", "B.64", {"operand": "Src1", "variable": "B", "offset": 64, "bytes": 512, "end": 576, "size": 512}),
])
def test_dpas_raw_operands_stay_in_their_variable(dst, src1, values):
    e = _oob(_DPAS_HEAD + f"dpas.s8.s8.8.8 (M1, 16) {dst} %null.0 {src1} A(0,0)\n")
    assert e.values == values and "Raw Operands" in e.rule


def test_dpas_src0_stays_in_its_variable():
    head = _DPAS_HEAD + ".decl C v_type=G type=d num_elts=64 align=GRF\n"     # 256 bytes: 4 of the 8 rows
    e = _oob(head + "dpas.s8.s8.8.8 (M1, 16) D.0 C.0 B.0 A(0,0)\n")
    assert e.values == {"operand": "Src0", "variable": "C", "offset": 0, "bytes": 512, "end": 512, "size": 256}
    # rc=4: 4 rows of 64 bytes fit C exactly
    from systolic.visa import run_text
    run_text(head + "dpas.s8.s8.8.4 (M1, 16) D.0 C.0 B.0 A(0,0)\n", device="pvc", inputs={})


def test_dpas_src2_stays_in_its_variable():
    # A(1,0): byte 64 + 256 bytes read > 256
    e = _oob(_dpas_text("A(1,0)"))
    assert e.values == {"operand": "Src2", "variable": "A", "offset": 64, "bytes": 256, "end": 320, "size": 256}
    # A(0,8): column 8 * 4 = byte 32 (the Src2 alignment), + 256 > 256
    e = _oob(_dpas_text("A(0,8)"))
    assert e.values["operand"] == "Src2" and e.values["end"] == 288


@pytest.mark.parametrize("col", [16, 200])
def test_dpas_src2_column_offset_may_not_cross_the_grf(col):
    e = _oob(_dpas_text(f"A(0,{col})"))
    assert e.values == {"col_offset": col, "type_size": 4, "grf_bytes": 64}
    assert "column offset may not cross the GRF boundary" in e.rule


def test_dpasw_src2_footprint_is_each_eus_half():
    """DPASW on DG2: each EU reads 4 GRFs (128 bytes) of its own Src2; DPAS reads all 8 (256 bytes)."""
    from systolic.visa import run_text
    run_text(_dpas_text("A(0,0)", "dpasw", _DG2_HEAD.format(na=32), 8), device="dg2", inputs={})
    run_text(_dpas_text("A(4,0)", "dpasw", _DG2_HEAD.format(na=64), 8), device="dg2", inputs={})
    e = _oob(_dpas_text("A(5,0)", "dpasw", _DG2_HEAD.format(na=64), 8), "dg2")
    assert e.values == {"operand": "Src2", "variable": "A", "offset": 160, "bytes": 128, "end": 288, "size": 256}
    assert e.message.startswith("6:1: dpasw Src2")
    e = _oob(_dpas_text("A(0,0)", "dpas", _DG2_HEAD.format(na=32), 8), "dg2")
    assert e.values == {"operand": "Src2", "variable": "A", "offset": 0, "bytes": 256, "end": 256, "size": 128}
    e = _oob(_dpas_text("A(0,0)", "dpasw", _DG2_HEAD.format(na=64).replace("num_elts=64 align=GRF\n.decl D",
                                                                            "num_elts=32 align=GRF\n.decl D"), 8),
             "dg2")
    assert e.values == {"operand": "Src1", "variable": "B", "offset": 0, "bytes": 256, "end": 256, "size": 128}


# ------------------------------------------------- BOOL immediates (visa-operands.md "Immediate Operands")
_BOOL_IMM = ".version 3.6\n.kernel k\n.decl D v_type=G type=d num_elts=16 align=GRF\nmov (M1, 1) D(0,0)<1> 0x1:bool\n"


def test_bool_immediate_refused_at_check():
    """It had crashed run with a bare KeyError (alu.decode_value); encode refused it. One check for both now."""
    from systolic.visa import asm, encoding, run_text
    from systolic.visa.interp import Machine
    from systolic.visa.isa import TYPES
    from systolic.visa.operands import ImmediateOperand
    for f in (lambda: asm.parse(_BOOL_IMM), lambda: run_text(_BOOL_IMM, device="pvc", inputs={})):
        with pytest.raises(IllegalInstruction, match="any type except BOOL") as ei:
            f()
        assert ei.value.values == {"type": "bool"} and "Immediate Operands" in ei.value.rule
    from dataclasses import replace
    p = asm.parse(_BOOL_IMM.replace("0x1:bool", "0x1:d"))
    p.instructions[0] = replace(p.instructions[0], srcs=(ImmediateOperand(TYPES["bool"], 1),))
    for f in (lambda: Machine(p, "pvc").run(), lambda: encoding.encode_instruction(p.instructions[0], p)):
        with pytest.raises(IllegalInstruction, match="any type except BOOL"):
            f()


def test_cli_bool_immediate_exits_1(tmp_path, capsys):
    from systolic.cli import main
    f = tmp_path / "b.visa"
    f.write_text(_BOOL_IMM)
    for verb in ("run", "encode"):
        with pytest.raises(SystemExit) as e:
            main(["visa", verb, str(f)])
        assert e.value.code == 1
        err = capsys.readouterr().err
        assert err.startswith(f"error: {f}:4:1: an immediate constant may have any type except BOOL"), err
        assert "Traceback" not in err


# ------------------------------------------------- address-operand width (visa-operands.md "Address Operands")
_ADDR_W = (".version 3.6\n.kernel k\n.decl S v_type=G type=d num_elts=64 align=GRF\n.decl A0 v_type=A num_elts=4\n"
           ".decl A1 v_type=A num_elts=8\naddr_add (M1, 4) A0(0) &S 0x76543210:v\n"
           "addr_add (M1, 8) A1(0) A0(0)<{w}> 0x0:uw\n")


@pytest.mark.parametrize("w", [3, 0, 5, 32])
def test_address_width_is_an_execution_size_below_32(w):
    from systolic.visa import asm, run_text
    for f in (lambda: asm.parse(_ADDR_W.format(w=w)), lambda: run_text(_ADDR_W.format(w=w), device="pvc")):
        with pytest.raises(IllegalInstruction, match="address operand width") as ei:
            f()
        assert ei.value.values == {"width": w} and "except that 32 is not allowed" in ei.value.rule
        assert ei.value.message.startswith("7:")


def test_address_width_one_rule_for_run_and_encode():
    from dataclasses import replace

    from systolic.visa import asm, encoding, run_text
    from systolic.visa.interp import Machine
    for w in (1, 2, 4):
        run_text(_ADDR_W.format(w=w), device="pvc")
    p = asm.parse(_ADDR_W.format(w=4))
    i = p.instructions[1]
    p.instructions[1] = replace(i, srcs=(replace(i.srcs[0], width=3),) + i.srcs[1:])
    errs = []
    for f in (lambda: Machine(p, "pvc").run(), lambda: encoding.encode_instruction(p.instructions[1], p),
              lambda: encoding.encode_operand(p.instructions[1].srcs[0])):
        with pytest.raises(IllegalInstruction, match="address operand width") as ei:
            f()
        errs.append((ei.value.rule, ei.value.values))
    assert errs[0] == errs[1] == errs[2] and errs[0][1] == {"width": 3}
    # a width byte holding the code of 32 (5) decodes to a refusal under the same rule
    good = bytearray(encoding.encode_instruction(asm.parse(_ADDR_W.format(w=4)).instructions[1], p))
    # addr_add 0x28 | exec | dst tag + uw id + ub offset + ub width | src0 tag, uw id, ub offset, ub width code
    assert good[0] == 0x28 and good[7] == 0x01 and good[11] == 2     # address operand; width 4 -> code 2
    good[11] = 5
    with pytest.raises(IllegalInstruction, match="address operand width") as ei:
        encoding.decode_program(bytes(good), p)
    assert ei.value.values == {"width": 32} and ei.value.rule == errs[0][0]
