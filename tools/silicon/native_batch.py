"""Batch AMX kernels for the silicon recorder, written directly in LLVM IR (no emulator involved).

Each kernel loops over ``n`` operations of one family of ``vectors.py`` and runs
exactly the instruction sequence described there, with immediate tile numbers
selected by a ``switch`` where the family varies them. Compiled with
``systolic.amx.jit`` (llvmlite MCJIT) for the host CPU; only runs on AMX.
"""

from __future__ import annotations

import ctypes

import numpy as np

from systolic.amx.jit import JitModule, declarations, ptr_type

from vectors import DOT_MNEMONICS, LOAD_BUF, mnemonic_of


class _Ir:
    def __init__(self):
        self.lines: list[str] = []
        self.n = 0

    def tmp(self, prefix="t") -> str:
        self.n += 1
        return f"%{prefix}{self.n}"

    def emit(self, s: str):
        self.lines.append(s)


def _gep(ir: _Ir, base: str, off: str) -> str:
    p = ptr_type()
    r = ir.tmp("p")
    ir.emit(f"  {r} = getelementptr i8, {p} {base}, i64 {off}")
    return r


def _load_i64(ir: _Ir, arr: str, i: str) -> str:
    p = ptr_type()
    q = ir.tmp("q")
    ir.emit(f"  {q} = getelementptr i64, {p} {arr}, i64 {i}")
    v = ir.tmp("v")
    ir.emit(f"  {v} = load i64, {p} {q}")
    return v


def _switch_tile(ir: _Ir, tvar: str, body, tag: str):
    """switch on i64 tile number ``tvar`` (0..7); body(tile) emits the per-tile instruction."""
    ir.n += 1
    u = ir.n
    cases = " ".join(f"i64 {t}, label %{tag}{u}_{t}" for t in range(8))
    ir.emit(f"  switch i64 {tvar}, label %{tag}{u}_end [ {cases} ]")
    for t in range(8):
        ir.emit(f"{tag}{u}_{t}:")
        body(t)
        ir.emit(f"  br label %{tag}{u}_end")
    ir.emit(f"{tag}{u}_end:")


def _masked_tiles(ir: _Ir, mask: str, body, tag: str):
    """for each tile t in 0..7 with bit t of i64 ``mask`` set: body(t)."""
    for t in range(8):
        ir.n += 1
        u = ir.n
        b = ir.tmp("b")
        ir.emit(f"  {b} = and i64 {mask}, {1 << t}")
        c = ir.tmp("c")
        ir.emit(f"  {c} = icmp ne i64 {b}, 0")
        ir.emit(f"  br i1 {c}, label %{tag}{u}_do, label %{tag}{u}_skip")
        ir.emit(f"{tag}{u}_do:")
        body(t)
        ir.emit(f"  br label %{tag}{u}_skip")
        ir.emit(f"{tag}{u}_skip:")


def _loop(name: str, params: list[str], body) -> str:
    """define void @name(params..., i64 %n) { for %i in 0..n: body(ir, '%i') ; tilerelease }"""
    ir = _Ir()
    p = ptr_type()
    sig = ", ".join(params + ["i64 %n"])
    ir.emit(f"define void @{name}({sig}) {{")
    ir.emit("entry:")
    ir.emit("  %empty = icmp eq i64 %n, 0")
    ir.emit("  br i1 %empty, label %done, label %loop")
    ir.emit("loop:")
    ir.emit("  %i = phi i64 [ 0, %entry ], [ %inext, %latch ]")
    body(ir, "%i")
    ir.emit("  br label %latch")
    ir.emit("latch:")
    ir.emit("  %inext = add i64 %i, 1")
    ir.emit("  %more = icmp ult i64 %inext, %n")
    ir.emit("  br i1 %more, label %loop, label %done")
    ir.emit("done:")
    ir.emit("  call void @llvm.x86.tilerelease()")
    ir.emit("  ret void")
    ir.emit("}")
    del p
    return "\n".join(ir.lines)


def _off(ir: _Ir, i: str, size: int) -> str:
    r = ir.tmp("o")
    ir.emit(f"  {r} = mul i64 {i}, {size}")
    return r


def build_ir() -> str:
    p = ptr_type()
    parts = [declarations(DOT_MNEMONICS)]

    for mn in DOT_MNEMONICS:
        def body(ir, i, mn=mn):
            o64, o1k = _off(ir, i, 64), _off(ir, i, 1024)
            ir.emit(f"  call void @llvm.x86.ldtilecfg({p} {_gep(ir, '%cfg', o64)})")
            ir.emit(f"  call void @llvm.x86.tileloadd64(i8 0, {p} {_gep(ir, '%c', o1k)}, i64 64)")
            ir.emit(f"  call void @llvm.x86.tileloadd64(i8 1, {p} {_gep(ir, '%a', o1k)}, i64 64)")
            ir.emit(f"  call void @llvm.x86.tileloadd64(i8 2, {p} {_gep(ir, '%b', o1k)}, i64 64)")
            ir.emit(f"  call void @llvm.x86.{mn}(i8 0, i8 1, i8 2)")
            ir.emit(f"  call void @llvm.x86.tilestored64(i8 0, {p} {_gep(ir, '%out', o1k)}, i64 64)")
        parts.append(_loop(f"dot_{mn}", [f"{p} %cfg", f"{p} %a", f"{p} %b", f"{p} %c", f"{p} %out"], body))

    for kind, intr in (("tileloadd", "tileloadd64"), ("tileloaddt1", "tileloaddt164")):
        def body(ir, i, intr=intr):
            o64, obuf = _off(ir, i, 64), _off(ir, i, LOAD_BUF)
            ir.emit(f"  call void @llvm.x86.ldtilecfg({p} {_gep(ir, '%cfg', o64)})")
            t = _load_i64(ir, "%tile", i)
            so, ss = _load_i64(ir, "%src_off", i), _load_i64(ir, "%src_stride", i)
            do, ds = _load_i64(ir, "%dst_off", i), _load_i64(ir, "%dst_stride", i)
            s1 = ir.tmp("s")
            ir.emit(f"  {s1} = add i64 {obuf}, {so}")
            sp = _gep(ir, "%src", s1)
            d1 = ir.tmp("s")
            ir.emit(f"  {d1} = add i64 {obuf}, {do}")
            dp = _gep(ir, "%dst", d1)
            _switch_tile(ir, t, lambda tt: ir.emit(f"  call void @llvm.x86.{intr}(i8 {tt}, {p} {sp}, i64 {ss})"),
                         "ld")
            ir.emit(f"  call void @llvm.x86.sttilecfg({p} {_gep(ir, '%cfg_after', o64)})")
            _switch_tile(ir, t, lambda tt: ir.emit(f"  call void @llvm.x86.tilestored64(i8 {tt}, {p} {dp}, i64 {ds})"),
                         "st")
        parts.append(_loop(f"load_{kind}", [f"{p} %cfg", f"{p} %tile", f"{p} %src", f"{p} %src_off",
                                            f"{p} %src_stride", f"{p} %dst", f"{p} %dst_off", f"{p} %dst_stride",
                                            f"{p} %cfg_after"], body))

    def zbody(ir, i):
        o64, o2k = _off(ir, i, 64), _off(ir, i, 2048)
        ir.emit(f"  call void @llvm.x86.ldtilecfg({p} {_gep(ir, '%cfg', o64)})")
        t, u = _load_i64(ir, "%t", i), _load_i64(ir, "%u", i)
        d0 = _gep(ir, "%data", o2k)
        o2 = ir.tmp("s")
        ir.emit(f"  {o2} = add i64 {o2k}, 1024")
        d1 = _gep(ir, "%data", o2)
        q0 = _gep(ir, "%out", o2k)
        q1 = _gep(ir, "%out", o2)
        _switch_tile(ir, t, lambda tt: ir.emit(f"  call void @llvm.x86.tileloadd64(i8 {tt}, {p} {d0}, i64 64)"), "za")
        _switch_tile(ir, u, lambda tt: ir.emit(f"  call void @llvm.x86.tileloadd64(i8 {tt}, {p} {d1}, i64 64)"), "zb")
        _switch_tile(ir, t, lambda tt: ir.emit(f"  call void @llvm.x86.tilezero(i8 {tt})"), "zc")
        _switch_tile(ir, t, lambda tt: ir.emit(f"  call void @llvm.x86.tilestored64(i8 {tt}, {p} {q0}, i64 64)"), "zd")
        _switch_tile(ir, u, lambda tt: ir.emit(f"  call void @llvm.x86.tilestored64(i8 {tt}, {p} {q1}, i64 64)"), "ze")
    parts.append(_loop("zero", [f"{p} %cfg", f"{p} %t", f"{p} %u", f"{p} %data", f"{p} %out"], zbody))

    def cbody(ir, i):
        o64, o8k = _off(ir, i, 64), _off(ir, i, 8192)
        lm, sm = _load_i64(ir, "%load_mask", i), _load_i64(ir, "%store_mask", i)
        ir.emit(f"  call void @llvm.x86.ldtilecfg({p} {_gep(ir, '%cfg1', o64)})")
        ir.emit(f"  call void @llvm.x86.sttilecfg({p} {_gep(ir, '%cfg_a', o64)})")

        def ld(t):
            o = ir.tmp("s")
            ir.emit(f"  {o} = add i64 {o8k}, {1024 * t}")
            ir.emit(f"  call void @llvm.x86.tileloadd64(i8 {t}, {p} {_gep(ir, '%data', o)}, i64 64)")

        def st(t):
            o = ir.tmp("s")
            ir.emit(f"  {o} = add i64 {o8k}, {1024 * t}")
            ir.emit(f"  call void @llvm.x86.tilestored64(i8 {t}, {p} {_gep(ir, '%out', o)}, i64 64)")
        _masked_tiles(ir, lm, ld, "cl")
        ir.emit(f"  call void @llvm.x86.ldtilecfg({p} {_gep(ir, '%cfg2', o64)})")
        ir.emit(f"  call void @llvm.x86.sttilecfg({p} {_gep(ir, '%cfg_b', o64)})")
        _masked_tiles(ir, sm, st, "cs")
    parts.append(_loop("cfg", [f"{p} %cfg1", f"{p} %cfg2", f"{p} %load_mask", f"{p} %store_mask", f"{p} %data",
                               f"{p} %cfg_a", f"{p} %cfg_b", f"{p} %out"], cbody))
    return "\n\n".join(parts) + "\n"


def _ptr(a: np.ndarray):
    assert a.flags.c_contiguous
    return ctypes.c_void_p(a.ctypes.data)


class Kernels:
    """The compiled batch kernels; each ``run_<family>`` fills the output arrays of a stacked batch in place."""

    def __init__(self):
        self.jit = JitModule(build_ir())
        self._f = {}

    def _fn(self, name, nargs):
        if name not in self._f:
            self._f[name] = self.jit.cfunc(name, None, *([ctypes.c_void_p] * nargs + [ctypes.c_int64]))
        return self._f[name]

    def run(self, family: str, batch: dict) -> None:
        n = len(batch[next(iter(batch))])
        if family.startswith("dot:"):
            f = self._fn(f"dot_{mnemonic_of(family)}", 5)
            f(*(_ptr(batch[k]) for k in ("cfg", "a", "b", "c", "out")), n)
        elif family.startswith("load:"):
            f = self._fn(f"load_{mnemonic_of(family)}", 9)
            f(*(_ptr(batch[k]) for k in ("cfg", "tile", "src", "src_off", "src_stride", "dst", "dst_off",
                                          "dst_stride", "cfg_after")), n)
        elif family == "zero":
            f = self._fn("zero", 5)
            f(*(_ptr(batch[k]) for k in ("cfg", "t", "u", "data", "out")), n)
        elif family == "cfg":
            f = self._fn("cfg", 8)
            f(*(_ptr(batch[k]) for k in ("cfg1", "cfg2", "load_mask", "store_mask", "data", "cfg_a", "cfg_b",
                                          "out")), n)
        else:
            raise KeyError(family)
