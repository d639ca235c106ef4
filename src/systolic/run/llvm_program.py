"""LLVM IR programs for ``systolic run``: the tile compiler and the emulated AMX of ``systolic amx run``, plus the
file's header (``;`` comments in ``.ll``; ``//`` comments in a ``.c``/``.cpp`` source, which clang compiles at
-O2 first through :func:`systolic.compiler.compile_c`) (which function with which arguments, the globals' initial bytes, the oracle).

The ``gemm-int8`` oracle is exact integer arithmetic (numpy int64, wrapped mod 2^32 as TDPB*D wraps), computed
from the globals' bytes before the run, independently of the compiler and of the AMX emulator.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import numpy as np

from ..cli.inputs import load_global_npy, load_npy, parse_call_arg, read_text
from ..errors import InvalidValue, ProgramError
from .compare import compare
from .header import TYPES, check_expects, parse, parse_values, typed_values

__all__ = ["run", "DEFAULT_DEVICE", "gemm_int8"]

#: the CPU model when neither the header nor --device names one (as ``systolic amx run``)
DEFAULT_DEVICE = "sapphirerapids"


def _global_and_type(token: str, line: int, need_type: bool = True) -> tuple[str, str | None]:
    m = re.fullmatch(r"@?([A-Za-z_.$][\w.$]*)(?::(\w+))?", token.strip())
    if not m or (need_type and m[2] is None) or (m[2] is not None and m[2] not in TYPES):
        raise ProgramError("a global is @NAME:TYPE", rule="systolic-run header: TYPE is one of " + ", ".join(TYPES),
                           values={"line": line, "token": token})
    return m[1], m[2]


def _header_npy(path: str, what: str, rule: str, line: int) -> np.ndarray:
    """A .npy file named by a header line (checked by :func:`systolic.cli.inputs.load_npy`), its errors naming
    the line."""
    try:
        return load_npy(path, what, rule=rule)
    except InvalidValue as e:
        raise ProgramError(e.message, rule=e.rule, values={"line": line, **e.values}) from None


def _fill(memory: dict, name_tok: str, spec: str, line: int, base: Path) -> None:
    name, typ = _global_and_type(name_tok, line, need_type=False)
    if name not in memory:
        raise ProgramError(f"fill names @{name}, which is not a global of the IR",
                           rule="systolic-run fill: a global of the module", values={"line": line,
                                                                                      "globals": sorted(memory)})
    dst = memory[name]
    words = spec.split()
    if words[0] == "random":
        if len(words) != 2 or not words[1].isdigit():
            raise ProgramError("fill ... = random SEED (an integer)", rule="systolic-run fill",
                               values={"line": line, "spec": spec})
        data = np.random.default_rng(int(words[1])).integers(0, 256, dst.size, dtype=np.uint8)
    elif spec.endswith(".npy"):
        path = spec if Path(spec).is_absolute() else str(base / spec)
        data = _header_npy(path, f"fill @{name}", "systolic-run fill @NAME = file.npy (no pickles)", line)
        data = np.ascontiguousarray(data).reshape(-1).view(np.uint8)      # the global holds the array's bytes
    else:
        if typ is None:
            raise ProgramError("a literal fill names the element type: fill @NAME:TYPE = v0 v1 ...",
                               rule="systolic-run fill", values={"line": line})
        data = typed_values(parse_values(spec, line, "fill"), TYPES[typ], line, spec, "fill").view(np.uint8).reshape(-1)
    if data.size > dst.size:
        raise ProgramError(f"fill gives {data.size} bytes for @{name}, which has {dst.size}",
                           rule="systolic-run fill: the data fits the global", values={"line": line})
    dst[:data.size] = data


def gemm_int8(memory: dict, c_name: str, spec: str, line: int) -> tuple[np.ndarray, np.ndarray]:
    """(C's oracle values, a function reading C after the run): ``C + A @ B`` for ``gemm-int8 A=@A:s8 B=@B:u8 M=
    N= K= [lda=] [ldb=] [ldc=]`` (A row-major, lda bytes per row, default K; B VNNI-packed as AMX reads it:
    K/4 rows of ldb bytes, default 4N, byte 4n + j of row r holding B[4r + j][n]; C int32 row-major, ldc bytes
    per row, default 4N). Rows never overlap: lda >= K, ldb >= 4N, ldc >= 4N, else a ProgramError."""
    words = spec.split()
    if not words or words[0] != "gemm-int8":
        raise ProgramError("an IR oracle is 'gemm-int8 A=@A:s8 B=@B:s8 M=.. N=.. K=..'",
                           rule="systolic-run oracle kinds: gemm-int8", values={"line": line, "spec": spec})
    kv = {}
    for w in words[1:]:
        k, eq, v = w.partition("=")
        if not eq:
            raise ProgramError("gemm-int8 takes KEY=VALUE words", rule="systolic-run oracle", values={"line": line,
                                                                                                   "word": w})
        kv[k] = v
    need = {"A", "B", "M", "N", "K"}
    if not need <= set(kv) or not set(kv) <= need | {"lda", "ldb", "ldc"}:
        raise ProgramError("gemm-int8 takes A=, B=, M=, N=, K= (and optionally lda=, ldb=, ldc=)",
                           rule="systolic-run oracle gemm-int8", values={"line": line, "keys": sorted(kv)})
    try:
        M, N, K = (int(kv[k], 0) for k in "MNK")
        lda, ldb, ldc = (int(kv.get(k, str(d)), 0) for k, d in (("lda", K), ("ldb", 4 * N), ("ldc", 4 * N)))
    except ValueError:
        raise ProgramError("M, N, K, lda, ldb, ldc are integers", rule="systolic-run oracle gemm-int8",
                           values={"line": line}) from None
    if K % 4 or min(M, N, K) < 0:
        raise ProgramError("K is a non-negative multiple of 4 (VNNI dwords)", rule="systolic-run oracle gemm-int8",
                           values={"line": line, "K": K})
    (an, at), (bn, bt) = _global_and_type(kv["A"], line), _global_and_type(kv["B"], line)
    cn, ct = _global_and_type(c_name, line, need_type=False)
    for n, t in ((an, at), (bn, bt)):
        if t not in ("s8", "i8", "u8"):
            raise ProgramError("gemm-int8 operands are s8 or u8", rule="systolic-run oracle gemm-int8",
                               values={"line": line, "global": n, "type": t})
        if n not in memory:
            raise ProgramError(f"@{n} is not a global of the IR", rule="systolic-run oracle gemm-int8",
                               values={"line": line})
    if ct not in (None, "i32") or cn not in memory:
        raise ProgramError("the oracle's result is an i32 global", rule="systolic-run oracle gemm-int8",
                           values={"line": line, "global": cn})

    for key, ld, row_bytes, what in (("lda", lda, K, "a row of A (K"), ("ldb", ldb, 4 * N, "a VNNI row of B (4N"),
                                     ("ldc", ldc, 4 * N, "a row of the int32 C (4N")):
        # a stride below the row's bytes (negative or zero included) would make rows overlap, or read before the
        # global: the oracle's strided view must stay inside its buffer, row after row
        if ld < row_bytes:
            raise ProgramError(f"{key}={ld} is less than {what} = {row_bytes} bytes): rows would overlap "
                               "or lie before the global",
                               rule="systolic-run oracle gemm-int8: lda >= K, ldb >= 4N, ldc >= 4N",
                               values={"line": line, key: ld, "K": K, "N": N})

    def take(name, typ, rows, cols, ld):
        buf = np.ascontiguousarray(memory[name]).view(np.uint8).reshape(-1)   # byte strides below mean bytes
        need_bytes = (rows - 1) * ld + cols if rows else 0
        if need_bytes > buf.size:
            raise ProgramError(f"@{name} holds {buf.size} bytes; the oracle reads {need_bytes}",
                               rule="systolic-run oracle gemm-int8: the matrices lie inside their globals",
                               values={"line": line})
        # checked above: 0 <= cols <= ld and the last row ends inside buf, so every strided byte is buf's own
        # (one row: its stride is never used, and a huge one must not reach as_strided)
        return np.lib.stride_tricks.as_strided(buf, (rows, cols), (ld if rows > 1 else 1, 1)).copy()

    a = take(an, at, M, K, lda).view(TYPES[at]).astype(np.int64)                     # (M, K)
    bv = take(bn, bt, K // 4, 4 * N, ldb).view(TYPES[bt]).astype(np.int64)             # (K/4, 4N)
    b = bv.reshape(K // 4, N, 4).transpose(0, 2, 1).reshape(K, N)                      # B[4r + j][n]
    c0 = take(cn, "i32", M, 4 * N, ldc).view("<i4").astype(np.int64)
    want = ((c0 + a @ b + 2 ** 31) % 2 ** 32 - 2 ** 31).astype(np.int32)

    def after():
        return take(cn, "i32", M, 4 * N, ldc).view("<i4")
    return want, after


def run(path: Path, device: str | None = None, *, function: str | None = None, args: tuple[str, ...] = (),
        mems: tuple[str, ...] = ()) -> dict:
    """Compile with the tile compiler, run ``function`` on the emulated AMX of CPU ``device``, check the header's
    oracles. ``function``/``args``/``mems`` (as ``systolic amx run``'s --function/--arg/--mem) override the header."""
    from .. import counters
    from ..compiler import compile_c, compile_ir
    from ..compiler.c_frontend import C_SUFFIXES
    from ..compiler.to_machine import initial_bytes
    t0 = time.perf_counter()
    language = C_SUFFIXES.get(path.suffix)
    text = read_text(path, "LLVM IR file" if language is None else f"{language.upper()} source file")
    h = parse(text, ";" if language is None else "//")
    if h.inputs:
        raise ProgramError("'in' is a vISA directive; IR globals are set with 'fill'",
                           rule="systolic-run header of .ll files", values={"file": str(path)})
    default = h.device or DEFAULT_DEVICE
    dev = h.device_for(device, DEFAULT_DEVICE)
    from .devices import amx_cpu
    cpu = amx_cpu(dev)                  # any alias of an AMX CPU (spr, intel_cpu_spr); an XMX name is refused
    fn = function or h.function
    if fn is None:
        raise ProgramError("no function to run: the header has no 'function' directive and --function is not given",
                           rule="systolic-run header: function NAME (or systolic run --function)",
                           values={"file": str(path)})
    if language is None:
        if h.cflags is not None:
            raise ProgramError("'cflags' applies to C and C++ sources (.c, .cpp, .cc, .cxx), not to LLVM IR",
                               rule="systolic-run header: cflags", values={"file": str(path), "cflags": h.cflags})
        mod = compile_ir(text, source=str(path))
    else:
        # the header's clang flags (default -O2); -O*/-g among them choose the level and debug info
        mod = compile_c(text, language=language, filename=path.name, source_dir=str(path.parent),
                        flags=h.cflags or "")
    memory = {name: initial_bytes(g)
              for name, g in mod.machine.globals.items()}
    for name_tok, spec, line in h.fills:
        _fill(memory, name_tok, spec, line, path.parent)
    for m in mems:
        name, data = load_global_npy(m)
        if name not in memory or data.size > memory[name].size:
            raise ProgramError(f"--mem {name}: not a global, or more bytes than it holds",
                               rule="systolic run --mem NAME=file.npy", values={"mem": m})
        memory[name][:data.size] = data
    values = [parse_call_arg(a) for a in (args or h.args or ())]
    oracles = [(name_tok, *gemm_int8(memory, name_tok, spec, line)) for name_tok, spec, line in h.oracles]
    with counters.recording() as rec:
        t1 = time.perf_counter()
        res = mod.run(fn, *values, memory=memory, device=cpu)
        t2 = time.perf_counter()
    checks = [compare(name_tok, after(), want) for name_tok, want, after in oracles]

    def read(name, typ):
        g = name.lstrip("@")
        if g not in memory:
            raise ProgramError(f"expect names @{g}, which is not a global of the IR",
                               rule="systolic-run expect: a global of the module", values={"globals": sorted(memory)})
        if typ is None or typ not in TYPES:
            raise ProgramError("an IR expect names the element type: expect @NAME:TYPE[...] = ...",
                               rule="systolic-run expect: TYPE is one of " + ", ".join(TYPES), values={"global": g})
        buf = memory[g]
        isz = np.dtype(TYPES[typ]).itemsize
        return buf[:buf.size // isz * isz].view(TYPES[typ])

    checks += check_expects(h.expects, read)
    info = mod.info.get(fn) or mod.info.get(mod.machine._mangled(fn), {})  # a C++ source name too
    return {"kind": "llvm-ir" if language is None else language, "title": h.title or f"LLVM IR function @{fn}", "description": h.title, "device": dev,
            "default_device": default, "devices": list(h.devices) if h.devices else None, "sub_group_size": None,
            "checks": checks, "recorder": rec, "seconds": {"run": t2 - t1, "total": time.perf_counter() - t0},
            "extras": {"function": fn, "args": " ".join(args or h.args or ()), "returned": res.value,
                       "tiles": ", ".join(f"tmm{r}: {s}" for r, s in sorted(info.get("shapes", {}).items())),
                       "spilled": ", ".join(map(str, info.get("spilled") or ())) or "none"}}
