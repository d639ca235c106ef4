"""vISA text assembly: read and print the syntax IGC uses (lexer, parser, printer).

Source: IGC documentation/visa/8_appendix_visa_assembly_syntax.md (declarations, operand syntax,
instruction formats), instructions/<NAME>.md ("Text" sections, e.g. ``CMP.rel_op``,
``DPAS.W.A.SD.RC``), and the spelling IGC's disassembler prints (visa/IsaDisassembly.cpp:
``(M1, 16)``, ``(!P1.any)``, ``V34(0,0)<1>``, ``<8;8,1>``, ``<W,H>`` for multi-address regions,
``r[A0(0),16]<1;1,0>:ud``, ``0x1:d``, ``V16.0`` raw operands, ``(-)``/``(abs)``/``(-abs)``/``(~)``).

Examples::

    .decl V33 v_type=G type=d num_elts=16 align=GRF
    .decl P1 v_type=P num_elts=16
    add (M1, 16) V34(0,0)<1> V33(0,0)<1;1,0> 0x1:d
    cmp.lt (M1, 16) P1 V33(0,0)<1;1,0> 0x0:d
    (!P1.any) mov (M1, 16) V34(0,0)<1> 0x0:d

Every syntax error is an :class:`~systolic.errors.AsmSyntaxError` with 1-based line and column;
rule violations found while parsing are IllegalInstruction with ``line:column:`` in the message.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

from ..errors import AsmSyntaxError, IllegalInstruction, InvalidValue, SystolicError
from ..numerics import formats as NF
from ..numerics.rounding import round_fraction
from .isa import MODIFIER_TEXT, REL_OPS, TYPES, mask_by_name, precision, vtype
from .opcodes import OPCODES
from .operands import (AddressOfOperand, AddressOperand, GeneralOperand, ImmediateOperand, IndirectOperand,
                       PredicateOperand, RawOperand)
from .predication import PredControl
from .program import DpasInfo, Instruction, Program, check_address_of, check_instruction, located
from .regions import check_dst_region, check_src_region
from .values import exact_value
from .variables import NULL_VAR, AddressVar, GeneralVar, PredicateVar

__all__ = ["parse", "format_program", "format_instruction", "format_operand", "format_decl",
           "immediate_from_value"]

_NAME = re.compile(r"[A-Za-z_%$@?][A-Za-z0-9_$@?]*")
_NUM = re.compile(r"0[xX][0-9a-fA-F]+|(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|nan", re.I)
_MOD_TEXT = {"-": "neg", "abs": "abs", "-abs": "neg_abs", "~": "not"}
_FLOAT_FMT = {"f": NF.FP32, "hf": NF.FP16, "bf": NF.BF16, "df": NF.FP64}


class _Cursor:
    """Character cursor over one line; columns are 1-based."""

    def __init__(self, text: str, line: int, source: str | None):
        self.s, self.i, self.line, self.source = text, 0, line, source

    def error(self, msg: str, col: int | None = None, **values) -> AsmSyntaxError:
        return AsmSyntaxError(msg, line=self.line, column=(self.i if col is None else col) + 1, source=self.source,
                              rule="8_appendix_visa_assembly_syntax.md", values=values or None)

    def ws(self):
        while self.i < len(self.s) and self.s[self.i] in " \t\r":
            self.i += 1

    def peek(self, n: int = 1) -> str:
        self.ws()
        return self.s[self.i:self.i + n]

    def at_end(self) -> bool:
        self.ws()
        return self.i >= len(self.s)

    def accept(self, tok: str) -> bool:
        self.ws()
        if self.s.startswith(tok, self.i):
            self.i += len(tok)
            return True
        return False

    def expect(self, tok: str):
        if not self.accept(tok):
            got = self.s[self.i:self.i + 8] or "end of line"
            raise self.error(f"expected {tok!r}, found {got!r}", expected=tok)

    def name(self, what: str = "name") -> str:
        self.ws()
        m = _NAME.match(self.s, self.i)
        if not m:
            raise self.error(f"expected a {what}", found=self.s[self.i:self.i + 8] or "end of line")
        self.i = m.end()
        return m.group(0)

    def integer(self, what: str = "integer") -> int:
        self.ws()
        start = self.i
        neg = False
        if self.s.startswith("-", self.i):
            neg, self.i = True, self.i + 1
        m = re.compile(r"0[xX][0-9a-fA-F]+|[0-9]+").match(self.s, self.i)
        if not m:
            self.i = start
            raise self.error(f"expected {what}", found=self.s[start:start + 8] or "end of line")
        if len(m.group(0)) > 24:
            raise self.error(f"{what} has too many digits", start, digits=len(m.group(0)))
        self.i = m.end()
        v = int(m.group(0), 0) if m.group(0).lower().startswith("0x") else int(m.group(0), 10)
        return -v if neg else v


# ---------------------------------------------------------------------------- immediates
def immediate_from_value(value, type_name: str) -> ImmediateOperand:
    """An immediate of ``type_name`` holding ``value``: a Python or numpy number, an ml_dtypes float or a Fraction.

    Float types round the exact value once to nearest even. Integer and packed-vector types take only an
    integer value that fits (2_datatypes.md type table): 1.5 for a D immediate is an IllegalInstruction, not 1.
    """
    t = vtype(type_name)
    x = exact_value(value)
    if x is None:
        raise InvalidValue("an immediate value is a real number", values={"value": repr(value)[:40], "type": t.name})
    if t.is_float:
        fmt = _FLOAT_FMT[t.name]
        if isinstance(x, float) and math.isnan(x):
            bits = _qnan(fmt)
        elif isinstance(x, float):  # an infinity
            bits = (fmt.exp_mask) | (fmt.sign_bit if x < 0 else 0)
        else:
            neg0 = x == 0 and math.copysign(1.0, float(value)) < 0
            bits = round_fraction(Fraction(x), fmt, "rne", negative_zero=neg0)
        return _imm_bits(t, bits)
    if isinstance(x, float) or isinstance(x, Fraction) and x.denominator != 1:
        raise IllegalInstruction(f"an immediate of type {t.name} (integer or packed vector) needs an integer value",
                                 rule="2_datatypes.md: type ranges (integer types hold integers)",
                                 values={"value": repr(value)[:40], "type": t.name})
    v = int(x)
    if t.kind == "int":
        lo = -(1 << (t.bits - 1)) if t.signed else 0
        hi = (1 << t.bits) - 1  # unsigned spelling of the bits is accepted for every integer type
        if not lo <= v <= hi:
            raise IllegalInstruction("immediate value does not fit its type", rule="2_datatypes.md: type ranges",
                                     values={"value": v, "type": t.name})
        return _imm_bits(t, v & ((1 << t.bits) - 1))
    if not 0 <= v <= 0xFFFFFFFF:
        raise IllegalInstruction("packed-vector immediate is one dword", rule="2_datatypes.md: V/UV/VF",
                                 values={"value": v, "type": t.name})
    return _imm_bits(t, v)


def _qnan(fmt) -> int:
    return fmt.exp_mask | (1 << (fmt.man_bits - 1))


def _imm_bits(t, bits: int) -> ImmediateOperand:
    if t.name in ("df", "q", "uq"):
        return ImmediateOperand(t, bits & 0xFFFFFFFF, (bits >> 32) & 0xFFFFFFFF)
    return ImmediateOperand(t, bits & 0xFFFFFFFF)


# ---------------------------------------------------------------------------- parser
class _Parser:
    def __init__(self, text: str, source: str | None):
        self.text, self.source = text, source
        self.prog = Program(source=source)

    def run(self) -> Program:
        text = _strip_block_comments(self.text)
        for ln, raw in enumerate(text.split("\n"), start=1):
            line = raw.split("//", 1)[0]
            c = _Cursor(line, ln, self.source)
            if c.at_end():
                continue
            start = c.i
            self.opcol = start + 1
            try:
                if c.peek() == ".":
                    self.directive(c)
                elif re.match(r"\s*[A-Za-z_$@?][A-Za-z0-9_$@?\-]*\s*:\s*$", line):
                    continue  # a label; straight-line programs only use it as a name
                else:
                    self.prog.instructions.append(self.instruction(c))
            except AsmSyntaxError:
                raise
            except SystolicError as e:
                raise located(e, ln, self.opcol, self.source) from None
        return self.prog

    # ------------------------------------------------------------ directives
    def directive(self, c: _Cursor):
        col = c.i
        c.expect(".")
        d = c.name("directive")
        if d == "decl":
            return self.decl(c)
        if d == "version":
            self.prog.version = c.s[c.i:].strip()
            return
        if d in ("kernel", "function", "global_function"):
            self.prog.kernel = c.name("kernel name")
            return
        if d in ("kernel_attr", "input", "implicit_PSEUDO_INPUT", "parameter"):
            return  # accepted and ignored: no effect on what the interpreter computes
        raise c.error(f"unknown directive .{d}", col, directive=d)

    def decl(self, c: _Cursor):
        name = c.name("variable name")
        attrs: dict[str, tuple] = {}
        while not c.at_end():
            col = c.i
            key = c.name("attribute")
            if key == "alias":
                c.accept("=")
                if c.accept("<"):
                    close = ">"
                else:
                    c.expect("(")
                    close = ")"
                parent = c.name("aliased variable")
                c.expect(",")
                off = c.integer("alias offset")
                c.expect(close)
                attrs["alias"] = ((parent, off), col)
                continue
            if key not in ("v_type", "type", "num_elts", "align", "attrs", "v_name"):
                raise c.error(f"unknown declaration attribute {key!r}", col, attribute=key,
                              known=["v_type", "type", "num_elts", "align", "alias", "attrs", "v_name"])
            c.expect("=")
            if key == "attrs":
                c.expect("{")
                while not c.accept("}"):
                    if c.at_end():
                        raise c.error("unterminated attrs={...}")
                    c.i += 1
                continue
            val = c.name(f"value of {key}") if not c.peek().isdigit() else str(c.integer(f"value of {key}"))
            attrs[key] = (val, col)
        vt = attrs.get("v_type", ("G", 0))[0].upper()

        def need(k):
            if k not in attrs:
                raise c.error(f".decl {name}: missing {k}=", attribute=k)
            return attrs[k]

        try:
            if vt == "G":
                tname, tcol = need("type")
                if tname.lower() not in TYPES:
                    raise c.error(f"unknown type {tname!r}", tcol, type=tname)
                n = int(need("num_elts")[0])
                var = GeneralVar(name, vtype(tname), n, attrs.get("align", (None,))[0],
                                 attrs.get("alias", (None,))[0])
            elif vt == "A":
                var = AddressVar(name, int(need("num_elts")[0]))
            elif vt == "P":
                var = PredicateVar(name, int(need("num_elts")[0]))
            elif vt in ("S", "T"):
                return  # samplers and surfaces: accepted, unused by the supported subset
            else:
                raise c.error(f"unknown v_type {vt!r}", attrs["v_type"][1], v_type=vt)
        except ValueError:
            raise c.error("num_elts must be an integer", attrs["num_elts"][1], num_elts=attrs["num_elts"][0]) from None
        self.prog.declare(var)

    # ------------------------------------------------------------ instructions
    def instruction(self, c: _Cursor) -> Instruction:
        line, col0 = c.line, c.i + 1
        pred = PredControl()
        if c.peek() == "(":
            c.expect("(")
            inv = c.accept("!")
            pcol = c.i
            pname = c.name("predicate variable")
            comb = ""
            if c.accept("."):
                comb = c.name("any/all").lower()
                if comb not in ("any", "all"):
                    raise c.error("predicate control must be .any or .all", combine=comb)
            c.expect(")")
            pv = self.prog.lookup(pname)
            if not isinstance(pv, PredicateVar):
                if pname == "P0":
                    pv = None
                else:
                    raise c.error(f"{pname!r} is not a declared predicate variable", pcol, name=pname)
            pred = PredControl(pv.id if pv else 0, comb, inv) if pv else PredControl()
        mcol = c.i
        mnem = c.name("instruction mnemonic").lower()
        parts = []
        while c.s.startswith(".", c.i):
            c.i += 1
            m = re.compile(r"[A-Za-z0-9_]+").match(c.s, c.i)
            if not m:
                raise c.error("expected a mnemonic suffix after '.'")
            parts.append(m.group(0).lower())
            c.i = m.end()
        if mnem not in OPCODES:
            from ..suggest import did_you_mean
            raise c.error(f"unsupported or unknown instruction {mnem!r}{did_you_mean(mnem, OPCODES)}", mcol,
                          opcode=mnem,
                          supported=sorted(OPCODES))
        op = OPCODES[mnem]
        sat, relop, dinfo = False, None, None
        if mnem in ("dpas", "dpasw"):
            if len(parts) != 4:
                raise c.error(f"{mnem} needs .W.A.SD.RC", mcol, suffixes=parts)
            try:
                dinfo = DpasInfo(precision(parts[0]), precision(parts[1]), int(parts[2]), int(parts[3]))
            except ValueError:
                raise c.error("SD and RC must be integers", mcol, suffixes=parts) from None
        else:
            for p in parts:
                if p == "sat" and op.sat != "no":
                    sat = True
                elif mnem == "cmp" and p in REL_OPS and relop is None:
                    relop = p
                else:
                    raise c.error(f"unexpected suffix .{p} on {mnem}", mcol, suffix=p)
            if mnem == "cmp" and relop is None:
                raise c.error("cmp needs a relational operator (.eq .ne .gt .ge .lt .le)", mcol)
        c.expect("(")
        mask = mask_by_name(c.name("mask control (M1..M8, M1_NM..)"))
        c.expect(",")
        ecol = c.i
        exec_size = c.integer("execution size")
        c.expect(")")
        if exec_size not in (1, 2, 4, 8, 16, 32):
            raise IllegalInstruction(f"{line}:{ecol + 1}: execution size must be 1, 2, 4, 8, 16 or 32",
                                     rule="instructions/*.md: Exec_size bits [2..0]", values={"exec_size": exec_size})
        if mnem in ("dpas", "dpasw"):
            dst = self.raw(c)
            s0 = self.raw(c)
            s1 = self.raw(c)
            s2 = self.vec(c, exec_size, dst=False, allow_noregion=True)
            srcs = (s0, s1, s2)
        else:
            dst = self.vec(c, exec_size, dst=True)
            srcs = tuple(self.vec(c, exec_size, dst=False) for _ in range(op.n_src))
            if mnem == "addr_add" and isinstance(srcs[0], GeneralOperand) and srcs[0].row == 0 \
                    and not isinstance(srcs[0], AddressOfOperand):
                # ADDR_ADD.md: src0 is the address of V(0,c); the binary form cannot tell "V(0,c)<0;1,0>" from
                # "&V[c*size]", so both read as the address-of operand (the notes fix its region to <0;1,0>;
                # check_address_of refuses any other region or a modifier before they are dropped here)
                g = srcs[0]
                check_address_of(g)
                srcs = (AddressOfOperand(g.id, g.col * self.prog.gvar(g.id).type.size),) + srcs[1:]
        if not c.at_end():
            raise c.error("unexpected text after the last operand", found=c.s[c.i:c.i + 12])
        inst = Instruction(mnem, exec_size, mask, dst, srcs, pred, sat, relop, dinfo, line, col0)
        self.opcol = col0
        check_instruction(inst)
        return inst

    def raw(self, c: _Cursor) -> RawOperand:
        c.ws()
        col = c.i
        self.opcol = col + 1
        name = c.name("raw operand variable")
        var = self.prog.lookup(name)
        if not isinstance(var, GeneralVar):
            raise c.error(f"{name!r} is not a declared general variable", col, name=name)
        c.expect(".")
        off = c.integer("raw operand byte offset")
        if off < 0:
            raise c.error("raw operand offset must be >= 0", col, offset=off)
        return RawOperand(var.id, off)

    def region(self, c: _Cursor, dst: bool, indirect: bool):
        """``<hs>`` (destination) or ``<vs;w,hs>`` / ``<w,hs>`` / ``<;w,hs>`` (source)."""
        col = c.i
        c.expect("<")
        vals, seps = [], []
        while True:
            if c.peek() in (";", ","):
                vals.append(None)
            else:
                vals.append(c.integer("region value"))
            if c.accept(">"):
                break
            if c.accept(";"):
                seps.append(";")
            elif c.accept(","):
                seps.append(",")
            else:
                raise c.error("expected ';', ',' or '>' in a region")
            if len(vals) > 3:
                raise c.error("too many region values", col)
        if dst:
            if len(vals) != 1 or vals[0] is None:
                raise c.error("a destination region is <HorzStride>", col, region=c.s[col:c.i])
            check_dst_region(vals[0])
            return (None, None, vals[0])
        if len(vals) == 3 and seps == [";", ","]:
            vs, w, hs = vals
        elif len(vals) == 2 and seps == [","]:
            vs, (w, hs) = None, vals
        else:
            raise c.error("a source region is <VertStride;Width,HorzStride>", col, region=c.s[col:c.i])
        if w is None or hs is None:
            raise c.error("region Width and HorzStride are required", col)
        return (vs, w, hs)

    def modifier(self, c: _Cursor) -> str:
        for txt in ("(-abs)", "(abs)", "(-)", "(~)"):
            if c.accept(txt):
                return _MOD_TEXT[txt[1:-1]]
        return "none"

    def vec(self, c: _Cursor, exec_size: int, dst: bool, allow_noregion: bool = False):
        c.ws()
        col = c.i
        self.opcol = col + 1
        if c.at_end():
            raise c.error("missing operand")
        mod = "none" if dst else self.modifier(c)
        ch = c.peek()
        if ch == "&":
            c.expect("&")
            ncol = c.i
            name = c.name("variable")
            var = self.prog.lookup(name)
            if not isinstance(var, GeneralVar) or var is NULL_VAR:
                raise c.error(f"{name!r} is not a declared general variable", ncol, name=name)
            off = 0
            if c.accept("["):
                off = c.integer("byte offset")
                c.expect("]")
            elif c.peek() != "" and c.peek() in "+-":
                neg = c.s[c.i] == "-"
                c.i += 1
                off = -c.integer("byte offset") if neg else c.integer("byte offset")
            return AddressOfOperand(var.id, off)
        if (ch == "-" or ch.isdigit() or ch == ".") and not dst:
            return self.immediate(c, mod)
        if c.s.startswith("r[", c.i) or c.s.startswith("r [", c.i):
            c.expect("r")
            c.expect("[")
            acol = c.i
            aname = c.name("address variable")
            av = self.prog.lookup(aname)
            if not isinstance(av, AddressVar):
                raise c.error(f"{aname!r} is not a declared address variable", acol, name=aname)
            c.expect("(")
            aoff = c.integer("address offset")
            c.expect(")")
            c.expect(",")
            ioff = c.integer("indirect offset")
            c.expect("]")
            vs, w, hs = self.region(c, dst, True)
            c.expect(":")
            tcol = c.i
            tname = c.name("type")
            if tname.lower() not in TYPES:
                raise c.error(f"unknown type {tname!r}", tcol, type=tname)
            if not dst:
                check_src_region(vs, w, hs, exec_size, multi_address_ok=True)
            if aoff < 0:
                raise c.error("address offset must be >= 0", acol, addr_offset=aoff)
            op = IndirectOperand(av.id, aoff, ioff, vtype(tname), vs, w, hs, mod)
            from .encoding import encode_operand
            encode_operand(op)  # indirect_offset range, type restrictions
            return op
        ncol = c.i
        name = c.name("operand")
        var = self.prog.lookup(name)
        if var is None:
            if name.lower() in ("inf", "nan") and not dst:
                c.i = ncol
                return self.immediate(c, mod)
            raise c.error(f"undeclared variable {name!r}", ncol, name=name)
        if isinstance(var, PredicateVar):
            if mod not in ("none", "not"):
                raise c.error("only (~) applies to a predicate operand", col)
            return PredicateOperand(PredControl(var.id)) if mod == "none" else \
                PredicateOperand(PredControl(var.id, "", True))
        if isinstance(var, AddressVar):
            c.expect("(")
            off = c.integer("address offset")
            c.expect(")")
            width = 1
            if c.peek() == "<":
                c.expect("<")
                width = c.integer("address width")
                c.expect(">")
            if off < 0:
                raise c.error("address offset must be >= 0", ncol, offset=off)
            return AddressOperand(var.id, off, width)
        if var is NULL_VAR:
            raise c.error("%null is only a raw operand (DPAS Src0)", ncol)
        row = col_ = 0
        if c.peek() == "(":
            c.expect("(")
            row = c.integer("row offset")
            c.expect(",")
            col_ = c.integer("column offset")
            c.expect(")")
        if row < 0 or col_ < 0:
            raise c.error("row and column offsets must be >= 0", ncol, row=row, col=col_)
        if c.peek() == "<":
            vs, w, hs = self.region(c, dst, False)
            if not dst and not allow_noregion:  # (DPAS Src2 takes no region at all: check_dpas_operands says so)
                check_src_region(vs, w, hs, exec_size)
        elif allow_noregion:
            vs, w, hs = None, None, 1
        else:
            raise c.error("a general operand needs a region (<HorzStride> or <VertStride;Width,HorzStride>)")
        return GeneralOperand(var.id, row, col_, vs, w, hs, mod)

    def immediate(self, c: _Cursor, mod: str):
        col = c.i
        neg = c.accept("-")
        c.ws()
        m = _NUM.match(c.s, c.i)
        if not m:
            raise c.error("expected an immediate value", col)
        c.i = m.end()
        c.expect(":")
        tcol = c.i
        tname = c.name("immediate type").lower()
        if tname not in TYPES:
            raise c.error(f"unknown type {tname!r}", tcol, type=tname)
        t = TYPES[tname]
        lit = m.group(0)
        if len(lit) > 64:
            raise c.error("immediate literal too long", col, length=len(lit))
        if lit.lower().startswith("0x"):
            bits = int(lit, 16)
            width = 64 if t.size == 8 else 32 if t.kind == "vector" else t.bits
            if neg or bits >> width:
                raise c.error("hex immediate is the type's bit pattern and must fit it", col, value=lit, type=tname)
            op = _imm_bits(t, bits)
        else:
            if t.is_float:
                val = float(lit) if lit.lower() in ("inf", "nan") else _decimal_fraction(lit)
                if neg:
                    val = -val if val != 0 else -0.0
                op = immediate_from_value(val, tname)
            else:
                if not re.fullmatch(r"[0-9]+", lit):
                    raise c.error(f"integer type {tname} needs an integer literal", col, value=lit)
                op = immediate_from_value(-int(lit) if neg else int(lit), tname)
        if mod != "none":
            return ImmediateOperand(op.type, op.low, op.high, mod)
        return op


def _decimal_fraction(lit: str) -> Fraction:
    """The exact value of a decimal literal; exponents beyond any format's range are clamped (no huge ints)."""
    m = re.fullmatch(r"([0-9]*\.?[0-9]*)(?:[eE]([+-]?[0-9]+))?", lit)
    mant = Fraction(m.group(1) if m.group(1) not in ("", ".") else "0")
    exp = int(m.group(2) or 0)
    exp = max(min(exp, 400), -400)   # 10^400 overflows and 10^-400 underflows every format here (df included)
    return mant * Fraction(10) ** exp


def _strip_block_comments(text: str) -> str:
    """Replace /* ... */ by spaces, keeping newlines so line numbers stay right."""
    out, i = [], 0
    while True:
        j = text.find("/*", i)
        if j < 0:
            out.append(text[i:])
            break
        k = text.find("*/", j + 2)
        if k < 0:
            line = text.count("\n", 0, j) + 1
            col = j - (text.rfind("\n", 0, j) + 1) + 1
            raise AsmSyntaxError("unterminated /* comment", line=line, column=col,
                                 rule="8_appendix_visa_assembly_syntax.md: comment")
        out.append(text[i:j])
        out.append("".join(ch if ch == "\n" else " " for ch in text[j:k + 2]))
        i = k + 2
    return "".join(out)


def parse(text: str, source: str | None = None) -> Program:
    """Parse vISA assembly text into a :class:`~systolic.visa.program.Program`."""
    if not isinstance(text, str):
        raise AsmSyntaxError("vISA text must be a str", line=1, column=1, source=source)
    p = _Parser(text, source)
    prog = p.run()
    return prog


# ---------------------------------------------------------------------------- printer
def format_decl(v) -> str:
    if isinstance(v, GeneralVar):
        s = f".decl {v.name} v_type=G type={v.type.name} num_elts={v.num_elts}"
        if v.align:
            s += f" align={v.align}"
        if v.alias:
            s += f" alias=<{v.alias[0]}, {v.alias[1]}>"
        return s
    if isinstance(v, AddressVar):
        return f".decl {v.name} v_type=A num_elts={v.num_elts}"
    return f".decl {v.name} v_type=P num_elts={v.num_elts}"


def _region_text(vs, w, hs, dst: bool) -> str:
    if dst or w is None:
        return f"<{hs}>"
    if vs is None:
        return f"<{w},{hs}>"
    return f"<{vs};{w},{hs}>"


def format_operand(op, prog: Program, dst: bool = False) -> str:
    """One operand in IGC's spelling."""
    mod = MODIFIER_TEXT.get(getattr(op, "modifier", "none"), "")
    if isinstance(op, GeneralOperand):
        s = f"{mod}{prog.gvar(op.id).name}({op.row},{op.col})"
        if op.width is None and not dst and op.vstride is None:
            return s  # DPAS Src2 prints without a region
        return s + _region_text(op.vstride, op.width, op.hstride, dst)
    if isinstance(op, IndirectOperand):
        return (f"{mod}r[{prog.avar(op.id).name}({op.addr_offset}),{op.indirect_offset}]"
                f"{_region_text(op.vstride, op.width, op.hstride, dst)}:{op.type.name}")
    if isinstance(op, AddressOperand):
        name = prog.avar(op.id).name
        return f"{name}({op.offset})" if dst else f"{name}({op.offset})<{op.width}>"
    if isinstance(op, PredicateOperand):
        return ("(~)" if op.pred.inverse else "") + prog.pvar(op.pred.id).name
    if isinstance(op, ImmediateOperand):
        return f"{mod}{op.bits:#x}:{op.type.name}"
    if isinstance(op, RawOperand):
        return f"{prog.gvar(op.id).name}.{op.offset}"
    if isinstance(op, AddressOfOperand):
        name = prog.gvar(op.id).name
        return f"&{name}[{op.offset}]" if op.offset else f"&{name}"
    raise IllegalInstruction("cannot print operand", rule="8_appendix_visa_assembly_syntax.md",
                             values={"operand": repr(op)})


def format_instruction(inst: Instruction, prog: Program) -> str:
    s = ""
    if inst.pred.active:
        s = inst.pred.text(prog.pvar(inst.pred.id).name) + " "
    m = inst.op
    if inst.dpas:
        m += f".{inst.dpas.w}.{inst.dpas.a}.{inst.dpas.sd}.{inst.dpas.rc}"
    if inst.relop:
        m += f".{inst.relop}"
    if inst.sat:
        m += ".sat"
    s += f"{m} ({inst.mask.name}, {inst.exec_size}) {format_operand(inst.dst, prog, dst=True)}"
    for src in inst.srcs:
        s += " " + format_operand(src, prog)
    return s


def format_program(prog: Program) -> str:
    """The whole program as text that :func:`parse` reads back to an equal program."""
    lines = []
    if prog.version:
        lines.append(f".version {prog.version}")
    if prog.kernel:
        lines.append(f".kernel {prog.kernel}")
    lines += [format_decl(v) for v in prog.general]
    lines += [format_decl(v) for v in prog.address]
    lines += [format_decl(v) for v in prog.predicate]
    lines += [format_instruction(i, prog) for i in prog.instructions]
    return "\n".join(lines) + "\n"


