"""The spec path: each AMX instruction as one plain function that reads like the SDM pseudo-code.

Tiles are the machine's (16, 64) uint8 row images. The functions here assume the
instruction's #GP/#UD/memory checks have passed (the machine does them) and
transcribe the Operation section of each SDM / ISE page step by step, element
by element, with exact arithmetic (:mod:`systolic.amx.fp_x86`). They are slow
on purpose: the fast kernels (:mod:`systolic.amx.kernels`) are proven equal to
them by property tests.

Helpers named as in the SDM (vol. 2, section 3.1.1 / the AMX pages):
``write_row_and_zero(t, row, data, nbytes)`` writes ``nbytes`` bytes and zeroes
the rest of the row; ``zero_upper_rows(t, first)`` zeroes rows ``first`` ... 15;
``zero_tilecfg_start()`` (start_row := 0) is done by the machine.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from . import fp_x86 as fp
from ..numerics.formats import BF8, FP32, HF8
from ..numerics.rounding import decode_fraction, round_fraction
from ..observe import Observer, from_trace

#: the TMUL bodies (tdpbssd ... tdphf8ps) are found through their records (systolic.amx.isa: ``spec``)
__all__ = ["tileload", "tilestore", "tilezero"]

MAX_ROWS = 16
BYTES_PER_ROW = 64


# ---------------------------------------------------------------- tile element access

def _dword(t: np.ndarray, row: int, i: int) -> int:
    return int.from_bytes(t[row, 4 * i:4 * i + 4].tobytes(), "little")


def _word(t: np.ndarray, row: int, i: int) -> int:
    return int.from_bytes(t[row, 2 * i:2 * i + 2].tobytes(), "little")


def _byte(t: np.ndarray, row: int, i: int) -> int:
    return int(t[row, i])


def _row_from_dwords(values: list[int]) -> bytes:
    return b"".join((v & 0xFFFFFFFF).to_bytes(4, "little") for v in values)


def write_row_and_zero(t: np.ndarray, row: int, data: bytes, nbytes: int) -> None:
    """SDM: write ``nbytes`` bytes of ``data`` into ``t.row[row]`` and zero the rest of the row."""
    t[row, :] = 0
    t[row, :nbytes] = np.frombuffer(bytes(data[:nbytes]), dtype=np.uint8)


def zero_upper_rows(t: np.ndarray, first: int) -> None:
    """SDM: zero rows ``first`` ... max_rows-1 of ``t``."""
    t[first:MAX_ROWS, :] = 0


# ---------------------------------------------------------------- data movement

def tileload(t: np.ndarray, memory: np.ndarray, base: int, stride: int, rows: int, colsb: int, start: int) -> None:
    """TILELOADD / TILELOADDT1 (SDM vol. 2), from ``start`` (= tilecfg.start_row) on, all rows in bounds.

    ::

        start := tilecfg.start_row
        zero_upper_rows(tdest, start)
        while start < tdest.rows:
            memptr := membegin + start * stride
            write_row_and_zero(tdest, start, read_memory(memptr, tdest.colsb), tdest.colsb)
            start := start + 1
        zero_tilecfg_start()
    """
    zero_upper_rows(t, start)
    while start < rows:
        memptr = base + start * stride
        write_row_and_zero(t, start, memory[memptr:memptr + colsb].tobytes(), colsb)
        start += 1


def tilestore(t: np.ndarray, memory: np.ndarray, base: int, stride: int, rows: int, colsb: int, start: int) -> None:
    """TILESTORED (SDM vol. 2): rows ``start`` ... rows-1, ``colsb`` bytes each, to base + row * stride."""
    while start < rows:
        memptr = base + start * stride
        memory[memptr:memptr + colsb] = t[start, :colsb]
        start += 1


def tilezero(t: np.ndarray) -> None:
    """TILEZERO (SDM vol. 2): every byte of all max_rows rows of bytes_per_row bytes := 0."""
    for i in range(MAX_ROWS):
        for j in range(BYTES_PER_ROW):
            t[i, j] = 0


# ---------------------------------------------------------------- integer dot products

def _sx8(b: int) -> int:
    return b - 256 if b & 0x80 else b


def _zx8(b: int) -> int:
    return b


def _dpbd(x: int, y: int, ext1, ext2) -> int:
    """DPBD(x, y): the four byte products of two dwords, added (SDM TDPB*D helper)."""
    p = 0
    for i in range(4):
        p += ext1((x >> (8 * i)) & 0xFF) * ext2((y >> (8 * i)) & 0xFF)
    return p


def _tdpb_d(ext1, ext2):
    def op(c: np.ndarray, a: np.ndarray, b: np.ndarray, m_rows: int, n_colsb: int, k_colsb: int,
           trace: dict | None = None, observer: Observer | None = None) -> None:
        # observer (systolic.observe; the explorer's explain): each step's dword sum of a watched element
        obs = from_trace(trace, observer)
        elements_src1 = k_colsb // 4
        elements_dest = n_colsb // 4
        for m in range(m_rows):
            tmp = [_dword(c, m, n) for n in range(elements_dest)]
            for k in range(elements_src1):
                for n in range(elements_dest):
                    # int32 accumulation, wrapping modulo 2^32 (no saturation)
                    dot = _dpbd(_dword(a, m, k), _dword(b, k, n), ext1, ext2)
                    if obs and obs.watches(m, n):
                        obs.step(m, n, c=tmp[n], k=k, dot=dot, acc=(tmp[n] + dot) & 0xFFFFFFFF)
                    tmp[n] = (tmp[n] + dot) & 0xFFFFFFFF
            write_row_and_zero(c, m, _row_from_dwords(tmp), n_colsb)
        zero_upper_rows(c, m_rows)
    return op


tdpbssd = _tdpb_d(_sx8, _sx8)
tdpbssd.__doc__ = "TDPBSSD (SDM vol. 2): signed bytes of src1 times signed bytes of src2, 4 per dword, int32 wrap."
tdpbsud = _tdpb_d(_sx8, _zx8)
tdpbsud.__doc__ = "TDPBSUD (SDM vol. 2): signed src1 bytes times unsigned src2 bytes."
tdpbusd = _tdpb_d(_zx8, _sx8)
tdpbusd.__doc__ = "TDPBUSD (SDM vol. 2): unsigned src1 bytes times signed src2 bytes."
tdpbuud = _tdpb_d(_zx8, _zx8)
tdpbuud.__doc__ = "TDPBUUD (SDM vol. 2): unsigned src1 bytes times unsigned src2 bytes."


# ---------------------------------------------------------------- float dot products (two fp32 chains)

def _two_chain(step):
    """The shared skeleton of TDPBF16PS / TDPFP16PS / TCMM*FP16PS / TDP*8PS.

    SDM vol. 2 TDPBF16PS, Operation::

        for m in 0 ... tsrcdest.rows-1:
            temp1[0 ... elements_temp-1] := 0
            for k in 0 ... elements_src1-1:
                for n in 0 ... elements_dest-1:
                    // FP32 FMA with DAZ=FTZ=1, RNE rounding
                    temp1.fp32[2*n+0] += make_fp32(tsrc1.row[m].bf16[2*k+0]) * make_fp32(tsrc2.row[k].bf16[2*n+0])
                    temp1.fp32[2*n+1] += make_fp32(tsrc1.row[m].bf16[2*k+1]) * make_fp32(tsrc2.row[k].bf16[2*n+1])
            for n in 0 ... elements_dest-1:
                // DAZ=FTZ=1, RNE rounding
                tmpf32 := temp1.fp32[2*n] + temp1.fp32[2*n+1]
                tsrcdest.row[m].fp32[n] := tsrcdest.row[m].fp32[n] + tmpf32
            write_row_and_zero(tsrcdest, m, tmp, tsrcdest.colsb)
        zero_upper_rows(tsrcdest, tsrcdest.rows)
        zero_tilecfg_start()

    ``step(temp1, n, a_dword, b_dword)`` performs the two chain updates of one
    (k, n) for the instruction at hand.
    """
    def op(c: np.ndarray, a: np.ndarray, b: np.ndarray, m_rows: int, n_colsb: int, k_colsb: int,
           trace: dict | None = None, observer: Observer | None = None) -> None:
        # observer (systolic.observe): both chains of a watched element after every k, then the chains' sum and
        # the final add (fp32 bit patterns)
        obs = from_trace(trace, observer)
        elements_src1 = k_colsb // 4
        elements_dest = n_colsb // 4
        for m in range(m_rows):
            temp1 = [0] * (2 * elements_dest)
            for k in range(elements_src1):
                for n in range(elements_dest):
                    step(temp1, n, _dword(a, m, k), _dword(b, k, n))
                    if obs and obs.watches(m, n):
                        obs.step(m, n, k=k, even=temp1[2 * n], odd=temp1[2 * n + 1])
            row = [_dword(c, m, n) for n in range(elements_dest)]
            for n in range(elements_dest):
                tmpf32 = fp.add(temp1[2 * n], temp1[2 * n + 1])
                if obs and obs.watches(m, n):
                    obs.result(m, n, c=row[n], chains_sum=tmpf32, result=fp.add(row[n], tmpf32))
                row[n] = fp.add(row[n], tmpf32)
            write_row_and_zero(c, m, _row_from_dwords(row), n_colsb)
        zero_upper_rows(c, m_rows)
    return op


def _lo16(d: int) -> int:
    return d & 0xFFFF


def _hi16(d: int) -> int:
    return d >> 16


def _step_bf16(temp1, n, x, y):
    # make_fp32: the bf16 in the upper half of a dword (exact)
    temp1[2 * n + 0] = fp.fma(fp.bf16_to_fp32(_lo16(x)), fp.bf16_to_fp32(_lo16(y)), temp1[2 * n + 0])
    temp1[2 * n + 1] = fp.fma(fp.bf16_to_fp32(_hi16(x)), fp.bf16_to_fp32(_hi16(y)), temp1[2 * n + 1])


def _step_fp16(temp1, n, x, y):
    # "Handle FP16 denorms. Not forcing input FP16 denorms to 0": cvt_fp16_to_fp32 is exact, and an fp16
    # denormal is a normal fp32 number, so the fp32 FMA's DAZ does not touch it.
    temp1[2 * n + 0] = fp.fma(fp.fp16_to_fp32(_lo16(x)), fp.fp16_to_fp32(_lo16(y)), temp1[2 * n + 0])
    temp1[2 * n + 1] = fp.fma(fp.fp16_to_fp32(_hi16(x)), fp.fp16_to_fp32(_hi16(y)), temp1[2 * n + 1])


def _step_cmmim(temp1, n, x, y):
    # AMX-COMPLEX TCMMIMFP16PS (ISE ch. "AMX-COMPLEX"): dword = (real: low fp16, imaginary: high fp16);
    # imaginary part of a*b: even lane += a.im * b.re, odd lane += a.re * b.im
    a_re, a_im = fp.fp16_to_fp32(_lo16(x)), fp.fp16_to_fp32(_hi16(x))
    b_re, b_im = fp.fp16_to_fp32(_lo16(y)), fp.fp16_to_fp32(_hi16(y))
    temp1[2 * n + 0] = fp.fma(a_im, b_re, temp1[2 * n + 0])
    temp1[2 * n + 1] = fp.fma(a_re, b_im, temp1[2 * n + 1])


def _step_cmmrl(temp1, n, x, y):
    # AMX-COMPLEX TCMMRLFP16PS: real part of a*b: even lane += a.re * b.re, odd lane += -(a.im * b.im)
    a_re, a_im = fp.fp16_to_fp32(_lo16(x)), fp.fp16_to_fp32(_hi16(x))
    b_re, b_im = fp.fp16_to_fp32(_lo16(y)), fp.fp16_to_fp32(_hi16(y))
    temp1[2 * n + 0] = fp.fma(a_re, b_re, temp1[2 * n + 0])
    temp1[2 * n + 1] = fp.fma(a_im, b_im, temp1[2 * n + 1], negate=True)


tdpbf16ps = _two_chain(_step_bf16)
tdpbf16ps.__doc__ = "TDPBF16PS (SDM vol. 2): bf16 pairs, two fp32 FMA chains per output (DAZ, FTZ, RNE)."
tdpfp16ps = _two_chain(_step_fp16)
tdpfp16ps.__doc__ = "TDPFP16PS (SDM vol. 2, AMX-FP16): fp16 pairs, fp16 denormals kept, fp32 DAZ/FTZ/RNE chains."
tcmmimfp16ps = _two_chain(_step_cmmim)
tcmmimfp16ps.__doc__ = "TCMMIMFP16PS (ISE, AMX-COMPLEX): imaginary part of complex fp16 products."
tcmmrlfp16ps = _two_chain(_step_cmmrl)
tcmmrlfp16ps.__doc__ = "TCMMRLFP16PS (ISE, AMX-COMPLEX): real part of complex fp16 products."
# ---------------------------------------------------------------- AMX-FP8 (unverified)

def _fp8_class(byte: int, fmt) -> tuple[str, bool, Fraction | None]:
    """(class, negative, exact value) of an fp8 byte; class is "finite", "inf" or "nan"."""
    v = decode_fraction(byte, fmt)
    neg = bool(byte & 0x80)
    if isinstance(v, float):
        return ("nan" if v != v else "inf"), neg, None
    return "finite", neg, v


def _fp8_dot(fmt1, fmt2):
    """AMX-FP8 TDP[B|H][B|H]F8PS as modelled (*unverified*: no AMX-FP8 silicon was available).

    The ISE text was not at hand; this follows the best public descriptions, which agree: clang's
    ``amxfp8intrin.h`` Operation (all four products of a dword pair summed exactly into one
    accumulator per output over the whole K, then ``dst + FP32(temp)``) and Bochs ``amx.cc`` (stated
    to match Intel SDE): the products are accumulated *exactly* (FP8 inputs are not DAZ-ed), rounded to
    fp32 once (RNE, FTZ), then added to dst (fp32 add, DAZ/FTZ/RNE). Any NaN among the inputs read for
    an output (src1 row, src2 column, the dst element) gives the default NaN, as does inf * 0; infinities
    add up with their signs, and +inf + -inf not resolved within the same dword gives the default NaN.
    """
    def op(c: np.ndarray, a: np.ndarray, b: np.ndarray, m_rows: int, n_colsb: int, k_colsb: int,
           trace: dict | None = None, observer: Observer | None = None) -> None:
        # observer (systolic.observe): C, the exact sum, its fp32 rounding and the result of a watched element
        obs = from_trace(trace, observer)
        elements_src1 = k_colsb // 4
        elements_dest = n_colsb // 4
        for m in range(m_rows):
            row = [_dword(c, m, n) for n in range(elements_dest)]
            for n in range(elements_dest):
                srcdest = row[n]
                nan = fp.is_nan(srcdest)
                inf_state = None            # None, "+", "-" or "cancelled"
                temp = Fraction(0)
                for k in range(elements_src1):
                    for e in range(4):
                        c1, n1, v1 = _fp8_class(_byte(a, m, 4 * k + e), fmt1)
                        c2, n2, v2 = _fp8_class(_byte(b, k, 4 * n + e), fmt2)
                        if c1 == "finite" and c2 == "finite":
                            temp += v1 * v2                          # exact
                        elif c1 == "nan" or c2 == "nan":
                            nan = True
                        elif (c1 == "finite" and v1 == 0) or (c2 == "finite" and v2 == 0):
                            nan = True                               # inf * 0
                        else:
                            sign = "-" if n1 != n2 else "+"
                            if inf_state in (None, "cancelled"):
                                inf_state = sign
                            elif inf_state != sign:
                                inf_state = "cancelled"
                    if inf_state == "cancelled":                     # not resolved within this dword
                        nan = True
                if nan:
                    row[n] = fp.DEFAULT_NAN
                    if obs and obs.watches(m, n):
                        obs.result(m, n, c=srcdest, special="NaN (a NaN input, inf * 0 or +inf + -inf)",
                                   result=row[n])
                    continue
                if inf_state is not None:
                    tmpf32 = (fp.SIGN if inf_state == "-" else 0) | fp.EXP
                else:
                    tmpf32 = round_fraction(temp, FP32, "rne", ftz=True)   # FP32(temp), one rounding
                row[n] = fp.add(srcdest, tmpf32)
                if obs and obs.watches(m, n):
                    obs.result(m, n, c=srcdest, temp=temp, tmpf32=tmpf32, result=row[n],
                               **({} if inf_state is None else {"special": f"{inf_state}inf among the products"}))
            write_row_and_zero(c, m, _row_from_dwords(row), n_colsb)
        zero_upper_rows(c, m_rows)
    return op


tdpbf8ps = _fp8_dot(BF8, BF8)
tdpbf8ps.__doc__ = "TDPBF8PS (ISE, AMX-FP8; unverified): bf8 x bf8, exact sum, one rounding, then dst +."
tdpbhf8ps = _fp8_dot(BF8, HF8)
tdpbhf8ps.__doc__ = "TDPBHF8PS (ISE, AMX-FP8; unverified): bf8 (src1) x hf8 (src2)."
tdphbf8ps = _fp8_dot(HF8, BF8)
tdphbf8ps.__doc__ = "TDPHBF8PS (ISE, AMX-FP8; unverified): hf8 (src1) x bf8 (src2)."
tdphf8ps = _fp8_dot(HF8, HF8)
tdphf8ps.__doc__ = "TDPHF8PS (ISE, AMX-FP8; unverified): hf8 x hf8."
