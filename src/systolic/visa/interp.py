"""Run a vISA program on one hardware thread's GRF with SIMD semantics.

Every instruction: evaluate the channel-enable mask (visa-operands.md ``EvaluateChEn``), read all
sources through their regions (direct, indirect, immediate, address, predicate operands), compute
each enabled channel with the per-element spec path of :mod:`systolic.visa.alu`, then write the
enabled channels of the destination. DPAS and DPASW are executed by :mod:`systolic.xmx.dpas`
(raw operands placed by the JIT layout of :mod:`systolic.visa.variables`).

>>> from systolic.visa import asm, interp
>>> p = asm.parse(".decl V1 v_type=G type=d num_elts=8\\nadd (M1, 8) V1(0,0)<1> 0x76543210:v 0x1:d")
>>> interp.run(p, device="dg2").read("V1").tolist()
[1, 2, 3, 4, 5, 6, 7, 8]
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from .. import counters, fpenv
from ..errors import IllegalInstruction, InvalidValue, SystolicError
from ..xmx.grf import GRF
from ..xmx.platform import get_platform
from . import alu
from .encoding import expand_uv, expand_v, expand_vf
from .indirect import check_alignment, indirect_dest, multi_address_source, single_address_source, RULE_ONE_VAR
from .isa import TYPES, VisaType
from .operands import (AddressOfOperand, AddressOperand, GeneralOperand, ImmediateOperand, IndirectOperand,
                       PredicateOperand, RawOperand)
from .predication import PredControl, evaluate_chen
from .program import Instruction, Program, check_instruction, located
from .regions import (check_column_offset, check_dst_region, check_in_variable, check_src_region,
                      check_two_grfs, dest_element_indices, source_element_indices)
from ..vocabulary import check_path, deprecated, renamed
from .values import variable_bytes
from .variables import Layout, layout

__all__ = ["Machine", "run", "DTYPES"]

#: numpy dtype of each vISA element type (for --in/--out and read/write)
DTYPES = {"ud": np.uint32, "d": np.int32, "uw": np.uint16, "w": np.int16, "ub": np.uint8, "b": np.int8,
          "uq": np.uint64, "q": np.int64, "f": np.float32, "df": np.float64, "hf": np.float16,
          "bf": ml_dtypes.bfloat16}

_W, _UW, _F = TYPES["w"], TYPES["uw"], TYPES["f"]



class Machine:
    """One thread: GRF, address and predicate variables, the execution mask EM.

    ``pair``: EU1's register file for DPASW (default: a copy of this thread's GRF taken when the
    DPASW executes, i.e. both fused threads ran the same program on the same data).
    ``path``: ``"spec"`` (every instruction element by element, the default) or ``"fast"`` (DPAS through
    :func:`systolic.xmx.kernels.dpas_fast` and the common ALU cases through :mod:`systolic.visa.alu_fast`, both
    proven bit-identical); ``fast_dpas=`` / ``fast_alu=`` are its older, separate spellings (DeprecationWarning;
    one that says otherwise than a ``path=`` given beside it is InvalidValue).
    ``device``: the GPU platform (name or alias, default pvc); ``platform=`` is its older name
    (DeprecationWarning).
    """

    def __init__(self, program: Program, device=None, *, num_grf: int | None = None, em: int = 0xFFFFFFFF,
                 model: alu.FloatModel = alu.DEFAULT_MODEL, dpas_model=None, pair: GRF | None = None,
                 path: str | None = None, fast_dpas: bool | None = None, fast_alu: bool | None = None,
                 two_grf_rule: str = "spec", **renamed_keywords):
        if renamed_keywords:             # platform=: the older name of device= (systolic.vocabulary)
            device = renamed(renamed_keywords, {"platform": "device"}, "visa Machine", device=device)["device"]
        fast = path is not None and check_path(path, "visa Machine") == "fast"     # None: not given (spec)
        for old, v in (("fast_dpas", fast_dpas), ("fast_alu", fast_alu)):
            if v is None:
                continue
            if path is not None and bool(v) != fast:   # was: the old flag silently won over the given path
                raise InvalidValue(f"visa Machine: {old}={v!r} says otherwise than the path={path!r} also given; "
                                   "give path= only", rule="visa Machine: path='fast' is fast_dpas and fast_alu, "
                                   "path='spec' neither", values={old: v, "path": path})
            deprecated(f"{old}=", "path='fast' (both) or path='spec'", "visa Machine", stacklevel=2)
        fast_dpas = fast if fast_dpas is None else fast_dpas
        fast_alu = fast if fast_alu is None else fast_alu
        if not isinstance(program, Program):
            raise InvalidValue("Machine runs a parsed vISA program (systolic.visa.asm.parse)",
                               values={"program": type(program).__name__})
        if isinstance(em, (bool, np.bool_)) or not isinstance(em, (int, np.integer)):
            raise InvalidValue("EM is a 32-bit integer mask", values={"em": em})
        self.prog = program
        self.platform = get_platform("pvc" if device is None else device)
        self.grf = GRF(self.platform, num_grf)
        self.layout: Layout = layout(program.general, self.grf.grf_bytes, self.grf.num_grf)
        self.addr = {a.id: [0] * a.num_elts for a in program.address}
        self.pred = {p.id: [0] * p.num_elts for p in program.predicate}
        if not 0 <= em <= 0xFFFFFFFF:
            raise InvalidValue("EM is a 32-bit mask", values={"em": em})
        self.em = [(int(em) >> i) & 1 for i in range(32)]
        self.model = model
        self.dpas_model = dpas_model
        self.pair = pair
        #: DPAS through systolic.xmx.kernels.dpas_fast (vectorised, proven bit-identical by the XMX tests)
        self.fast_dpas = fast_dpas
        #: common ALU cases through systolic.visa.alu_fast (vectorised, proven bit-identical)
        self.fast_alu = fast_alu
        #: Region Restrictions rule 6. "spec": every operand (visa-operands.md); "igc": as IGC's verifier,
        #: which checks it only outside mov/logic/compare/arithmetic instructions because the finaliser
        #: splits those (IsaVerification.cpp, "CISA operand accesses more than 2 GRF")
        if two_grf_rule not in ("spec", "igc"):
            raise InvalidValue("two_grf_rule is 'spec' or 'igc'", values={"two_grf_rule": two_grf_rule})
        self.two_grf_rule = two_grf_rule
        self._check6 = True

    # ------------------------------------------------------------------ variables by name
    def _gvar(self, name: str):
        v = self.prog.lookup(name)
        if v is None:
            raise InvalidValue(f"no variable {name!r}", values={"variable": name,
                                                                "declared": sorted(self.prog.names())})
        return v

    @fpenv.guarded  # the conversions read the host's float arithmetic (MXCSR.DAZ would flush denormal inputs)
    def write(self, name: str, values) -> None:
        """Set a variable from an array (general: converted to its type; address/predicate: ints/bools).

        General variables: :func:`systolic.visa.values.variable_bytes` (a float variable rounds the exact
        input once, to nearest even; an integer variable takes only integers inside its type's range)."""
        try:
            self._write(name, values)
        except (TypeError, ValueError, OverflowError) as e:
            if isinstance(e, SystolicError):
                raise
            raise InvalidValue(f"cannot store these values in {name}: {e}", values={"variable": name}) from None

    def _write(self, name: str, values) -> None:
        v = self._gvar(name)
        arr = np.asarray(values).ravel()
        if v in self.prog.address or v in self.prog.predicate:
            if arr.dtype.kind in "OUSMmc":  # strings, objects, dates, complex (ml_dtypes floats are kind V)
                raise InvalidValue("values must be numbers", values={"variable": name, "dtype": str(arr.dtype)})
        if v in self.prog.address:
            n = v.num_elts
            if arr.size > n:
                raise InvalidValue("too many values for the variable", values={"variable": name, "given": arr.size,
                                                                                "num_elts": n})
            for i, x in enumerate(arr.tolist()):
                if x != int(x) or not 0 <= x <= 0xFFFF:
                    raise InvalidValue("address elements are UW byte addresses", rule="8_appendix: address variables",
                                       values={"variable": name, "value": x})
                self.addr[v.id][i] = int(x)
            return
        if v in self.prog.predicate:
            if arr.size > v.num_elts:
                raise InvalidValue("too many values for the variable", values={"variable": name, "given": arr.size,
                                                                                "num_elts": v.num_elts})
            for i, x in enumerate(arr.tolist()):
                if x not in (0, 1):
                    raise InvalidValue("predicate elements are 0 or 1", values={"variable": name, "value": x})
                self.pred[v.id][i] = int(x)
            return
        if arr.size > v.num_elts:
            raise InvalidValue("too many values for the variable", values={"variable": name, "given": arr.size,
                                                                            "num_elts": v.num_elts})
        data = variable_bytes(values, v.type, np.dtype(DTYPES[v.type.name]), name)
        self.grf.write(self.layout.offsets[v.name], data)

    def read(self, name: str) -> np.ndarray:
        """A variable's current value as a numpy array of its type (bool array for predicates)."""
        v = self._gvar(name)
        if v in self.prog.address:
            return np.array(self.addr[v.id], dtype=np.uint16)
        if v in self.prog.predicate:
            return np.array(self.pred[v.id], dtype=bool)
        raw = self.grf.read(self.layout.offsets[v.name], v.size)
        return raw.view(DTYPES[v.type.name]).copy()

    # ------------------------------------------------------------------ run
    @fpenv.guarded
    def run(self, trace=None) -> "Machine":
        """Execute every instruction in order; ``trace(inst, machine)`` is called after each one."""
        for inst in self.prog.instructions:
            self.step(inst)
            if trace is not None:
                trace(inst, self)
        return self

    def dst_name(self, inst: Instruction) -> str | None:
        """The name of the variable an instruction writes (None for indirect destinations)."""
        d = inst.dst
        if isinstance(d, (GeneralOperand, RawOperand)):
            return self.prog.gvar(d.id).name
        if isinstance(d, PredicateOperand):
            return self.prog.pvar(d.pred.id).name
        if isinstance(d, AddressOperand):
            return self.prog.avar(d.id).name
        return None

    @fpenv.guarded
    def step(self, inst: Instruction) -> None:
        try:
            self._step(inst)
        except SystolicError as e:
            raise located(e, inst.line, inst.column, self.prog.source) from None
        if counters.active():
            counters.count("visa", op=inst.op, platform=self.platform.name)

    # ------------------------------------------------------------------ element access
    def _load(self, addr: int, t: VisaType) -> int:
        return int.from_bytes(self.grf.read(addr, t.size).tobytes(), "little")

    def _store(self, addr: int, t: VisaType, bits: int) -> None:
        self.grf.write(addr, np.frombuffer(int(bits).to_bytes(t.size, "little"), dtype=np.uint8))

    def _var_base(self, vid: int):
        var = self.prog.gvar(vid)
        if vid == 0:
            raise IllegalInstruction("%null has no storage", rule="visa-DPAS.md: Src0 may be null (only there)",
                                     values={"id": vid})
        return var, self.layout.offsets[var.name]

    def _owner_check(self, addrs, t: VisaType, rows: int = 1) -> None:
        """Indirect accesses: aligned, in the GRF file, and (per row) inside one general variable."""
        check_alignment(addrs, t.size)
        per_row = max(1, len(addrs) // rows)
        for r in range(rows):
            chunk = addrs[r * per_row:(r + 1) * per_row]
            first = chunk[0]
            owner = self.layout.owner(first, self.prog.general)
            if owner is None:
                raise IllegalInstruction("indirect address points at no general variable", rule=RULE_ONE_VAR,
                                         values={"address": first})
            lo = self.layout.offsets[owner.name]
            for a in chunk:
                if a < lo or a + t.size > lo + owner.size:
                    raise IllegalInstruction("indirect access leaves its base general variable", rule=RULE_ONE_VAR,
                                             values={"variable": owner.name, "address": a, "var_start": lo,
                                                     "var_end": lo + owner.size})

    def source_addresses(self, op, exec_size: int) -> tuple[list[int], VisaType]:
        """Byte addresses (one per channel) and element type of a general or indirect source."""
        gb = self.grf.grf_bytes
        if isinstance(op, GeneralOperand):
            var, base = self._var_base(op.id)
            t = var.type
            check_src_region(op.vstride, op.width, op.hstride, exec_size)
            check_column_offset(op.col, t.size, gb)
            idx = source_element_indices(op.row, op.col, op.vstride, op.width, op.hstride, exec_size, t.size, gb)
            check_in_variable(idx, var.num_elts, var.name)
            addrs = [base + i * t.size for i in idx]
            self._rule6(addrs, t.size, gb, var.name)
            return addrs, t
        if isinstance(op, IndirectOperand):
            t = op.type
            check_src_region(op.vstride, op.width, op.hstride, exec_size, multi_address_ok=True)
            an = self.addr[self.prog.avar(op.id).id]
            if op.vstride is None:
                addrs = multi_address_source(an, op.addr_offset, op.indirect_offset, op.width, op.hstride,
                                             exec_size, t.size)
                self._owner_check(addrs, t, rows=exec_size // op.width)
            else:
                addrs = single_address_source(an, op.addr_offset, op.indirect_offset, op.vstride, op.width,
                                              op.hstride, exec_size, t.size)
                self._owner_check(addrs, t)
                self._rule6(addrs, t.size, gb, "indirect")
            return addrs, t
        raise IllegalInstruction("operand has no GRF addresses", rule="visa-operands.md: Vector Operands",
                                 values={"operand": type(op).__name__})

    def dest_addresses(self, op, exec_size: int) -> tuple[list[int], VisaType]:
        gb = self.grf.grf_bytes
        if isinstance(op, GeneralOperand):
            var, base = self._var_base(op.id)
            t = var.type
            check_dst_region(op.hstride)
            check_column_offset(op.col, t.size, gb)
            idx = dest_element_indices(op.row, op.col, op.hstride, exec_size, t.size, gb)
            check_in_variable(idx, var.num_elts, var.name)
            addrs = [base + i * t.size for i in idx]
            self._rule6(addrs, t.size, gb, var.name)
            return addrs, t
        if isinstance(op, IndirectOperand):
            t = op.type
            check_dst_region(op.hstride)
            an = self.addr[self.prog.avar(op.id).id]
            multi = op.vstride is None and op.width is not None
            addrs = indirect_dest(an, op.addr_offset, op.indirect_offset, multi, op.hstride, exec_size, t.size)
            self._owner_check(addrs, t)
            self._rule6(addrs, t.size, gb, "indirect")
            return addrs, t
        raise IllegalInstruction("not a general or indirect destination", rule="visa-operands.md: Vector Operands",
                                 values={"operand": type(op).__name__})

    def read_source(self, op, inst: Instruction) -> tuple[list, VisaType]:
        """Per-channel values of a source operand (ints or alu.FVal) and their type, modifiers applied."""
        n = inst.exec_size
        if isinstance(op, ImmediateOperand):
            t = op.type
            if t.kind == "vector":
                if t.name == "vf":
                    if self.platform.family.startswith("Xe2") or self.platform.family.startswith("Xe3"):
                        # HWCaps.inc hasPackedRestrictedFloatVector(): platform < Xe2
                        raise IllegalInstruction(":vf datatype is not supported on this platform",
                                                 rule="IsaVerification.cpp (hasPackedRestrictedFloatVector)",
                                                 values={"platform": self.platform.name})
                    elems, et = expand_vf(op.low), _F
                else:
                    elems, et = (expand_v(op.low), _W) if t.name == "v" else (expand_uv(op.low), _UW)
                    elems = [e & 0xFFFF for e in elems]
                if n > len(elems):
                    raise IllegalInstruction("a packed-vector immediate has only "
                                             f"{len(elems)} elements (contiguous region, zero offset)",
                                             rule="visa-operands.md: Immediate Operands",
                                             values={"type": t.name, "exec_size": n})
                return [alu.decode_value(b, et, self.model) for b in elems[:n]], et
            v = alu.decode_value(op.bits, t, self.model)
            return [v] * n, t
        if isinstance(op, AddressOperand):
            av = self.prog.avar(op.id)
            if op.offset + op.width > av.num_elts:
                raise IllegalInstruction("address operand offset + width exceeds the address variable",
                                         rule="visa-operands.md: Address Operands",
                                         values={"variable": av.name, "offset": op.offset, "width": op.width,
                                                 "num_elts": av.num_elts})
            an = self.addr[av.id]
            return [an[op.offset + (i % op.width)] for i in range(n)], _UW
        if isinstance(op, AddressOfOperand):
            var, base = self._var_base(op.id)
            return [base + op.offset] * n, _UW
        if isinstance(op, PredicateOperand):
            pv, off = self.predicate_span(op.pred.id, inst, "predicate operand reads past its variable",
                                          " (contiguous from the mask offset)")
            bits = self.pred[pv.id]
            vals = [bits[off + i] for i in range(n)]
            if op.pred.inverse:
                vals = [1 - b for b in vals]
            return vals, TYPES["bool"]
        addrs, t = self.source_addresses(op, n)
        vals = [alu.decode_value(self._load(a, t), t, self.model) for a in addrs]
        mod = getattr(op, "modifier", "none")
        if mod != "none":
            vals = [alu.apply_modifier(v, mod, t) for v in vals]
        return vals, t

    # ------------------------------------------------------------------ masks
    def predicate_span(self, pred_id: int, inst: Instruction, message: str, detail: str = ""):
        """(predicate variable, first element): the ``exec_size`` elements from the mask offset, which must lie
        inside the variable (visa-operands.md "Predicate Operands"), else IllegalInstruction ``message``."""
        pv = self.prog.pvar(pred_id)
        off, n = inst.mask.offset, inst.exec_size
        if off + n > pv.num_elts:
            raise IllegalInstruction(message, rule="visa-operands.md: Predicate Operands" + detail,
                                     values={"variable": pv.name, "first": off, "exec_size": n,
                                             "num_elts": pv.num_elts})
        return pv, off

    def _pred_bits(self, pred: PredControl):
        if not pred.active:
            return None
        return self.pred[self.prog.pvar(pred.id).id]

    def chen(self, inst: Instruction) -> list[int]:
        return evaluate_chen(inst.exec_size, inst.mask, inst.pred, self.em, self._pred_bits(inst.pred))

    # ------------------------------------------------------------------ execution
    def _rule6(self, addrs, size: int, grf_bytes: int, name: str) -> None:
        if self._check6:
            check_two_grfs(addrs, size, grf_bytes, name)

    _IGC_SPLITS = frozenset({"mov", "sel", "add", "mul", "mad", "min", "max", "and", "or", "xor", "not", "shl",
                             "shr", "asr", "cmp"})

    def _step(self, inst: Instruction) -> None:
        """Check, then execute: ``inst`` arrives decoded (parsed, decoded from binary, or built as a record) with
        its :class:`~systolic.visa.isa.Opcode` record; the record's ``execute`` is the instruction's semantics
        (:mod:`systolic.visa.semantics`)."""
        # the static rules the assembler and the decoder apply, again here: a Program built from records
        # (not parsed) runs under the same rules as one that was parsed or decoded
        check_instruction(inst)
        self._check6 = self.two_grf_rule == "spec" or inst.op not in self._IGC_SPLITS
        inst.opcode.execute(self, inst)

    # ------------------------------------------------------------------ fast path
    def _gather(self, addrs, size: int) -> np.ndarray:
        idx = np.asarray(addrs, dtype=np.int64)[:, None] + np.arange(size)
        return np.ascontiguousarray(self.grf.data[idx]).view(f"<u{size}").ravel().astype(np.uint64)

    def _scatter(self, addrs, size: int, bits: np.ndarray) -> None:
        if len(addrs) == 0:
            return
        idx = np.asarray(addrs, dtype=np.int64)[:, None] + np.arange(size)
        self.grf.data[idx] = bits.astype(f"<u{size}").view(np.uint8).reshape(len(addrs), size)

    def _fast_step(self, inst: Instruction, enabled, sel) -> bool:
        """The same instruction through :mod:`.alu_fast`; False (nothing done) where it does not apply.

        Reads sources, then the destination, then checks types, in the spec path's order, so an error
        is the same error.
        """
        from . import alu_fast
        n = inst.exec_size
        if inst.op not in alu_fast.FAST_OPS or not isinstance(inst.dst, (GeneralOperand, IndirectOperand)):
            return False
        srcs = []
        for op in inst.srcs:
            if isinstance(op, ImmediateOperand) and op.type.kind not in ("vector", "bool") and op.modifier == "none":
                srcs.append((np.full(n, op.bits, dtype=np.uint64), op.type, "none"))
            elif isinstance(op, (GeneralOperand, IndirectOperand)):
                addrs, t = self.source_addresses(op, n)
                if op.modifier == "not" and t.is_float:
                    return False
                srcs.append((self._gather(addrs, t.size), t, op.modifier))
            else:
                return False
        addrs, dt = self.dest_addresses(inst.dst, n)
        self._check_types(inst, dt, [t for _, t, _ in srcs])
        mask = None if sel is None else np.array(sel[:n], dtype=bool)
        res = alu_fast.compute(inst.op, srcs, dt, sat=inst.sat, sel_mask=mask, model=self.model)
        if res is None:
            return False
        on = np.array(enabled[:n], dtype=bool)
        self._scatter(np.asarray(addrs, dtype=np.int64)[on], dt.size, res[on])
        return True

    def _check_types(self, inst: Instruction, dt: VisaType, sts: list) -> None:
        o = inst.opcode
        kinds = {("float" if (t.is_float or t.name == "vf") else "int") for t in sts if t.kind != "bool"}
        if dt.name not in o.types:
            raise IllegalInstruction(f"{inst.op} does not support destination type {dt.name}",
                                     rule=f"instructions/{o.doc}: Supported Types",
                                     values={"type": dt.name, "supported": list(o.types)})
        if inst.op == "mov":
            return
        if len(kinds) > 1:
            raise IllegalInstruction("sources may not mix integer and float types",
                                     rule="2_datatypes.md: Type Conversion", values={"types": [t.name for t in sts]})
        if kinds == {"float"} and not dt.is_float or kinds == {"int"} and dt.is_float:
            raise IllegalInstruction("the destination type must match the execution type (integer or float)",
                                     rule="2_datatypes.md: Type Conversion",
                                     values={"dst": dt.name, "sources": [t.name for t in sts]})
        if inst.op in ("and", "or", "xor", "not", "shl", "shr", "asr") and (dt.is_float or kinds == {"float"}):
            raise IllegalInstruction(f"{inst.op} takes integer operands only", rule=f"instructions/{o.doc}",
                                     values={"dst": dt.name, "sources": [t.name for t in sts]})
        if inst.op in ("shr", "asr"):
            want_signed = inst.op == "asr"   # SHR.md: unsigned dst and src0; ASR.md: signed dst and src0
            for what, t in (("dst", dt), ("src0", sts[0])):
                if t.kind == "int" and t.signed != want_signed:
                    raise IllegalInstruction(f"{inst.op} needs {'signed' if want_signed else 'unsigned'} "
                                             f"{what}", rule=f"instructions/{o.doc} notes",
                                             values={what: t.name})
        if inst.sat and o.sat == "float" and not dt.is_float:
            raise IllegalInstruction(f"{inst.op}.sat only when the type is float",
                                     rule=f"instructions/{o.doc}: Saturation", values={"type": dt.name})

    #: families whose ALU computes with BF operands natively: IGC HWCaps.inc ``supportPureBF()`` is
    #: ``platform > Xe3``; every earlier DPAS platform has only BF "mixed mode" (``hasBFMixMode()``)
    _PURE_BF_FAMILIES = frozenset({"Xe3P"})

    def _f_execution(self, sts: list) -> bool:
        """Whether the execution type is F: an F/VF source (2_datatypes.md: VF is compatible with F), or a BF
        source on a platform without pure-BF arithmetic -- IGC's ``G4_INST::getExecType2`` gives BF sources the
        execution type F there, and ``HWConformity::fixBFMixedMode`` turns an all-BF instruction into mixed mode
        by widening its last BF source to F ("Instructions with pure bfloat16 operands are not supported")."""
        if any(t.name in ("f", "vf") for t in sts):
            return True
        return (any(t.name == "bf" for t in sts)
                and self.platform.family not in self._PURE_BF_FAMILIES)

    def _convert(self, v, dt: VisaType, inst: Instruction, exec_f32: bool = False) -> int:
        if exec_f32:  # round to the F execution type, then convert to the 16-bit destination
            f = alu.encode_value(v, _F, sat=inst.sat, model=self.model)
            return alu.encode_value(alu.decode_value(f, _F, self.model), dt, model=self.model)
        return alu.encode_value(v, dt, sat=inst.sat, model=self.model)

    def _mov(self, v, st: VisaType, dt: VisaType, inst: Instruction) -> int:
        if st.kind == "bool":
            raise IllegalInstruction("mov from a predicate is handled with exec size 1", rule="MOV.md notes",
                                     values={"exec_size": inst.exec_size})
        return self._convert(v, dt, inst)


def run(program: Program, device=None, inputs: dict | None = None, **kw) -> Machine:
    """Run ``program`` on GPU platform ``device`` (default pvc) after setting ``inputs`` (name -> array); returns
    the machine to read results from. ``kw``: :class:`Machine`'s keywords (``platform=``, the older name of
    ``device=``, warns)."""
    if "platform" in kw:                 # the older name of device= (systolic.vocabulary)
        device = renamed({"platform": kw.pop("platform")}, {"platform": "device"}, "visa.run",
                         device=device)["device"]
    m = Machine(program, device, **kw)
    for name, arr in (inputs or {}).items():
        m.write(name, arr)
    return m.run()
