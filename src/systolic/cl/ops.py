"""Decoding one LLVM instruction into a closure over register slots (LangRef semantics; see
:mod:`systolic.cl.interp` for the rules on wraparound, poison and division by zero)."""

from __future__ import annotations

import numpy as np

from ..errors import InvalidValue, UnsupportedOperation
from ..llvmir import facts as F
from . import irtypes as IT
from .library import decode_call
from .names import Where, const_from_text
from .irtypes import vtype

__all__ = ["DecodeCtx", "decode_instruction"]


class DecodeCtx:
    def __init__(self, dec, df, slot_of, pos, blocks_by_ref, blocks):
        self.dec, self.df, self.slot_of, self.pos = dec, df, slot_of, pos
        self.blocks_by_ref, self.blocks = blocks_by_ref, blocks

    def block(self, ref) -> int:
        i = self.blocks_by_ref.get(ref)
        if i is None:
            for k, b in enumerate(self.blocks):
                if b == ref:
                    i = k
                    break
        return self.pos[i]

    def get(self, v):
        """A getter ``fr -> value`` for an operand."""
        kind = v.value_kind.name
        if kind in ("argument", "instruction"):
            s = self.slot_of(v)
            return lambda fr: fr.regs[s]
        t = vtype(str(v.type))
        if kind == "constant_int":
            c = _typed_int(F.int_value(v), t)
            return lambda fr: c
        if kind == "constant_fp":
            c = const_from_text(str(v), t)
            return lambda fr: c
        if kind in ("constant_data_vector", "constant_vector", "constant_aggregate_zero", "undef_value",
                    "poison_value", "constant_pointer_null"):
            c = const_from_text(str(v), t)
            return lambda fr: c
        if kind == "global_variable":
            name = v.name
            return lambda fr: fr.ex.launch.global_addr(name)
        if kind == "constant_expr":
            return _const_expr(self, str(v))
        raise UnsupportedOperation(f"operand kind {kind} ({str(v)[:60]}) is not modelled",
                                   rule="systolic.cl interpreter: operands", values={"operand": str(v)[:80]})


def _typed_int(v: int, t):
    if t.n:
        return np.full(t.n, v, t.dtype)
    if t.bits == 1:
        return np.bool_(v & 1)
    bits = t.bits
    v &= (1 << bits) - 1
    if v >= 1 << (bits - 1):
        v -= 1 << bits
    return t.dtype.type(v)


def _const_expr(ctx, text: str):
    """Constant expressions clang leaves in operands: getelementptr on a global, casts."""
    import re
    t = text.strip()
    m = re.match(r"^(ptr(?:\s+addrspace\(\d+\))?|i\d+)\s+(getelementptr|addrspacecast|bitcast|ptrtoint|inttoptr)"
                 r"\s*(?:inbounds\s*|nuw\s*|nusw\s*|inrange\(.*?\)\s*)*\((.*)\)(?:\s+to\s+.*)?$", t)
    if not m:
        raise UnsupportedOperation(f"constant expression {t[:80]} is not modelled",
                                   rule="systolic.cl interpreter: constant getelementptr and casts")
    op, body = m[2], m[3]
    if op == "getelementptr":
        parts = IT.split_top(body)
        src = parts[0]
        base_txt = parts[1]
        gname = base_txt.split("@")[-1].strip().strip('"')
        idx = [int(p.split()[-1]) for p in parts[2:]]
        off = _gep_const_offset(IT.expand(src, ctx.dec.named), idx)
        return lambda fr: fr.ex.launch.global_addr(gname) + np.int64(off)
    inner = body.split(" to ")[0].strip()
    last = inner.split()[-1] if inner.split() else ""
    if last in ("null", "poison", "undef", "zeroinitializer"):
        return lambda fr: np.int64(0)                  # a cast null pointer is null in every address space
    if op == "inttoptr" and re.fullmatch(r"-?\d+", last):
        v = np.int64(int(last))
        return lambda fr: v
    if "@" in inner and "(" not in inner:
        gname = inner.split("@")[-1].strip().strip('"')
        return lambda fr: fr.ex.launch.global_addr(gname)
    if "getelementptr" in inner:
        return _const_expr(ctx, inner)
    raise UnsupportedOperation(f"constant expression {t[:80]} is not modelled",
                               rule="systolic.cl interpreter: constant getelementptr and casts")


def _gep_const_offset(src: str, idx: list[int]) -> int:
    off = idx[0] * IT.alloc_size(src)
    cur = src
    for i in idx[1:]:
        cur = cur.strip()
        if cur.startswith("{") or cur.startswith("<{"):
            offs = IT.struct_offsets(cur)
            body = cur[2:-2] if cur.startswith("<{") else cur[1:-1]
            off += offs[i]
            cur = IT.split_top(body)[i]
        else:
            cur = IT.element_type(cur)
            off += i * IT.alloc_size(cur)
    return off


def _uns(x, t):
    if t.bits == 1:
        return np.asarray(x)
    if t.odd:
        return np.asarray(x).view(t.udtype) & t.udtype.type((1 << t.bits) - 1)
    return np.asarray(x).view(t.udtype)


def _sext(x, t):
    """An odd-width result wrapped to its bits, sign-extended in its container."""
    sh = t.dtype.type(t.dtype.itemsize * 8 - t.bits)
    return (np.asarray(x) << sh) >> sh


def _shape_of(*vals):
    return np.broadcast_shapes(*(np.shape(v) for v in vals))


def _int_binop(op, t, text, fname):
    f = _int_binop_raw(op, t, text, fname)
    if not t.odd:
        return f
    return lambda a, b, fr: _sext(f(a, b, fr), t)


def _int_binop_raw(op, t, text, fname):
    bits = t.bits
    if op == "add":
        return lambda a, b, fr: a + b
    if op == "sub":
        return lambda a, b, fr: a - b
    if op == "mul":
        return lambda a, b, fr: a * b
    if op == "and":
        return lambda a, b, fr: a & b
    if op == "or":
        return lambda a, b, fr: a | b
    if op == "xor":
        return lambda a, b, fr: a ^ b
    sh = np.dtype(t.udtype).type(bits) if bits > 1 else None       # shift amounts modulo the width
    if op == "shl":
        return lambda a, b, fr: (_uns(a, t) << (_uns(b, t) % sh)).view(t.dtype)
    if op == "lshr":
        return lambda a, b, fr: (_uns(a, t) >> (_uns(b, t) % sh)).view(t.dtype)
    if op == "ashr":
        return lambda a, b, fr: np.right_shift(a, (_uns(b, t) % sh).astype(t.dtype))
    if op in ("udiv", "urem", "sdiv", "srem"):
        def div(a, b, fr):
            bb = np.asarray(b)
            zero = bb == 0
            if zero.any():
                act = zero if fr.mask is None else (zero & fr.mask if zero.ndim == 1 else zero & fr.mask[:, None])
                if np.ndim(act) == 0:
                    act = np.broadcast_to(act, fr.mask.shape) & fr.mask
                if act.any():
                    lane = int(np.flatnonzero(act.reshape(act.shape[0], -1).any(axis=1) if act.ndim else act)[0])
                    raise InvalidValue(f"integer division by zero in kernel {fr.ex.launch.kernel}",
                                       rule="LangRef: udiv/sdiv/urem/srem by zero is undefined behaviour",
                                       values={"instruction": text, **fr.ex.lanes.describe(lane)})
                bb = np.where(zero, np.ones_like(bb), bb)
            if op[0] == "u":
                ua, ub = _uns(a, t), _uns(bb, t)
                r = ua // ub if op == "udiv" else ua % ub
                return np.asarray(r).view(t.dtype)
            a64, b64 = np.asarray(a).astype(np.int64), bb.astype(np.int64)
            q = np.abs(a64) // np.abs(b64)
            q = np.where((a64 < 0) ^ (b64 < 0), -q, q)
            r = q if op == "sdiv" else a64 - q * b64
            return r.astype(t.dtype)
        return div
    raise UnsupportedOperation(f"integer operation {op}", rule="LangRef binary operations")


_FBIN = {"fadd": np.add, "fsub": np.subtract, "fmul": np.multiply, "fdiv": np.divide, "frem": np.fmod}
_ICMP = {"eq": np.equal, "ne": np.not_equal, "sgt": np.greater, "sge": np.greater_equal, "slt": np.less,
         "sle": np.less_equal, "ugt": np.greater, "uge": np.greater_equal, "ult": np.less, "ule": np.less_equal}


def _fcmp(pred):
    base = {"eq": np.equal, "gt": np.greater, "ge": np.greater_equal, "lt": np.less, "le": np.less_equal,
            "ne": np.not_equal}
    if pred == "true":
        return lambda a, b: np.ones(_shape_of(a, b), bool)
    if pred == "false":
        return lambda a, b: np.zeros(_shape_of(a, b), bool)
    if pred == "ord":
        return lambda a, b: ~(np.isnan(a) | np.isnan(b))
    if pred == "uno":
        return lambda a, b: np.isnan(a) | np.isnan(b)
    f = base[pred[1:]]
    if pred[0] == "o":
        return lambda a, b: f(a, b) & ~(np.isnan(a) | np.isnan(b))
    return lambda a, b: f(a, b) | np.isnan(a) | np.isnan(b)


def _cast(op, st, tt):
    if op in ("addrspacecast", "freeze"):
        return lambda x: x
    if op == "trunc":
        if tt.bits == 1:
            return lambda x: (np.asarray(x) & 1) != 0
        if tt.odd:
            return lambda x: _sext(np.asarray(x).astype(tt.dtype), tt)
        return lambda x: np.asarray(x).astype(tt.dtype)
    if op == "zext":
        if st.bits == 1:
            return lambda x: np.asarray(x).astype(tt.dtype)
        if tt.odd:
            return lambda x: _sext(_uns(x, st).astype(tt.udtype).view(tt.dtype), tt)
        return lambda x: _uns(x, st).astype(tt.udtype).view(tt.dtype) if np.ndim(x) else \
            np.asarray(_uns(x, st).astype(tt.udtype)).view(tt.dtype)
    if op == "sext":
        if st.bits == 1:
            return lambda x: np.where(x, -1, 0).astype(tt.dtype)
        return lambda x: np.asarray(x).astype(tt.dtype)
    if op in ("fptrunc", "fpext", "sitofp", "fptosi", "ptrtoint", "inttoptr"):
        return lambda x: np.asarray(x).astype(tt.dtype)
    if op == "uitofp":
        return lambda x: _uns(x, st).astype(tt.dtype)
    if op == "fptoui":
        return lambda x: np.asarray(x).astype(tt.udtype).view(tt.dtype)
    if op == "bitcast":
        def bc(x):
            a = np.ascontiguousarray(x)
            if not st.n:
                a = a[..., None]
            if a.dtype == np.bool_:
                raise UnsupportedOperation("bitcast of i1 vectors", rule="systolic.cl interpreter")
            b = a.view(tt.dtype)
            return b[..., 0] if not tt.n else b
        return bc
    raise UnsupportedOperation(f"cast {op}", rule="LangRef conversion operations")


def decode_instruction(ctx: DecodeCtx, db, ins) -> None:
    op = ins.opcode
    text = str(ins).strip()
    fname = ctx.df.name
    ops = list(ins.operands)
    if op == "phi":
        slot = ctx.slot_of(ins)
        incoming = [(ctx.block(b), ctx.get(v)) for b, v in zip(ins.incoming_blocks, ops)]
        db.phis.append((slot, incoming))
        db.nops += 1
        return
    if op in ("br", "switch", "ret", "unreachable"):
        if op == "br":
            if len(ops) == 1:
                db.term = ("br", ctx.block(ops[0]))
            else:
                db.term = ("condbr", (ctx.get(ops[0]), ctx.block(ops[2]), ctx.block(ops[1])))
        elif op == "ret":
            db.term = ("ret", ctx.get(ops[0]) if ops else None)
        elif op == "switch":
            get = ctx.get(ops[0])
            default = ctx.block(ops[1])
            # LLVM 22 keeps the case values out of the operands: [cond, default, dest1, dest2, ...]; the values
            # come from the text, in the same order
            dests = [o for o in ops[2:] if o.value_kind.name == "basic_block"]
            vals = [v for v, _ in F.switch_cases(ins)]
            if len(vals) != len(dests):
                raise UnsupportedOperation("a switch whose cases cannot be read", rule="LangRef: switch",
                                           values={"instruction": text[:100]})
            cases = [(v, ctx.block(d)) for v, d in zip(vals, dests)]
            db.term = ("switch", (get, default, cases))
        else:
            db.term = ("unreachable", None)
        return
    db.nops += 1
    slot = ctx.slot_of(ins)
    ty = str(ins.type)

    def emit(f):
        db.ops.append(f)

    if op in ("add", "sub", "mul", "and", "or", "xor", "shl", "lshr", "ashr", "udiv", "sdiv", "urem", "srem"):
        t = vtype(ty)
        fn = _int_binop(op, t, text, fname)
        ga, gb = ctx.get(ops[0]), ctx.get(ops[1])
        if t.bits == 1 and op in ("add", "sub", "xor"):
            emit(lambda fr: fr.set(slot, np.logical_xor(ga(fr), gb(fr))))
        elif t.bits == 1 and op == "mul":
            emit(lambda fr: fr.set(slot, np.logical_and(ga(fr), gb(fr))))
        else:
            emit(lambda fr: fr.set(slot, fn(ga(fr), gb(fr), fr)))
        return
    if op in _FBIN:
        f = _FBIN[op]
        ga, gb = ctx.get(ops[0]), ctx.get(ops[1])
        emit(lambda fr: fr.set(slot, f(ga(fr), gb(fr))))
        return
    if op == "fneg":
        ga = ctx.get(ops[0])
        emit(lambda fr: fr.set(slot, np.negative(ga(fr))))
        return
    if op == "icmp":
        pred = F.predicate(ins)
        f = _ICMP[pred]
        st = vtype(str(ops[0].type))
        ga, gb = ctx.get(ops[0]), ctx.get(ops[1])
        if pred[0] == "u" and st.kind != "ptr":
            emit(lambda fr: fr.set(slot, f(_uns(ga(fr), st), _uns(gb(fr), st))))
        else:
            emit(lambda fr: fr.set(slot, f(ga(fr), gb(fr))))
        return
    if op == "fcmp":
        f = _fcmp(F.predicate(ins))
        ga, gb = ctx.get(ops[0]), ctx.get(ops[1])
        emit(lambda fr: fr.set(slot, f(ga(fr), gb(fr))))
        return
    if op == "select":
        gc, ga, gb = ctx.get(ops[0]), ctx.get(ops[1]), ctx.get(ops[2])
        t = vtype(ty)
        ct = vtype(str(ops[0].type))

        def sel(fr):
            c = gc(fr)
            if np.ndim(c) == 0:
                fr.set(slot, ga(fr) if c else gb(fr))
                return
            if t.n and not ct.n:
                c = np.asarray(c)[..., None]
            fr.set(slot, np.where(c, ga(fr), gb(fr)))
        emit(sel)
        return
    if op in ("trunc", "zext", "sext", "fptrunc", "fpext", "fptoui", "fptosi", "uitofp", "sitofp", "ptrtoint",
              "inttoptr", "bitcast", "addrspacecast", "freeze"):
        f = _cast(op, vtype(str(ops[0].type)), vtype(ty))
        ga = ctx.get(ops[0])
        emit(lambda fr: fr.set(slot, f(ga(fr))))
        return
    if op == "extractelement":
        gv, gi = ctx.get(ops[0]), ctx.get(ops[1])

        def ext(fr):
            v, i = np.asarray(gv(fr)), gi(fr)
            if np.ndim(i) == 0:
                fr.set(slot, v[..., int(i)])
            else:
                vv = np.broadcast_to(v, (len(i), v.shape[-1]))
                fr.set(slot, np.take_along_axis(vv, np.asarray(i).astype(np.int64)[:, None], axis=1)[:, 0])
        emit(ext)
        return
    if op == "insertelement":
        gv, ge, gi = ctx.get(ops[0]), ctx.get(ops[1]), ctx.get(ops[2])

        def ins_(fr):
            v, e, i = np.asarray(gv(fr)), np.asarray(ge(fr)), gi(fr)
            shape = np.broadcast_shapes(v.shape[:-1], e.shape) + v.shape[-1:]
            out = np.array(np.broadcast_to(v, shape))
            if np.ndim(i) == 0:
                out[..., int(i)] = e
            else:
                ii = np.asarray(i).astype(np.int64)
                out[np.arange(out.shape[0]), ii] = np.broadcast_to(e, (out.shape[0],))
            fr.set(slot, out)
        emit(ins_)
        return
    if op == "shufflevector":
        mask = [0 if m is None else m for m in F.shuffle_mask(ins)]
        g1, g2 = ctx.get(ops[0]), ctx.get(ops[1])
        n1 = vtype(str(ops[0].type)).n
        idx = np.array(mask, dtype=np.int64)
        only1 = bool((idx < n1).all())

        def shuf(fr):
            a = np.asarray(g1(fr))
            if only1:
                fr.set(slot, a[..., idx])
                return
            b = np.asarray(g2(fr))
            lead = np.broadcast_shapes(a.shape[:-1], b.shape[:-1])
            c = np.concatenate([np.broadcast_to(a, lead + a.shape[-1:]), np.broadcast_to(b, lead + b.shape[-1:])],
                               axis=-1)
            fr.set(slot, c[..., idx])
        emit(shuf)
        return
    if op == "getelementptr":
        src = IT.expand(F.gep_source_type(ins), ctx.dec.named)
        gb = ctx.get(ops[0])
        steps = []       # (getter, scale) or constant offsets
        const_off = 0
        cur = src
        for k, o in enumerate(ops[1:]):
            if k == 0:
                size = IT.alloc_size(cur)
            else:
                c = cur.strip()
                if c.startswith("{") or c.startswith("<{"):
                    fi = F.int_value(o)
                    const_off += IT.struct_offsets(c)[fi]
                    body = c[2:-2] if c.startswith("<{") else c[1:-1]
                    cur = IT.split_top(body)[fi]
                    continue
                cur = IT.element_type(c)
                size = IT.alloc_size(cur)
            if o.value_kind.name == "constant_int":
                const_off += F.int_value(o) * size
            else:
                if vtype(str(o.type)).n:
                    raise UnsupportedOperation("vector getelementptr", rule="systolic.cl interpreter")
                steps.append((ctx.get(o), np.int64(size)))
        coff = np.int64(const_off)

        def gep(fr):
            a = gb(fr)
            for g, s in steps:
                a = a + np.asarray(g(fr)).astype(np.int64) * s
            fr.set(slot, a + coff if coff else a)
        emit(gep)
        return
    if op == "alloca":
        at = IT.expand(F.alloca_type(ins), ctx.dec.named)
        size = IT.alloc_size(at)
        if len(ops) and ops[0].value_kind.name == "constant_int":
            size *= max(1, F.int_value(ops[0]))
        key = (fname, slot)
        emit(lambda fr: fr.set(slot, fr.ex.launch.alloca(key, size)))
        return
    if op == "load":
        t = vtype(ty)
        gp = ctx.get(ops[0])
        dt = np.dtype(np.uint8) if t.bits == 1 else t.dtype

        def load(fr):
            m = None if (fr.full and fr.entry is fr.ex.launch.all_mask) else fr.mask
            v = fr.ex.launch.mem.load(gp(fr), m, t.nbytes, dt, t.n, Where(fr.ex.launch.kernel, fname, text))
            fr.set(slot, v != 0 if t.bits == 1 else v)
        emit(load)
        return
    if op == "store":
        t = vtype(str(ops[0].type))
        gv, gp = ctx.get(ops[0]), ctx.get(ops[1])
        dt = np.dtype(np.uint8) if t.bits == 1 else t.dtype

        def store(fr):
            m = None if (fr.full and fr.entry is fr.ex.launch.all_mask) else fr.mask
            fr.ex.launch.mem.store(gp(fr), gv(fr), m, t.nbytes, dt, t.n, Where(fr.ex.launch.kernel, fname, text))
        emit(store)
        return
    if op == "call":
        emit(decode_call(ctx, ins, slot, ops, text))
        return
    if op in ("extractvalue", "insertvalue"):
        raise UnsupportedOperation(f"{op} (aggregate values) is not modelled by the interpreter",
                                   rule="systolic.cl interpreter: first-class scalar and vector values",
                                   values={"instruction": text[:100]})
    raise UnsupportedOperation(f"instruction {op} is not modelled by the interpreter",
                               rule="systolic.cl interpreter: the instructions clang emits for OpenCL C",
                               values={"instruction": text[:100]})
