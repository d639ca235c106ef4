"""The emulator's GEMMs on hosts without AMX (issue 24 item 5): amx.matmul int8 / bf16 / fp16 and integer
xmx.matmul against numpy float32 matmul of the same shape, timed interleaved in one run, as wall and CPU ratios.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_amx_emulator.py [--size 1024]
        [--rounds 7] [--only "amx int8,xmx"] [--out FILE]

``SYSTOLIC_NATIVE=0`` is set for the run, so an AMX host measures the emulator too. Each round times one call of
the case and one of numpy's float32 matmul; the ratio is median(case) / median(numpy), in wall time and in CPU
time (process time: all threads of the process; less sensitive to other jobs on a shared machine than wall
time, though a loaded machine slows both). The load average is printed before and after. Every result is checked
on the way: integers against an int64 oracle, floats against ``method="numpy"`` (the vectorised chains) on a
corner. Targets (issue 24, the 2-vCPU machine): amx.matmul <= 0.5x (with AMX: the native path; without it the
emulator cannot beat the FMA count of sgemm for floats, docs/BENCHMARKS.md), XMX s8 / u8 <= 1.0x.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

os.environ["SYSTOLIC_NATIVE"] = "0"      # the emulator's kernels, also on AMX hosts

import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402

from systolic import amx, counters, jit, xmx  # noqa: E402

TARGETS = {"amx": 0.5, "xmx": 1.0}


def interleaved(fn, ref, rounds):
    """(wall, CPU) medians of fn and of ref, timed alternately after one warm-up call of each."""
    fn(), ref()
    out = {"fn": ([], []), "ref": ([], [])}
    for _ in range(rounds):
        for key, f in (("fn", fn), ("ref", ref)):
            t0, p0 = time.perf_counter(), time.process_time()
            f()
            out[key][0].append(time.perf_counter() - t0)
            out[key][1].append(time.process_time() - p0)
    med = statistics.median
    return med(out["fn"][0]), med(out["ref"][0]), med(out["fn"][1]), med(out["ref"][1])


def cases(n, rng):
    a8, b8 = rng.integers(-128, 128, (n, n), dtype=np.int8), rng.integers(-128, 128, (n, n), dtype=np.int8)
    au, bu = rng.integers(0, 256, (n, n), dtype=np.uint8), rng.integers(0, 256, (n, n), dtype=np.uint8)
    bf = ml_dtypes.bfloat16
    abf, bbf = rng.standard_normal((n, n)).astype(bf), rng.standard_normal((n, n)).astype(bf)
    ahf, bhf = rng.standard_normal((n, n)).astype(np.float16), rng.standard_normal((n, n)).astype(np.float16)
    cf = rng.standard_normal((n, n)).astype(np.float32)
    ex8 = (a8[:48].astype(np.int64) @ b8.astype(np.int64)).astype(np.uint32).view(np.int32)
    exu = (au[:48].astype(np.int64) @ b8.astype(np.int64)).astype(np.uint32).view(np.int32)
    exuu = (au[:48].astype(np.int64) @ bu.astype(np.int64)).astype(np.uint32).view(np.int32)

    def same_as_numpy(a, b, c, device="sapphirerapids"):
        cc = None if c is None else c[:24]
        want = amx.matmul(a[:24], b, cc, method="numpy", device=device)
        return lambda r: np.array_equal(r[:24].view(np.uint32), want.view(np.uint32))

    return [
        ("amx int8 (TDPBSSD)", "amx.matmul tdpbssd", lambda: amx.matmul(a8, b8), lambda r: np.array_equal(r[:48], ex8)),
        ("amx int8 (TDPBUSD)", "amx.matmul tdpbusd", lambda: amx.matmul(au, b8), lambda r: np.array_equal(r[:48], exu)),
        ("amx bf16 (TDPBF16PS), C = 0", "amx.matmul tdpbf16ps", lambda: amx.matmul(abf, bbf),
         same_as_numpy(abf, bbf, None)),
        ("amx bf16 (TDPBF16PS), C random", "amx.matmul tdpbf16ps", lambda: amx.matmul(abf, bbf, cf),
         same_as_numpy(abf, bbf, cf)),
        ("amx fp16 (TDPFP16PS, graniterapids)", "amx.matmul tdpfp16ps",
         lambda: amx.matmul(ahf, bhf, device="graniterapids"), same_as_numpy(ahf, bhf, None, "graniterapids")),
        ("xmx s8", "xmx.matmul s8xs8", lambda: xmx.matmul(a8, b8), lambda r: np.array_equal(r[:48], ex8)),
        ("xmx u8", "xmx.matmul u8xu8", lambda: xmx.matmul(au, bu), lambda r: np.array_equal(r[:48], exuu)),
    ]


def issue_rates(seconds_each: float = 0.3) -> dict:
    """Multiply-adds per nanosecond of one core issuing only 8-lane fp32 FMAs (12 independent chains) and only
    VPMADDWD + VPADDD pairs (12 int32 chains, 16 multiply-adds each): the arithmetic ceilings of sgemm and of the
    int8 kernel on this core, measured (AVX2 vectors; LLVM splits them on narrower hosts)."""
    import ctypes

    from llvmlite import ir

    from systolic.jit.build import F32, I16, I32, I64, PTR, VOID, Loop, declare, define, i64, intrinsic, splat, vec
    m = ir.Module(name="rates")
    F8, I8v, I16v = vec(F32, 8), vec(I32, 8), vec(I16, 16)
    fma = intrinsic(m, "fma", F8, 3)
    pmadd = declare(m, "llvm.x86.avx2.pmadd.wd", I8v, [I16v, I16v])
    for name, kind in (("fmas", "f"), ("pmadds", "i")):
        _, b, (n, out) = define(m, name, VOID, [I64, PTR])
        init = [splat(F8, 1.0 + j) if kind == "f" else splat(I8v, j) for j in range(12)]
        lp = Loop(b, i64(0), n, 1, carry=init)
        new = []
        for v in lp.values:
            if kind == "f":
                new.append(b.call(fma, [v, splat(F8, 1.0000001), splat(F8, 1e-30)]))
            else:
                new.append(b.add(v, b.call(pmadd, [b.bitcast(v, I16v), b.bitcast(splat(I8v, 65537), I16v)])))
        outs = lp.close(new)
        acc = None
        for o in outs:
            o = b.bitcast(o, I8v)
            acc = o if acc is None else b.xor(acc, o)
        b.store(acc, out, align=4)         # the sink is not 32-byte aligned
        b.ret_void()
    mod = jit.compile_module(m)
    sink = np.zeros(8, np.int32)
    rates = {}
    for name, macs in (("fmas", 12 * 8), ("pmadds", 12 * 16)):
        f = mod.cfunc(name, None, ctypes.c_int64, ctypes.c_void_p)
        t0 = time.process_time()
        f(1_000_000, sink.ctypes.data)
        iters = max(1_000_000, int(1_000_000 * seconds_each / max(time.process_time() - t0, 1e-6)))
        best = float("inf")
        for _ in range(5):
            p0 = time.process_time()
            f(iters, sink.ctypes.data)
            best = min(best, time.process_time() - p0)
        rates[name] = iters * macs / best / 1e9
    return rates


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--only", default=None, help="comma list of case-name prefixes")
    ap.add_argument("--out", default=None, help="write a markdown summary here")
    ap.add_argument("--rates", action="store_true", help="also measure one core's FMA and PMADDWD issue rates")
    args = ap.parse_args(argv)
    n = args.size
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((n, n)).astype(np.float32), rng.standard_normal((n, n)).astype(np.float32)
    ref = lambda: x @ y  # noqa: E731
    load0 = os.getloadavg()
    rows = []
    for name, key, fn, check in cases(n, rng):
        if args.only and not any(name.startswith(p.strip()) for p in args.only.split(",")):
            continue
        out = fn()
        path = counters.path_taken(key)
        ok = bool(check(out))
        t, tr, c, cr = interleaved(fn, ref, args.rounds)
        target = TARGETS[name.split()[0]]
        rows.append((name, t, tr, c, cr, target, path, ok))
        print(f"{name:38s} wall {t * 1e3:7.1f} ms / numpy {tr * 1e3:7.1f} ms = {t / tr:5.2f}x   CPU {c * 1e3:7.1f} / "
              f"{cr * 1e3:7.1f} ms = {c / cr:5.2f}x  (target <= {target}x) path {path}  bits ok {ok}", flush=True)
    load1 = os.getloadavg()
    lines = [f"Machine: {platform.processor() or platform.machine()}, {len(os.sched_getaffinity(0))} CPUs, JIT vector "
             f"width {jit.vector_bits()} bits, numpy {np.__version__}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())};"
             f" load average {load0[0]:.2f} before, {load1[0]:.2f} after (1-minute)",
             f"Command: `python benchmarks/bench_amx_emulator.py --size {n} --rounds {args.rounds}"
             + (f' --only "{args.only}"' if args.only else "") + (" --rates" if args.rates else "")
             + "` (SYSTOLIC_NATIVE=0)", "",
             f"| case ({n}^3) | ms | numpy f32 ms | wall ratio | CPU ms | numpy CPU ms | CPU ratio | target | path | "
             "bits checked |", "|---|---:|---:|---:|---:|---:|---:|---|---|---|"]
    for name, t, tr, c, cr, target, path, ok in rows:
        lines.append(f"| {name} | {t * 1e3:.1f} | {tr * 1e3:.1f} | {t / tr:.2f}x | {c * 1e3:.1f} | {cr * 1e3:.1f} | "
                     f"{c / cr:.2f}x | <= {target}x | {path} | {ok} |")
    if args.rates:
        r = issue_rates()
        lines += ["", f"One core, same run (CPU time, best of 5): 8-lane fp32 FMA {r['fmas']:.1f} multiply-adds/ns, "
                  f"VPMADDWD + VPADDD {r['pmadds']:.1f} multiply-adds/ns (ratio {r['pmadds'] / r['fmas']:.2f})"]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
