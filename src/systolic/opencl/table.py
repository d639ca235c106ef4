"""Every sub-group matrix built-in as a record (DESIGN principle 4: the functions are data).

Sources (REFERENCE.md section 4):

* ``khronos``: cl_intel_subgroup_matrix_multiply_accumulate rev 1.1.0, "New OpenCL C Functions" (sub-group 8 and
  16: i8/u8 mixes K=32, i4/u4 mixes K=64, bf16 and fp16 K=16 with float accumulators; sub-group 16 also bf16 with
  a bf16 (``short``) and fp16 with a ``half`` accumulator);
* ``khronos-tf32``: cl_intel_subgroup_matrix_multiply_accumulate_tf32 rev 1.0.0 (sub-group 16, K=8, ``a`` has
  ceil(M/2) components);
* ``khronos-split``: cl_intel_subgroup_split_matrix_multiply_accumulate (sub-group 8, M = 2, 4, 8, i8/u8 K=32,
  bf16/fp16 K=16; ``a`` has M/2 components per sub-group; lowered to DPASW);
* ``igc``: what IGC's ``IGC/BiFModule/Languages/OpenCL/IBiF_dpas.cl`` defines beyond those texts: the 8x4-bit,
  8x2-bit, 4x8-bit and 2x8-bit integer mixes (K=32), 4x2, 2x4 and 2x2 (K=64) on sub-group 8 and 16 (no 2x8-bit
  on sub-group 16: no 4-bit OpenCL type), their split forms, fp8 ``e5m2``/``e4m3`` mixes K=32 with float or bf16
  accumulators, and ``e2m1`` K=64 (also with a float result from a bf16 accumulator, ``..._k64_f32``, and the
  reverse, ``..._k64_bf16``), all on sub-group 16.

The argument types follow from the rules of those texts, so the table is generated: ``a`` packs
``K * bits(A) / S`` bits per row per work-item (char, short or int; ``u`` types for unsigned integer A, signed
types for float data); ``b`` is ``K * bits(B) / 32`` 32-bit components (``uint`` for unsigned B; ``float8`` for
tf32); the accumulator and result have M components. ``tests/opencl/test_table.py`` checks every record against
the signatures IGC declares (``tests/data/opencl/ibif_dpas_signatures.tsv``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .cltypes import CType

__all__ = ["Builtin", "BUILTINS", "by_name", "NAMES", "PRECISION", "ACC"]

#: the names' element tokens -> DPAS precision (systolic.types canonical names)
PRECISION = {"i8": "s8", "u8": "u8", "i4": "s4", "u4": "u4", "i2": "s2", "u2": "u2", "bf16": "bf16",
             "f16": "fp16", "tf32": "tf32", "e5m2": "bf8", "e4m3": "hf8", "e2m1": "e2m1"}
_BITS = {"s8": 8, "u8": 8, "s4": 4, "u4": 4, "s2": 2, "u2": 2, "bf16": 16, "fp16": 16, "tf32": 32, "bf8": 8,
         "hf8": 8, "e2m1": 4}
#: accumulator / result C base type -> DPAS Dst/Src0 type
ACC = {"int": "int32", "float": "fp32", "short": "bf16", "half": "fp16"}
_SCALAR = {8: "char", 16: "short", 32: "int"}
_IGC_PREC = {"s8": "s8", "u8": "u8", "s4": "s4", "u4": "u4", "s2": "s2", "u2": "u2", "bf16": "bf", "fp16": "hf",
             "tf32": "tf32", "bf8": "bf8", "hf8": "hf8", "e2m1": "e2m1"}
_IGC_ACC = {"int32": "d", "fp32": "f", "bf16": "bf", "fp16": "hf"}


@dataclass(frozen=True)
class Builtin:
    """One overload of one built-in.

    ``a_precision``/``b_precision`` are DPAS's Src2/Src1 precisions, ``acc_precision``/``result_precision`` its
    Src0/Dst types; ``opcode`` is ``dpas`` or ``dpasw`` (split), executed with ``rc = m``.
    """

    name: str
    sub_group_size: int
    m: int
    k: int
    a_type: CType
    b_type: CType
    acc_type: CType
    result_type: CType
    a_precision: str
    b_precision: str
    acc_precision: str
    result_precision: str
    split: bool = False
    source: str = "khronos"
    notes: tuple[str, ...] = field(default=())

    @property
    def n(self) -> int:
        return self.sub_group_size

    @property
    def opcode(self) -> str:
        return "dpasw" if self.split else "dpas"

    @property
    def kind(self) -> str:
        return "int" if self.acc_precision == "int32" else "float"

    @property
    def a_bits(self) -> int:
        return _BITS[self.a_precision]

    @property
    def b_bits(self) -> int:
        return _BITS[self.b_precision]

    @property
    def signature(self) -> str:
        """The OpenCL C prototype."""
        return f"{self.result_type.name} {self.name}({self.a_type.name} a, {self.b_type.name} b, " \
               f"{self.acc_type.name} acc)"

    @property
    def igc_builtin(self) -> str:
        """The IGC internal built-in this overload calls (IBiF_dpas.cl ``__builtin_IB_sub_group*_...``)."""
        w = "w" if self.split else ""
        a, b = _IGC_PREC[self.a_precision], _IGC_PREC[self.b_precision]
        if self.kind == "int":
            head = f"idpas{w}_{a}_{b}"
        elif self.sub_group_size == 8:
            head = f"fdpas{w}_{a}_{b}"
        else:
            head = f"fdpas_{_IGC_ACC[self.result_precision]}_{_IGC_ACC[self.acc_precision]}_{a}_{b}"
        return f"__builtin_IB_sub_group{'16' if self.sub_group_size == 16 else ''}_{head}_8_{self.m}"

    @property
    def dpas(self) -> str:
        """The instruction it lowers to, in vISA notation: ``dpas.s8.u8.8.4`` (Src1 = B, Src2 = A precisions)."""
        return f"{self.opcode}.{_IGC_PREC[self.b_precision]}.{_IGC_PREC[self.a_precision]}.8.{self.m}"

    def as_dict(self) -> dict:
        return {"name": self.name, "signature": self.signature, "sub_group_size": self.sub_group_size,
                "M": self.m, "N": self.n, "K": self.k, "a": self.a_type.name, "b": self.b_type.name,
                "acc": self.acc_type.name, "result": self.result_type.name,
                "a_precision": self.a_precision, "b_precision": self.b_precision,
                "acc_precision": self.acc_precision, "result_precision": self.result_precision,
                "split": self.split, "dpas": self.dpas, "rc": self.m, "sd": 8, "exec_size": self.n,
                "igc_builtin": self.igc_builtin, "source": self.source}


def _vec(base: str, n: int) -> CType:
    return CType(base, n)


def _k(pa: str, pb: str) -> int:
    """K = 8 (systolic depth) x OPS_PER_CHAN (REFERENCE.md section 2)."""
    if pa == "tf32":
        return 8
    if pa in ("bf16", "fp16"):
        return 16
    if pa == "e2m1" or (_BITS[pa] <= 4 and _BITS[pb] <= 4):
        return 64
    return 32


def _make(ta: str, tb: str, s: int, m: int, acc: str, result: str, *, split: bool, source: str,
          suffix: str = "") -> Builtin:
    pa, pb = PRECISION[ta], PRECISION[tb]
    k = _k(pa, pb)
    name = f"intel_sub_group_{ta}_{tb}_{'split_' if split else ''}matrix_mad_k{k}{suffix}"
    is_int = pa in ("s8", "u8", "s4", "u4", "s2", "u2")
    if pa == "tf32":
        a = _vec("float", -(-m // 2))
        b = _vec("float", 8)
    else:
        bits = k * _BITS[pa] // s
        base = _SCALAR[bits]
        if is_int and pa.startswith("u"):
            base = "u" + base
        a = _vec(base, m // 2 if split else m)
        b = _vec("uint" if pb.startswith("u") and is_int else "int", k * _BITS[pb] // 32)
    return Builtin(name, s, m, k, a, b, _vec(acc, m), _vec(result, m), pa, pb, ACC[acc], ACC[result],
                   split=split, source=source)


def _generate() -> tuple[Builtin, ...]:
    out: list[Builtin] = []
    ints8 = [("i8", "i8"), ("i8", "u8"), ("u8", "i8"), ("u8", "u8")]
    ints4 = [(a.replace("8", "4"), b.replace("8", "4")) for a, b in ints8]

    def mixes(a_w: str, b_w: str):
        return [(f"{sa}{a_w}", f"{sb}{b_w}") for sa in ("i", "u") for sb in ("i", "u")]

    igc_k32_sg8 = mixes("8", "4") + mixes("8", "2") + mixes("4", "8") + mixes("2", "8")
    igc_k32_sg16 = mixes("8", "4") + mixes("8", "2") + mixes("4", "8")
    igc_k64 = mixes("4", "2") + mixes("2", "4") + mixes("2", "2")
    ms = (1, 2, 4, 8)
    for s in (8, 16):
        for m in ms:
            for ta, tb in ints8 + ints4:
                out.append(_make(ta, tb, s, m, "int", "int", split=False, source="khronos"))
            for ta, tb in (igc_k32_sg8 if s == 8 else igc_k32_sg16) + igc_k64:
                out.append(_make(ta, tb, s, m, "int", "int", split=False, source="igc"))
            for t in ("bf16", "f16"):
                out.append(_make(t, t, s, m, "float", "float", split=False, source="khronos"))
            if s == 16:
                out.append(_make("bf16", "bf16", s, m, "short", "short", split=False, source="khronos"))
                out.append(_make("f16", "f16", s, m, "half", "half", split=False, source="khronos"))
                out.append(_make("tf32", "tf32", s, m, "float", "float", split=False, source="khronos-tf32"))
                for ta in ("e5m2", "e4m3"):
                    for tb in ("e5m2", "e4m3"):
                        for acc in ("float", "short"):
                            out.append(_make(ta, tb, s, m, acc, acc, split=False, source="igc"))
                out.append(_make("e2m1", "e2m1", s, m, "float", "float", split=False, source="igc"))
                out.append(_make("e2m1", "e2m1", s, m, "short", "short", split=False, source="igc"))
                out.append(_make("e2m1", "e2m1", s, m, "short", "float", split=False, source="igc", suffix="_f32"))
                out.append(_make("e2m1", "e2m1", s, m, "float", "short", split=False, source="igc", suffix="_bf16"))
    # split (DPASW, sub-group 8): offered where each sub-group's half of A is whole 32-byte GRFs, which is
    # what DPASW's EU0/EU1 split of Src2 needs (DPASW.md; IBiF_dpas.cl lists exactly these repeat counts)
    for m in (2, 4, 8):
        for ta, tb in ints8 + igc_k32_sg8 + ints4 + igc_k64:
            pa, pb = PRECISION[ta], PRECISION[tb]
            if (m // 2) * _k(pa, pb) * _BITS[pa] // 8 % 32:
                continue
            src = "khronos-split" if (ta, tb) in ints8 else "igc"
            out.append(_make(ta, tb, 8, m, "int", "int", split=True, source=src))
        for t in ("bf16", "f16"):
            out.append(_make(t, t, 8, m, "float", "float", split=True, source="khronos-split"))
    return tuple(out)


#: every overload of every built-in, all sub-group sizes (filter with systolic.opencl.builtins(platform))
BUILTINS: tuple[Builtin, ...] = _generate()
#: the distinct built-in names, in table order
NAMES: tuple[str, ...] = tuple(dict.fromkeys(b.name for b in BUILTINS))


def by_name(name: str) -> list[Builtin]:
    return [b for b in BUILTINS if b.name == name]
