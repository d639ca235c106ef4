"""The ``systolic-run:`` header of LLVM IR and vISA programs (docs/run.md, "IR and vISA headers").

A comment line whose text starts with ``systolic-run:`` is a directive (``;`` comments in ``.ll`` files, ``//`` in
``.visa`` files; anywhere in the file, in order)::

    ; systolic-run: device sapphirerapids
    ; systolic-run: devices sapphirerapids graniterapids
    ; systolic-run: function gemm
    ; systolic-run: args @A @B @C 16 16 256
    ; systolic-run: fill @A = random 1
    ; systolic-run: oracle @C = gemm-int8 A=@A:s8 B=@B:u8 M=16 N=16 K=256
    ; systolic-run: expect @C:i32[0:4] = 1 2 3 4

    // systolic-run: device pvc
    // systolic-run: in SEED = 1,2,3
    // systolic-run: expect D[0:16] = -3000 -2996 ...

Each malformed directive raises :class:`systolic.errors.ProgramError` with its line number.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

from ..errors import ProgramError

__all__ = ["Header", "Expect", "parse", "parse_values", "typed_values", "TYPES"]

#: element types a header may name for the bytes of an IR global (``@C:i32``)
TYPES = {"i8": np.int8, "s8": np.int8, "u8": np.uint8, "i16": np.int16, "u16": np.uint16, "i32": np.int32,
         "u32": np.uint32, "i64": np.int64, "u64": np.uint64, "f16": np.float16, "bf16": ml_dtypes.bfloat16,
         "f32": np.float32, "f64": np.float64}

_KEYS = {"device", "devices", "function", "args", "fill", "oracle", "expect", "in", "cpu", "platform", "cflags"}
_EXPECT = re.compile(r"(?P<name>@?[A-Za-z_.$][\w.$]*)(?::(?P<type>\w+))?\s*(?:\[\s*(?P<lo>\d*)\s*:\s*(?P<hi>\d*)\s*\])?"
                     r"\s*=\s*(?P<values>.*)$")


@dataclass
class Expect:
    """``expect NAME[:TYPE][LO:HI] = v0 v1 ...``: literal values of (a slice of) a variable, flat, in order."""
    name: str
    type: str | None
    lo: int | None
    hi: int | None
    values: list
    line: int


@dataclass
class Header:
    """The directives of one file, by key (``expects``, ``fills``, ``oracles``, ``inputs`` keep their order)."""
    device: str | None = None
    devices: tuple[str, ...] | None = None
    function: str | None = None
    args: list[str] | None = None
    cflags: str | None = None        # clang flags of a .c/.cpp program, as ``systolic amx run --cflags``
    fills: list[tuple[str, str, int]] = field(default_factory=list)        # (name, spec, line)
    oracles: list[tuple[str, str, int]] = field(default_factory=list)      # (name, spec, line)
    expects: list[Expect] = field(default_factory=list)
    inputs: list[tuple[str, int]] = field(default_factory=list)            # ("VAR=values", line)
    title: str = ""

    def device_for(self, requested: str | None, default: str) -> str:
        """The device a run uses: ``--device`` if given, else the header's, else ``default``; it must be one of
        the header's ``devices`` when the header lists them."""
        return pick_device(requested, self.device or default, self.devices, "the header's devices", "devices")


def pick_device(requested: str | None, default: str, devices, declared: str = "the program's DEVICES",
                key: str = "DEVICES") -> str:
    """``requested`` (or ``default``), checked against the devices the program declares (None: any). Any alias
    of a declared device names it (``sapphirerapids`` for ``spr``); the program gets its own spelling."""
    dev = default if requested is None else requested
    if devices is not None and dev not in devices:
        from .devices import same_device, unknown_device
        match = [d for d in devices if same_device(dev, d)]
        if match:
            return match[0]
        e = unknown_device(dev, "a device")
        why = "" if "unknown device" not in e.message else e.message[len(f"unknown device {dev!r}"):]
        raise ProgramError(f"the program does not support device {dev!r}{why}; it runs on "
                           f"{', '.join(devices)}", rule=f"systolic run --device: one of {declared}",
                           values={"device": dev, key: list(devices)})
    return dev


def _err(msg: str, line: int, text: str, rule: str = "systolic-run header (docs/run.md)") -> ProgramError:
    return ProgramError(msg, rule=rule, values={"line": line, "directive": text.strip()[:80]})


def parse_values(text: str, line: int, directive: str = "expect") -> list:
    """Numbers separated by spaces or commas: integers (decimal, 0x...) or floats (incl. inf, nan); errors name
    ``directive`` (``expect`` or ``fill``)."""
    out = []
    for tok in re.split(r"[\s,]+", text.strip()):
        if not tok:
            continue
        try:
            out.append(int(tok, 0))
            continue
        except ValueError:
            pass
        try:
            out.append(float(tok))
        except ValueError:
            raise _err(f"{tok!r} is not a number", line, text) from None
    if not out:
        raise _err(f"{directive} lists no values", line, text)
    return out


def typed_values(values: list, dtype, line: int, text: str, directive: str = "expect") -> np.ndarray:
    """The values as an array of ``dtype``, each exactly representable (else a ProgramError names it and the
    ``directive``, ``expect`` or ``fill``)."""
    dt = np.dtype(dtype)
    with np.errstate(all="ignore"):
        try:
            arr = np.array(values, dtype=np.float64 if dt.kind not in "iub" else object).astype(dt)
        except (OverflowError, ValueError, TypeError):
            arr = None
    if arr is not None:
        for v, a in zip(values, arr.tolist() if dt.kind in "iub" else arr.astype(np.float64).tolist()):
            same = (isinstance(v, float) and math.isnan(v) and math.isnan(a)) or v == a
            if not same:
                arr = None
                break
    if arr is None:
        what = "expected values" if directive == "expect" else f"values of {directive}"
        raise _err(f"the {what} are not all exactly representable as {dt}", line, text,
                   rule=f"systolic-run {directive}: every value is exact in the variable's type")
    return arr


def scan(text: str, comment: str) -> tuple[str, list[tuple[int, str]]]:
    """The comment header of a program file whose comments start with ``comment`` (``;`` or ``//``): its title
    (the first sentence of the first paragraph of plain comments) and every ``systolic-run:`` directive as
    (line number, the text after ``systolic-run:``). Shared by every file kind's header parser (docs/run.md)."""
    para: list[str] = []
    para_done = False
    directives: list[tuple[int, str]] = []
    for n, raw in enumerate(text.splitlines(), 1):
        s = raw.strip()
        if not s.startswith(comment):
            para_done = para_done or bool(para)
            continue
        body = s[len(comment):].lstrip(comment[0]).strip()
        if not body.startswith("systolic-run:"):
            if not para_done and body:
                para.append(body)
            elif para:
                para_done = True
            continue
        directives.append((n, body[len("systolic-run:"):].strip()))
    text_para = " ".join(para)
    title = re.split(r"(?<=[.!?])\s", text_para, maxsplit=1)[0] if text_para else ""
    return title, directives


def parse(text: str, comment: str) -> Header:
    """The directives of a file whose comments start with ``comment`` (``;`` or ``//``)."""
    h = Header()
    seen: dict = {}               # directive (or (directive, variable)) -> the line that set it
    title, directives = scan(text, comment)
    for n, d in directives:
        key, _, rest = d.partition(" ")
        rest = rest.strip()
        if key not in _KEYS:
            raise _err(f"unknown directive {key!r}", n, d,
                       rule="systolic-run directives: " + ", ".join(sorted(_KEYS)))
        if not rest:
            raise _err(f"{key} needs a value", n, d)
        # a key that holds one value, or a second directive for the same variable, would win silently over the
        # first (and with it what the run checks): refused, naming both lines
        one = "device" if key in ("cpu", "platform") else key
        if one in ("device", "devices", "function", "args", "cflags"):
            target = one
        elif key in ("fill", "oracle", "in"):
            target = (key, (rest.partition("=")[0]).strip())
        else:
            target = None
        if target is not None:
            if target in seen:
                raise _err(f"{key} is given twice (line {seen[target]} and line {n}); one would silently replace "
                           "the other", n, d, rule="systolic-run header: a key holds one value; fill, oracle and "
                                                   "in name each variable once")
            seen[target] = n
        if key in ("device", "cpu", "platform"):
            h.device = rest
        elif key == "devices":
            h.devices = tuple(rest.replace(",", " ").split())
        elif key == "function":
            h.function = rest.lstrip("@")
        elif key == "args":
            h.args = rest.replace(",", " ").split()
        elif key == "cflags":
            h.cflags = rest
        elif key == "in":
            h.inputs.append((rest.replace(" ", ""), n))
        elif key in ("fill", "oracle"):
            name, eq, spec = rest.partition("=")
            if not eq or not name.strip() or not spec.strip():
                raise _err(f"{key} is '{key} @NAME = ...'", n, d)
            (h.fills if key == "fill" else h.oracles).append((name.strip(), spec.strip(), n))
        else:  # expect
            m = _EXPECT.match(rest)
            if not m:
                raise _err("expect is 'expect NAME[:TYPE][[LO:HI]] = v0 v1 ...'", n, d)
            lo = int(m["lo"]) if m["lo"] else None
            hi = int(m["hi"]) if m["hi"] else None
            h.expects.append(Expect(m["name"], m["type"], lo, hi, parse_values(m["values"], n), n))
    if h.devices is not None and h.device is not None and h.device not in h.devices:
        raise ProgramError("the header's device is not one of its devices",
                           rule="systolic-run header: device is one of devices",
                           values={"device": h.device, "devices": list(h.devices)})
    h.title = title
    return h


def check_expects(expects: list[Expect], read) -> list[dict]:
    """One check per variable: its expected elements (all ``expect`` lines naming it) against its values.

    ``read(name, type)`` returns the variable's values as a flat array (``type``: the directive's ``:TYPE`` or
    None). The first mismatch is named by its flat element index in the variable.
    """
    from .compare import compare
    by_name: dict[tuple[str, str | None], list[Expect]] = {}
    for e in expects:
        by_name.setdefault((e.name, e.type), []).append(e)
    checks = []
    for (name, typ), es in by_name.items():
        actual = np.asarray(read(name, typ)).reshape(-1)
        want = np.zeros_like(actual)
        mask = np.zeros(actual.size, dtype=bool)
        owner = np.zeros(actual.size, dtype=np.int64)      # the line that claims each element (0: none yet)
        for e in es:
            lo = 0 if e.lo is None else e.lo
            hi = (lo + len(e.values) if e.lo is not None else actual.size) if e.hi is None else e.hi
            text = f"expect {e.name}[{lo}:{hi}]"
            if not 0 <= lo <= hi <= actual.size:
                raise ProgramError(f"{e.name}[{lo}:{hi}] is outside the variable ({actual.size} elements)",
                                   rule="systolic-run expect: the slice lies inside the variable",
                                   values={"line": e.line, "elements": int(actual.size)})
            if hi - lo != len(e.values):
                raise ProgramError(f"{text} lists {len(e.values)} values for {hi - lo} elements",
                                   rule="systolic-run expect: one value per element of the slice",
                                   values={"line": e.line})
            if mask[lo:hi].any():
                # every line is a claim: a later line must not overwrite (and so hide) an earlier one's values
                first = int(owner[lo:hi][mask[lo:hi]][0])
                raise ProgramError(f"{text} (line {e.line}) covers elements that line {first} already expects",
                                   rule="systolic-run expect: the lines of one variable cover disjoint elements",
                                   values={"line": e.line, "other_line": first, "variable": e.name})
            want[lo:hi] = typed_values(e.values, actual.dtype, e.line, text)
            mask[lo:hi] = True
            owner[lo:hi] = e.line
        idx = np.flatnonzero(mask)
        c = compare(name if len(idx) == actual.size else f"{name} ({len(idx)} of {actual.size} elements)",
                    actual[idx], want[idx])
        c["shape"] = [int(actual.size)]
        if "first_mismatch" in c:
            c["first_mismatch"]["index"] = [int(idx[c["first_mismatch"]["index"][0]])]
        checks.append(c)
    return checks
