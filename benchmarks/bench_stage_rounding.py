"""Cost of one bf16 "stage" step, x' = RN_fp32(x + a0*b0 + a1*b1), by formulation (docs/xmx.md, Performance).

    python benchmarks/bench_stage_rounding.py

A register-only micro-benchmark: NACC independent accumulators of 4 binary64 lanes (AVX2), the operands loaded
from L1 once per stage, 8 x 10^6 stages. It times the arithmetic alone -- no memory traffic, no exactness test --
so it bounds what any kernel built on that formulation can reach. Reported: ns per 4 stage-lanes.

  none    the two FMAs only (x + a0*b0 + a1*b1 in binary64, no rounding): the floor
  cvt     FMAs, then fptrunc/fpext (vcvtpd2ps + vcvtps2pd): the shipped kernel's rounding
  int     FMAs, then RNE to 24 bits on the bit pattern (shift, and, add, add, and)
  velt    FMAs, then Veltkamp's splitting: c = y*(2**29+1); x' = c - (c - y)
  veltr   products summed first (mul, fma), then y = x + s and Veltkamp: shorter dependency chain through x
"""

from __future__ import annotations

import ctypes
import time

import numpy as np

from systolic import jit

D = "<4 x double>"
I64 = "<4 x i64>"


def _splat(ty: str, v) -> str:
    return "<" + ", ".join(f"{ty} {v}" for _ in range(4)) + ">"


def _ir(nacc: int, mode: str, nst: int = 4) -> str:
    sig = _splat("double", "0x41C0000000800000")  # 2**29 + 1
    L = [f"define void @k({D}* %X, {D}* %AB, i64 %n) {{", "entry:"]
    for j in range(nacc):
        L += [f"  %p{j} = getelementptr {D}, {D}* %X, i64 {j}", f"  %x0_{j} = load {D}, {D}* %p{j}, align 8"]
    L += ["  br label %loop", "loop:", "  %i = phi i64 [0, %entry], [%inext, %loop]"]
    L += [f"  %x{j} = phi {D} [%x0_{j}, %entry], [%y{nst - 1}_{j}, %loop]" for j in range(nacc)]
    cur = {j: f"%x{j}" for j in range(nacc)}
    for s in range(nst):
        for q in range(4):  # volatile: one fresh load per operand per stage, shared by the accumulators
            L += [f"  %abp{s}_{q} = getelementptr {D}, {D}* %AB, i64 {s * 4 + q}",
                  f"  %ab{s}_{q} = load volatile {D}, {D}* %abp{s}_{q}, align 8"]
        a0, b0, a1, b1 = (f"%ab{s}_{q}" for q in range(4))
        for j in range(nacc):
            u, x = f"{s}_{j}", cur[j]
            if mode == "veltr":
                L += [f"  %m{u} = fmul {D} {a0}, {b0}",
                      f"  %h{u} = call {D} @llvm.fma.v4f64({D} {a1}, {D} {b1}, {D} %m{u})",
                      f"  %g{u} = fadd {D} {x}, %h{u}"]
            else:
                L += [f"  %h{u} = call {D} @llvm.fma.v4f64({D} {a0}, {D} {b0}, {D} {x})",
                      f"  %g{u} = call {D} @llvm.fma.v4f64({D} {a1}, {D} {b1}, {D} %h{u})"]
            if mode == "none":
                L += [f"  %y{u} = fadd {D} %g{u}, zeroinitializer"]  # keeps a dependent op, as the others have
            elif mode == "cvt":
                L += [f"  %r{u} = fptrunc {D} %g{u} to <4 x float>", f"  %y{u} = fpext <4 x float> %r{u} to {D}"]
            elif mode in ("velt", "veltr"):
                L += [f"  %c{u} = fmul {D} %g{u}, {sig}", f"  %t{u} = fsub {D} %c{u}, %g{u}",
                      f"  %y{u} = fsub {D} %c{u}, %t{u}"]
            elif mode == "int":
                L += [f"  %gi{u} = bitcast {D} %g{u} to {I64}",
                      f"  %sh{u} = lshr {I64} %gi{u}, {_splat('i64', 29)}",
                      f"  %lb{u} = and {I64} %sh{u}, {_splat('i64', 1)}",
                      f"  %ad{u} = add {I64} %gi{u}, {_splat('i64', 0x0FFFFFFF)}",
                      f"  %ae{u} = add {I64} %ad{u}, %lb{u}",
                      f"  %mk{u} = and {I64} %ae{u}, {_splat('i64', -(1 << 29))}",
                      f"  %y{u} = bitcast {I64} %mk{u} to {D}"]
            cur[j] = f"%y{u}"
    L += ["  %inext = add i64 %i, 1", "  %c = icmp slt i64 %inext, %n", "  br i1 %c, label %loop, label %exit", "exit:"]
    L += [f"  store {D} {cur[j]}, {D}* %p{j}, align 8" for j in range(nacc)]
    L += ["  ret void", "}", f"declare {D} @llvm.fma.v4f64({D}, {D}, {D})"]
    return "\n".join(L) + "\n"


def main() -> None:
    X = np.ones((64, 4))
    AB = np.full((64, 4), 1e-3)
    n = 2_000_000
    for mode in ("none", "cvt", "int", "velt", "veltr"):
        for nacc in (8, 12):
            mod = jit.compile_module(_ir(nacc, mode))  # a historical micro-benchmark: its IR stays text
            f = mod.cfunc("k", None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
            f(X.ctypes.data, AB.ctypes.data, 1000)
            ts = []
            for _ in range(3):
                t0 = time.perf_counter()
                f(X.ctypes.data, AB.ctypes.data, n)
                ts.append(time.perf_counter() - t0)
            print(f"{mode:6s} {nacc:2d} accumulators  {min(ts) / (n * 4 * nacc) * 1e9:.3f} ns per 4 stage-lanes")


if __name__ == "__main__":
    main()
