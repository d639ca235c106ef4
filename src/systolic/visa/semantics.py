"""The execute semantics of every vISA instruction: the ``execute`` of its :class:`~systolic.visa.isa.Opcode`
record (:mod:`systolic.visa.opcodes`), called by :meth:`systolic.visa.interp.Machine.step` once the instruction is
decoded and checked.

Each ``execute(m, inst)`` takes the machine ``m`` (:class:`~systolic.visa.interp.Machine`: its GRF, address and
predicate variables, the operand access ``read_source`` / ``dest_addresses`` / ``_store``, the channel enables
``chen``, the conversions ``_convert`` / ``_mov``, the type rules ``_check_types``, the fast path ``_fast_step``)
and one instruction. The ALU instructions share one shape (channel enables, sources, destination, one value per
enabled channel, instructions/*.md "Semantics"): :func:`arithmetic` and :func:`logic` make it from the
per-element function of :mod:`systolic.visa.alu`; MOV, SEL, CMP, SETP, ADDR_ADD and DPAS/DPASW have their own.
"""

from __future__ import annotations

from ..errors import IllegalInstruction
from . import alu
from .isa import MaskControl
from .operands import AddressOperand, GeneralOperand, ImmediateOperand, IndirectOperand, PredicateOperand, RawOperand
from .predication import PredControl, evaluate_chen
from .regions import check_column_offset

__all__ = ["arithmetic", "logic", "execute_mov", "execute_sel", "execute_cmp", "execute_setp", "execute_addr_add",
           "execute_dpas", "RULE_RAW_OOB", "RULE_SRC2_OOB"]

RULE_RAW_OOB = ("visa-operands.md: Raw Operands (\"The behavior is undefined if a raw operand attempts to access "
                "an out-of-bound data element in the variable\")")
RULE_SRC2_OOB = ("visa-operands.md: Region-based Addressing (out-of-bound data element) / visa-DPAS.md: Src2 "
                 "reads SD * OPS_PER_CHAN elements per row, RC rows")


# ------------------------------------------------------------------ the shared shape of the ALU instructions
def _sources(m, inst, enabled, sel=None):
    """The sources' values and types, or None when the fast path (:mod:`.alu_fast`) did the instruction."""
    if m.fast_alu and m._fast_step(inst, enabled, sel):
        return None
    return [m.read_source(s, inst) for s in inst.srcs]


def _per_channel(m, inst, srcs, enabled, value) -> None:
    """Write ``value(i, vals, ts, dt, exec_f32)`` to every enabled channel ``i`` of the destination."""
    if any(t.kind == "bool" for _, t in srcs) and inst.op != "mov":
        raise IllegalInstruction("predicate sources need a predicate destination",
                                 rule=f"instructions/{inst.opcode.doc}", values={"opcode": inst.op})
    n = inst.exec_size
    addrs, dt = m.dest_addresses(inst.dst, n)
    ts = [t for _, t in srcs]
    m._check_types(inst, dt, ts)
    exec_f32 = m.model.via_execution_type and dt.name in ("hf", "bf") and m._f_execution(ts)
    for i in range(n):
        if enabled[i]:
            m._store(addrs[i], dt, value(i, [s[0][i] for s in srcs], ts, dt, exec_f32))


def arithmetic(compute):
    """The execute of an ALU instruction whose channel ``i`` is ``compute(m, vals, ts, dt)`` (exact), rounded
    once to the destination type."""
    def execute(m, inst) -> None:
        enabled = m.chen(inst)
        srcs = _sources(m, inst, enabled)
        if srcs is not None:
            _per_channel(m, inst, srcs, enabled,
                         lambda i, vals, ts, dt, f32: m._convert(compute(m, vals, ts, dt), dt, inst, f32))
    execute.__name__ = execute.__qualname__ = f"execute_{compute.__name__}"
    execute.__doc__ = compute.__doc__
    return execute


def logic(compute):
    """As :func:`arithmetic`, and with a predicate destination the same operation on predicates
    (NOT.md/AND.md notes)."""
    def execute(m, inst) -> None:
        enabled = m.chen(inst)
        srcs = _sources(m, inst, enabled)
        if srcs is None:
            return
        if isinstance(inst.dst, PredicateOperand):
            return _pred_logic(m, inst, srcs, enabled)
        _per_channel(m, inst, srcs, enabled,
                     lambda i, vals, ts, dt, f32: m._convert(compute(m, vals, ts, dt), dt, inst, f32))
    execute.__name__ = execute.__qualname__ = f"execute_{compute.__name__}"
    execute.__doc__ = compute.__doc__
    return execute


# ------------------------------------------------------------------ per-element functions (instructions/*.md)
def add(m, vals, ts, dt):
    """ADD.md: src0 + src1."""
    return alu.op_add(vals[0], vals[1], m.model.rounding)


def mul(m, vals, ts, dt):
    """MUL.md: src0 * src1."""
    return alu.op_mul(vals[0], vals[1])


def mad(m, vals, ts, dt):
    """MAD.md: src0 * src1 + src2."""
    return alu.op_mad(vals[0], vals[1], vals[2], m.model.rounding)


def min_(m, vals, ts, dt):
    """MIN_MAX.md: the smaller source."""
    return alu.op_minmax(vals[0], vals[1], False, m.model)


def max_(m, vals, ts, dt):
    """MIN_MAX.md: the larger source."""
    return alu.op_minmax(vals[0], vals[1], True, m.model)


def and_(m, vals, ts, dt):
    """AND.md: src0 & src1."""
    return vals[0] & vals[1]


def or_(m, vals, ts, dt):
    """OR.md: src0 | src1."""
    return vals[0] | vals[1]


def xor(m, vals, ts, dt):
    """XOR.md: src0 ^ src1."""
    return vals[0] ^ vals[1]


def not_(m, vals, ts, dt):
    """NOT.md: ~src0."""
    return ~vals[0]


def _count(vals, dt):
    return vals[1] & (63 if dt.name in ("q", "uq") else 31)  # SHL.md notes: the 5 (6) LSBs of src1


def shl(m, vals, ts, dt):
    """SHL.md: src0 << (src1's low 5 bits; 6 for Q/UQ)."""
    return vals[0] << _count(vals, dt)


def shr(m, vals, ts, dt):
    """SHR.md: logical shift right, src0's bits taken as unsigned."""
    return (vals[0] & ((1 << ts[0].bits) - 1)) >> _count(vals, dt)


def asr(m, vals, ts, dt):
    """ASR.md: arithmetic shift right (Python's >> keeps the sign)."""
    return vals[0] >> _count(vals, dt)


# ------------------------------------------------------------------ the instructions with their own shape
def execute_mov(m, inst) -> None:
    """MOV.md: src0 converted to the destination type; from a predicate, its bits into one integer."""
    if inst.srcs and isinstance(inst.srcs[0], PredicateOperand):
        return _mov_from_predicate(m, inst)
    enabled = m.chen(inst)
    srcs = _sources(m, inst, enabled)
    if srcs is not None:
        _per_channel(m, inst, srcs, enabled, lambda i, vals, ts, dt, f32: m._mov(vals[0], ts[0], dt, inst))


def execute_sel(m, inst) -> None:
    """SEL.md: the predicate picks src0 or src1 per channel; the mask alone enables the channels."""
    n = inst.exec_size
    enabled = evaluate_chen(n, inst.mask, PredControl(), m.em, None)
    sel = evaluate_chen(n, MaskControl((inst.mask.code & 7) | 8), inst.pred, m.em,
                        m._pred_bits(inst.pred)) if inst.pred.active else [1] * 32
    srcs = _sources(m, inst, enabled, sel)
    if srcs is not None:
        _per_channel(m, inst, srcs, enabled,
                     lambda i, vals, ts, dt, f32: m._convert(vals[0] if sel[i] else vals[1], dt, inst))


def _own(body):
    """The execute of an instruction with its own body after the channel enables and the sources."""
    def execute(m, inst) -> None:
        enabled = m.chen(inst)
        srcs = _sources(m, inst, enabled)
        if srcs is not None:
            body(m, inst, srcs, enabled)
    execute.__doc__ = body.__doc__
    return execute

def _mov_from_predicate(m, inst) -> None:
    """MOV.md notes: exec size 1, dst UB/UW/UD at least as wide as the predicate, element 0 in the LSB."""
    pv = m.prog.pvar(inst.srcs[0].pred.id)
    addrs, dt = m.dest_addresses(inst.dst, 1)
    if inst.exec_size != 1 or inst.pred.active or inst.sat:
        raise IllegalInstruction("mov from a predicate needs exec size 1, no predication and no saturation",
                                 rule="MOV.md notes", values={"exec_size": inst.exec_size,
                                                              "predicated": inst.pred.active, "sat": inst.sat})
    if dt.name not in ("ub", "uw", "ud") or dt.bits < pv.num_elts:
        raise IllegalInstruction("mov from a predicate needs a UB/UW/UD destination at least as wide as it",
                                 rule="MOV.md notes", values={"dst": dt.name, "num_elts": pv.num_elts})
    bits = m.pred[pv.id]
    if inst.srcs[0].pred.inverse:
        bits = [1 - b for b in bits]
    if m.chen(inst)[0]:
        m._store(addrs[0], dt, sum(b << i for i, b in enumerate(bits)))



def _cmp_body(m, inst, srcs, enabled) -> None:
    """CMP.md: the relation per channel, into a predicate (0/1) or a general destination (0 / all ones)."""
    n, dst = inst.exec_size, inst.dst
    (a, ta), (b, tb) = srcs
    if ta.kind == "bool" or tb.kind == "bool":
        raise IllegalInstruction("cmp compares general, indirect or immediate sources", rule="CMP.md: Src0/Src1",
                                 values={"types": [ta.name, tb.name]})
    if (ta.is_float or ta.name == "vf") != (tb.is_float or tb.name == "vf"):
        raise IllegalInstruction("sources may not mix integer and float types",
                                 rule="2_datatypes.md: Type Conversion", values={"types": [ta.name, tb.name]})
    res = [alu.compare(a[i], b[i], inst.relop, m.model) for i in range(n)]
    if isinstance(dst, PredicateOperand):
        pv, off = m.predicate_span(dst.pred.id, inst, "cmp writes past its predicate variable")
        for i in range(n):
            if enabled[i]:
                m.pred[pv.id][off + i] = 1 if res[i] else 0
        return
    addrs, dt = m.dest_addresses(dst, n)
    for i in range(n):
        if enabled[i]:
            m._store(addrs[i], dt, ((1 << dt.bits) - 1) if res[i] else 0)  # -1: all bits set



def _pred_logic(m, inst, srcs, enabled) -> None:
    if inst.pred.active:
        raise IllegalInstruction("logic on predicates may not be predicated", rule="NOT.md/AND.md notes",
                                 values={"opcode": inst.op})
    if any(t.kind != "bool" for _, t in srcs):
        raise IllegalInstruction("with a predicate destination all operands must be predicates",
                                 rule="NOT.md/AND.md notes", values={"types": [t.name for _, t in srcs]})
    pv, off = m.predicate_span(inst.dst.pred.id, inst, "logic op writes past its predicate variable")
    n = inst.exec_size
    for i in range(n):
        if not enabled[i]:
            continue
        a = srcs[0][0][i]
        if inst.op == "not":
            r = 1 - a
        else:
            b = srcs[1][0][i]
            r = {"and": a & b, "or": a | b, "xor": a ^ b}[inst.op]
        m.pred[pv.id][off + i] = r



def _setp_body(m, inst, src, enabled) -> None:
    """SETP.md: scalar src0 -> bit i of src0 for every channel; otherwise ChEn-gated LSB of src0[i]."""
    n, op0 = inst.exec_size, inst.srcs[0]
    if not isinstance(inst.dst, PredicateOperand):
        raise IllegalInstruction("setp writes a predicate", rule="SETP.md: Dst operand class predicate",
                                 values={"dst": type(inst.dst).__name__})
    vals, t = src
    if t.name not in ("ub", "uw", "ud"):
        raise IllegalInstruction("setp src0 must have type UB, UW or UD", rule="SETP.md: Src0",
                                 values={"type": t.name})
    if not inst.mask.nomask or (n == 32 and inst.mask.offset != 0) or inst.mask.offset not in (0, 16):
        raise IllegalInstruction("setp must be {M1_NM} (or {M5_NM} below 32 channels)", rule="SETP.md notes",
                                 values={"mask": inst.mask.name, "exec_size": n})
    pv, off = m.predicate_span(inst.dst.pred.id, inst, "setp writes past its predicate variable")
    scalar = isinstance(op0, ImmediateOperand) or (
        isinstance(op0, (GeneralOperand, IndirectOperand)) and op0.vstride == 0 and op0.width == 1
        and op0.hstride == 0)
    for i in range(n):
        if scalar:
            m.pred[pv.id][off + i] = (vals[0] >> i) & 1
        elif enabled[i]:
            m.pred[pv.id][off + i] = vals[i] & 1



def _addr_add_body(m, inst, srcs, enabled) -> None:
    """ADDR_ADD.md: address + offset (16 bits) per channel."""
    if inst.pred.active:
        raise IllegalInstruction("predication is not supported for addr_add", rule="ADDR_ADD.md notes",
                                 values={"pred": inst.pred.id})
    dst = inst.dst
    if not isinstance(dst, AddressOperand):
        raise IllegalInstruction("addr_add writes an address operand", rule="ADDR_ADD.md: Dst operand class",
                                 values={"dst": type(dst).__name__})
    av = m.prog.avar(dst.id)
    n = inst.exec_size
    if dst.offset + n > av.num_elts:
        raise IllegalInstruction("addr_add writes past its address variable",
                                 rule="visa-operands.md: Address Operands",
                                 values={"variable": av.name, "offset": dst.offset, "exec_size": n,
                                         "num_elts": av.num_elts})
    op0 = inst.srcs[0]
    if isinstance(op0, GeneralOperand):  # "&V(row,col)": the byte address of the variable plus offsets
        var, base = m._var_base(op0.id)
        a = [base + op0.row * m.grf.grf_bytes + op0.col * var.type.size] * n
    else:
        a = srcs[0][0]
    b, tb = srcs[1]
    if tb.name != "uw" and not isinstance(inst.srcs[1], ImmediateOperand):
        raise IllegalInstruction("addr_add src1 must have type UW", rule="ADDR_ADD.md: Src1",
                                 values={"type": tb.name})
    for i in range(n):
        if enabled[i]:
            m.addr[av.id][dst.offset + i] = (a[i] + int(b[i])) & 0xFFFF



def execute_dpas(m, inst) -> None:
    """DPAS/DPASW on the machine's GRF, after checking every operand's footprint against its own variable.

    The footprints are those of :class:`systolic.xmx.rules.DpasShape` (G4_IR ``computeRightBound``): Dst
    and Src0 ``rc`` packed rows, Src1 ``src1_grfs`` GRFs, Src2 ``src2_bytes`` (for DPASW the part each EU
    reads from its own Src2, :func:`systolic.xmx.dpas.dpasw_split`). A raw operand reaching past its
    variable is undefined (visa-operands.md "Raw Operands"), and so is a Src2 past its general variable
    (visa-operands.md "Region-based Addressing"); both are refused, as every other instruction's are.
    """
    from ..xmx import rules                 # the engine below (layer 3), loaded with the first DPAS
    from ..xmx.dpas import dpas, dpasw, dpasw_split
    d, s0, s1, s2 = inst.dst, *inst.srcs
    gb = m.grf.grf_bytes

    def raw(op: RawOperand):
        var, base = m._var_base(op.id)
        if op.offset >= var.size:
            raise IllegalInstruction("raw operand offset is outside its variable",
                                     rule="visa-operands.md: Raw Operands",
                                     values={"variable": var.name, "offset": op.offset, "size": var.size})
        return var, base + op.offset

    dvar, daddr = raw(d)
    if s0.id == 0:
        s0var, s0addr, s0type = None, None, None
    else:
        s0var, s0addr = raw(s0)
        s0type = s0var.type.name
    s1var, s1addr = raw(s1)
    s2var, s2base = m._var_base(s2.id)
    for v, what in ((s1var, "Src1"), (s2var, "Src2")):
        if v.type.name not in ("d", "ud"):
            raise IllegalInstruction(f"DPAS {what} must have type D or UD", rule=f"visa-DPAS.md: {what}",
                                     values={"type": v.type.name})
    check_column_offset(s2.col, s2var.type.size, gb)
    s2off = s2.row * gb + s2.col * s2var.type.size
    s2addr = s2base + s2off
    kw = dict(dst=daddr, src0=s0addr, src1=s1addr, src2=s2addr, dst_type=dvar.type.name, src0_type=s0type,
              src1_precision=inst.dpas.w, src2_precision=inst.dpas.a, sd=inst.dpas.sd, rc=inst.dpas.rc,
              exec_size=inst.exec_size)
    shape = rules.check(m.platform, opcode=inst.op, **kw)
    src2_bytes = shape.src2_bytes
    if inst.op == "dpasw":
        src2_bytes = min(src2_bytes, dpasw_split(shape)[0] * gb)  # EU0's part; EU1's is never larger
    feet = [("Dst", d, dvar, d.offset, shape.rc * shape.row_bytes(shape.dst_type), RULE_RAW_OOB),
            ("Src1", s1, s1var, s1.offset, shape.src1_grfs * gb, RULE_RAW_OOB),
            ("Src2", s2, s2var, s2off, src2_bytes, RULE_SRC2_OOB)]
    if s0var is not None:
        feet.insert(1, ("Src0", s0, s0var, s0.offset, shape.rc * shape.row_bytes(shape.src0_type), RULE_RAW_OOB))
    for what, _op, var, off, nbytes, rule in feet:
        if off + nbytes > var.size:
            raise IllegalInstruction(f"{inst.op} {what} reaches past its variable {var.name}", rule=rule,
                                     values={"operand": what, "variable": var.name, "offset": off,
                                             "bytes": nbytes, "end": off + nbytes, "size": var.size})
    kw.update(device=m.platform, model=m.dpas_model)
    if inst.op == "dpas":
        dpas(m.grf, **kw, path="fast" if m.fast_dpas else "spec")
    else:
        pair = m.pair if m.pair is not None else m.grf.copy()
        dpasw(m.grf, pair=pair, **kw)

def _setp_srcs(m, inst, srcs, enabled) -> None:
    """SETP.md: a predicate from src0's bits."""
    _setp_body(m, inst, srcs[0], enabled)


execute_cmp = _own(_cmp_body)
execute_setp = _own(_setp_srcs)
execute_addr_add = _own(_addr_add_body)
