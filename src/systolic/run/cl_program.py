"""OpenCL C programs for ``systolic run`` (docs/cl.md, "systolic run"): the kernel through :mod:`systolic.cl`,
described by ``// systolic-run:`` lines::

    // systolic-run: device pvc
    // systolic-run: devices pvc bmg lnl
    // systolic-run: kernel gemm_bf16
    // systolic-run: options -DTM=8
    // systolic-run: global 64 8
    // systolic-run: local 16 1
    // systolic-run: buffer A:bf16[4096] = random -4 4 SEED     (integers in [lo, hi], exact in the type)
    // systolic-run: buffer C:f32[4096] = zeros                   (or: range, or literal values v0 v1 ...)
    // systolic-run: args C A B 64:int
    // systolic-run: oracle C = matmul A B M=64 N=64 K=64 [vnni=2]
    // systolic-run: expect C:f32[0:4] = 1 2 3 4

``args`` lists the kernel's arguments: a buffer name, ``local:NBYTES`` for a ``__local`` pointer, or a number
with its C type (``64:int``, ``0.5:float``). ``oracle C = matmul A B`` is C = A @ B computed from the buffers'
values before the run in exact arithmetic (integers: int64 then wrapped to C's type; floats: float64 products and
sums, exact for the small integers ``random`` makes, then C's type); ``vnni=V`` reads B in the VNNI form the
kernel takes (K/V rows of N*V elements). The report is that of every ``systolic run`` program.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import ml_dtypes
import numpy as np

from ..cli.inputs import read_text
from ..errors import ProgramError
from .compare import compare
from .header import Expect, check_expects, parse_values, typed_values
from .header import scan as header_scan

__all__ = ["run", "DEFAULT_DEVICE", "parse_header"]

DEFAULT_DEVICE = "pvc"
_TYPES = {"i8": np.int8, "s8": np.int8, "u8": np.uint8, "i16": np.int16, "u16": np.uint16, "i32": np.int32,
          "u32": np.uint32, "i64": np.int64, "u64": np.uint64, "f16": np.float16, "bf16": ml_dtypes.bfloat16,
          "f32": np.float32, "f64": np.float64}
_CTYPES = {"char": np.int8, "uchar": np.uint8, "short": np.int16, "ushort": np.uint16, "int": np.int32,
           "uint": np.uint32, "long": np.int64, "ulong": np.uint64, "float": np.float32, "half": np.float16,
           "double": np.float64}
_KEYS = ("device", "devices", "kernel", "options", "global", "local", "buffer", "args", "oracle", "expect")


def _err(msg, line, d, rule="systolic-run header of .cl files (docs/cl.md)"):
    return ProgramError(msg, rule=rule, values={"line": line, "directive": d[:80]})


#: the most bytes one header buffer may hold (a larger one is a typo, not a test: it would exhaust memory)
MAX_BUFFER_BYTES = 1 << 30
_ONCE = ("device", "devices", "kernel", "options", "global", "local", "args")


def _int_field(tok, clause, line, d, lo=None, what="an integer"):
    """``tok`` as an int (decimal or 0x...) >= ``lo``, else a ProgramError naming the clause and the value."""
    try:
        v = int(tok, 0)
    except ValueError:
        v = None
    if v is None or (lo is not None and v < lo):
        raise ProgramError(f"{clause} is {what}; got {tok!r}", rule=f"systolic-run {clause} (docs/cl.md)",
                           values={"line": line, clause: tok, "directive": d[:80]})
    return v


def _scalar_arg(tok, line):
    """``VALUE:CTYPE`` as a numpy scalar of the C type: an integer exactly (no rounding, no wrap-around), a
    floating-point value rounded to the type as a C literal is, but not to infinity."""
    m = re.fullmatch(r"(-?[\w.+-]+):(\w+)", tok)
    if not m or m[2] not in _CTYPES:
        raise ProgramError(f"argument {tok!r} is a buffer name, local:NBYTES or VALUE:CTYPE (CTYPE one of "
                           + " ".join(_CTYPES) + ")", rule="systolic-run args", values={"line": line, "args": tok})
    dt = np.dtype(_CTYPES[m[2]])
    v = parse_values(m[1], line, "args")[0]
    if dt.kind in "iu":
        return dt.type(typed_values([v], dt, line, f"args {tok}", "args")[0])
    with np.errstate(all="ignore"):
        r = dt.type(v)
    if np.isinf(r) and not np.isinf(v):
        raise ProgramError(f"argument {tok!r}: {m[1]} overflows {m[2]}", rule="systolic-run args: a value in "
                           "the range of its C type", values={"line": line, "args": tok})
    return r


def _arg(tok, line, d):
    if tok.startswith("local:"):
        return ("local", _int_field(tok[6:], "local", line, d, 1, "a positive number of bytes (args local:NBYTES)"))
    if ":" in tok:
        return ("value", _scalar_arg(tok, line))
    return ("buffer", tok)


def _check_fill(name, typ, count, spec, line):
    """The buffer's initializer, checked before anything is compiled or allocated."""
    words = spec.split()
    if words[0] == "random":
        if len(words) != 4:
            raise _err("random takes LO HI SEED", line, spec)
        lo = _int_field(words[1], "random", line, spec, None, "'random LO HI SEED' of integers")
        hi = _int_field(words[2], "random", line, spec, None, "'random LO HI SEED' of integers")
        seed = _int_field(words[3], "random", line, spec, 0, "'random LO HI SEED' with SEED >= 0")
        if lo > hi:
            raise ProgramError(f"buffer {name}: random {lo} {hi} has LO > HI", rule="systolic-run buffer: "
                               "random LO HI SEED with LO <= HI", values={"line": line, "random": f"{lo} {hi}"})
        if lo < -2**63 or hi > 2**63 - 1:
            # the generator draws int64 values; the element type's own range is checked on the values drawn
            raise ProgramError(f"buffer {name}: random {lo} {hi} leaves the 64-bit integers the generator draws",
                               rule="systolic-run buffer: random LO HI SEED with -2**63 <= LO <= HI <= 2**63 - 1",
                               values={"line": line, "random": f"{lo} {hi}"})
        return ("random", lo, hi, seed)
    return None


def parse_header(text: str) -> dict:
    h = {"device": None, "devices": None, "kernel": None, "options": "", "global": None, "local": None,
         "buffers": {}, "args": None, "oracles": [], "expects": [], "title": ""}
    seen: dict = {}
    title, directives = header_scan(text, "//")
    for n, d in directives:
        key, _, rest = d.partition(" ")
        rest = rest.strip()
        if key not in _KEYS:
            raise _err(f"unknown directive {key!r}", n, d, rule="systolic-run directives of .cl files: "
                       + ", ".join(_KEYS))
        if not rest:
            raise _err(f"{key} needs a value", n, d)
        if key in _ONCE and key in seen:         # a second one would win silently
            raise ProgramError(f"{key} appears twice (lines {seen[key]} and {n})",
                               rule="systolic-run header: each of " + ", ".join(_ONCE) + " at most once",
                               values={"line": n, "directive": key})
        seen[key] = n
        if key == "device":
            h["device"] = rest
        elif key == "devices":
            h["devices"] = tuple(rest.replace(",", " ").split())
        elif key == "kernel":
            h["kernel"] = rest
        elif key == "options":
            h["options"] = rest
        elif key in ("global", "local"):
            toks = rest.replace(",", " ").split()
            if not 1 <= len(toks) <= 3:
                raise ProgramError(f"{key} is 1 to 3 positive integers; got {rest!r}",
                                   rule=f"systolic-run {key} (docs/cl.md)", values={"line": n, key: rest})
            h[key] = tuple(_int_field(x, key, n, d, 1, "1 to 3 positive integers") for x in toks)
        elif key == "buffer":
            m = re.fullmatch(r"(\w+):(\w+)\[(\d+)\]\s*=\s*(.+)", rest)
            if not m or m[2] not in _TYPES:
                raise _err("buffer is 'buffer NAME:TYPE[COUNT] = zeros | range | random LO HI SEED | v0 v1 ...' "
                           "(TYPE one of " + " ".join(_TYPES) + ")", n, d)
            count = int(m[3])
            if not 0 < count * np.dtype(_TYPES[m[2]]).itemsize <= MAX_BUFFER_BYTES:
                raise ProgramError(f"buffer {m[1]} has {m[3]} elements: 1 to {MAX_BUFFER_BYTES} bytes",
                                   rule="systolic-run buffer: COUNT > 0 and at most MAX_BUFFER_BYTES",
                                   values={"line": n, "buffer": m[1], "count": m[3]})
            if m[1] in h["buffers"]:
                raise ProgramError(f"buffer {m[1]} is declared twice (lines {h['buffers'][m[1]][3]} and {n})",
                                   rule="systolic-run buffer: one line per buffer", values={"line": n,
                                                                                            "buffer": m[1]})
            _check_fill(m[1], m[2], count, m[4].strip(), n)
            h["buffers"][m[1]] = (m[2], count, m[4].strip(), n)
        elif key == "args":
            h["args"] = ([_arg(t, n, d) for t in rest.split()], n)
        elif key == "oracle":
            m = re.fullmatch(r"(\w+)\s*=\s*matmul\s+(\w+)\s+(\w+)((?:\s+\w+=\d+)*)", rest)
            if not m:
                raise _err("oracle is 'oracle C = matmul A B M=.. N=.. K=.. [vnni=V]'", n, d)
            pairs = re.findall(r"(\w+)=(\d+)", m[4])
            kv = dict(pairs)
            bad = [k for k, _ in pairs if k not in ("M", "N", "K", "vnni")]
            if bad or len(kv) != len(pairs):
                raise ProgramError(f"oracle matmul takes M=, N=, K= and vnni= once each; got {m[4].strip()!r}",
                                   rule="systolic-run oracle C = matmul A B M=.. N=.. K=.. [vnni=V]",
                                   values={"line": n, "keys": [k for k, _ in pairs]})
            if not {"M", "N", "K"} <= set(kv):
                raise _err("oracle matmul needs M=, N= and K=", n, d)
            for k, v in kv.items():
                _int_field(v, k, n, d, 1, "a positive integer (oracle M=, N=, K=, vnni=)")
            h["oracles"].append((m[1], m[2], m[3], {k: int(v) for k, v in kv.items()}, n))
        else:
            m = re.fullmatch(r"(\w+)(?::(\w+))?\s*(?:\[\s*(\d*)\s*:\s*(\d*)\s*\])?\s*=\s*(.*)", rest)
            if not m:
                raise _err("expect is 'expect NAME[:TYPE][[LO:HI]] = v0 v1 ...'", n, d)
            if m[2] is not None and m[2] not in _TYPES:
                raise ProgramError(f"expect {m[1]}:{m[2]}: the type is one of " + " ".join(_TYPES),
                                   rule="systolic-run expect NAME:TYPE", values={"line": n, "expect": m[2]})
            h["expects"].append(Expect(m[1], m[2], int(m[3]) if m[3] else None, int(m[4]) if m[4] else None,
                                       parse_values(m[5], n), n))
    if h["devices"] is not None and h["device"] is not None and h["device"] not in h["devices"]:
        raise ProgramError("the header's device is not one of its devices",
                           rule="systolic-run header: device is one of devices",
                           values={"device": h["device"], "devices": list(h["devices"])})
    if h["local"] is not None and h["global"] is not None and len(h["local"]) != len(h["global"]):
        raise ProgramError("global and local have the same number of dimensions", rule="systolic-run global, "
                           "local", values={"global": list(h["global"]), "local": list(h["local"])})
    if h["args"] is not None:
        for kind, v in h["args"][0]:
            if kind == "buffer" and v not in h["buffers"]:
                raise ProgramError(f"argument {v!r} is a buffer name, local:NBYTES or VALUE:CTYPE; no buffer "
                                   f"{v!r} is declared", rule="systolic-run args",
                                   values={"line": h["args"][1], "args": v, "buffers": sorted(h["buffers"])})
    h["title"] = title
    return h


def _fill(name, typ, count, spec, line):
    dt = np.dtype(_TYPES[typ])
    words = spec.split()
    if words == ["zeros"]:
        return np.zeros(count, dt)
    if words == ["range"]:
        return typed_values(list(range(count)), dt, line, spec, "buffer")
    if words[0] == "random":
        _, lo, hi, seed = _check_fill(name, typ, count, spec, line)
        vals = np.random.default_rng(seed).integers(lo, hi + 1, count)
        return typed_values(vals.tolist(), dt, line, spec, "buffer")
    vals = parse_values(spec, line, "buffer")
    if len(vals) != count:
        raise _err(f"buffer {name} lists {len(vals)} values for {count} elements", line, spec)
    return typed_values(vals, dt, line, spec, "buffer")


def _oracle(bufs, o):
    cname, aname, bname, kv, line = o
    for nm in (cname, aname, bname):
        if nm not in bufs:
            raise ProgramError(f"oracle names {nm}, which is not a buffer", rule="systolic-run oracle",
                               values={"line": line})
    M, N, K, V = kv["M"], kv["N"], kv["K"], kv.get("vnni", 1)
    A, B, C = bufs[aname], bufs[bname], bufs[cname]
    if V < 1 or K % V:
        raise ProgramError(f"oracle vnni={V} does not divide K={K}", rule="systolic-run oracle matmul: vnni >= 1 "
                           "divides K", values={"line": line, "vnni": V, "K": K})
    if A.size < M * K or B.size < K * N or C.size < M * N:
        raise ProgramError("the oracle's M, N, K do not fit the buffers", rule="systolic-run oracle matmul",
                           values={"line": line, "A": A.size, "B": B.size, "C": C.size})
    a = A[:M * K].reshape(M, K)
    b = B[:K * N]
    b = b.reshape(K // V, N, V).transpose(0, 2, 1).reshape(K, N) if V > 1 else b.reshape(K, N)
    if C.dtype.kind in "iu":
        r = (a.astype(np.int64) @ b.astype(np.int64)) & ((1 << (8 * C.dtype.itemsize)) - 1)
        return r.astype(np.uint64).astype(C.dtype.str.replace("i", "u")).view(C.dtype).reshape(-1)
    return (a.astype(np.float64) @ b.astype(np.float64)).astype(C.dtype).reshape(-1)


def _view(v, name, typ):
    """Buffer ``name``'s bytes as elements of ``typ`` (an expect's NAME:TYPE)."""
    if not typ:
        return v
    dt = np.dtype(_TYPES[typ])
    if v.nbytes % dt.itemsize:
        raise ProgramError(f"expect {name}:{typ}: the buffer's {v.nbytes} bytes are not a whole number of {typ}",
                           rule="systolic-run expect NAME:TYPE: the buffer is whole elements of TYPE",
                           values={"buffer": name, "bytes": int(v.nbytes), "expect": typ})
    return v.view(dt)


def run(path: Path, device: str | None = None) -> dict:
    """Compile, run the header's kernel on ``device`` and check its oracle and expect lines."""
    from .. import cl, counters
    from .header import pick_device
    t0 = time.perf_counter()
    text = read_text(path, "OpenCL C program")
    h = parse_header(text)
    default = h["device"] or DEFAULT_DEVICE
    dev = pick_device(device, default, h["devices"], "the header's devices", "devices")
    missing = [k for k in ("kernel", "global", "args") if h[k] is None]
    if missing:                          # every missing clause at once (issue 27), not one per run
        raise ProgramError(f"the header has no {', no '.join(repr(k) for k in missing)} directive"
                           f"{'s' if len(missing) > 1 else ''} (docs/run.md)", rule="systolic-run header of .cl "
                           "files: kernel, global and args are required", values={"file": str(path),
                                                                                   "missing": missing})
    from .devices import xmx_platform
    ctx = cl.Context(device=xmx_platform(dev))   # any alias of an XMX GPU (xehpc, intel_gpu_pvc, arl)
    q = cl.CommandQueue(ctx)
    prg = cl.Program(ctx, text, filename=path.name, source_dir=str(path.parent)).build(options=h["options"])
    if h["kernel"] not in prg.kernel_names:
        raise ProgramError(f"the header's kernel {h['kernel']!r} is not in the program",
                           rule="systolic-run kernel NAME", values={"kernels": prg.kernel_names})
    host = {n: _fill(n, t, c, s, ln) for n, (t, c, s, ln) in h["buffers"].items()}
    before = {n: v.copy() for n, v in host.items()}
    bufs = {n: cl.Buffer(ctx, cl.mem_flags.COPY_HOST_PTR, hostbuf=v) for n, v in host.items()}
    args = [bufs[v] if kind == "buffer" else cl.LocalMemory(v) if kind == "local" else v
            for kind, v in h["args"][0]]
    with counters.recording() as rec:
        t1 = time.perf_counter()
        getattr(prg, h["kernel"])(q, h["global"], h["local"], *args)
        t2 = time.perf_counter()
    after = {}
    for n, b in bufs.items():
        out = np.empty_like(host[n])
        cl.enqueue_copy(q, out, b)
        after[n] = out
    checks = []
    for o in h["oracles"]:
        want = _oracle(before, o)
        got = after[o[0]][:want.size]
        checks.append(compare(o[0], got, want))

    def read(name, typ):
        if name not in after:
            raise ProgramError(f"expect names {name}, which is not a buffer", rule="systolic-run expect",
                               values={"buffers": sorted(after)})
        return _view(after[name], name, typ)

    checks += check_expects(h["expects"], read)
    st = q.last_stats
    extras = {"kernel": h["kernel"], "global size": list(h["global"]), "local size": list(st.local_size),
              "sub-groups": st.sub_groups,
              "IR instructions executed (x sub-groups)": st.instructions,
              "matrix built-in calls": "; ".join(f"{v[0].signature} -> one "
                                                 f"{'DPASW per pair of sub-groups' if v[0].split else 'DPAS per sub-group'}"
                                                 f" ({v[0].dpas}): {v[1]} sub-group calls"
                                                 for v in st.matrix_calls.values()) or "none"}
    return {"kind": "opencl-c", "title": h["title"] or f"OpenCL C kernel {h['kernel']}", "description": h["title"],
            "device": dev, "default_device": default, "devices": list(h["devices"]) if h["devices"] else None,
            "sub_group_size": st.sub_group_size, "checks": checks, "recorder": rec,
            "seconds": {"run": t2 - t1, "total": time.perf_counter() - t0}, "extras": extras}
