"""What the command line takes from its user, checked once for every verb: source files (UTF-8 text), ``.npy``
files (the header against the file's size, no pickles), output paths, and random seeds.

Each bad input becomes a typed error from :mod:`systolic.errors` naming the rule and the values, never a
UnicodeDecodeError, an EOFError (which click would turn into a bare ``Aborted!``), a MemoryError or a
FileNotFoundError traceback. ``systolic run`` (:mod:`systolic.run`) reads its files through the same helpers.
"""

from __future__ import annotations

import math
import numbers
import os
from fractions import Fraction
from pathlib import Path
from typing import Callable

import numpy as np

from ..errors import AsmSyntaxError, InvalidValue

__all__ = ["read_text", "load_npy", "write_output", "make_dir", "seeded_rng", "check_seed", "parse_var_input",
           "parse_exact_number", "parse_call_arg", "load_global_npy"]

#: LLVM bitcode starts with 'BC' 0xC0DE (raw) or 0x0B17C0DE little-endian (the wrapper), LLVM BitCodeFormat
_BITCODE_MAGIC = (b"BC\xc0\xde", b"\xde\xc0\x17\x0b")


#: the largest source file read whole (a device such as /dev/zero, or a data file given by mistake, would
#: otherwise be read without end or fill memory; assembly and LLVM IR programs are far smaller)
MAX_SOURCE_BYTES = 64 << 20


def read_text(path: str | os.PathLike, what: str = "source file") -> str:
    """The file's text, decoded as UTF-8 (the encoding of LLVM IR and vISA assembly files).

    A file that cannot be read is an InvalidValue naming the OS reason; a file that is not UTF-8 text is an
    AsmSyntaxError at the line and column of the first undecodable byte, naming the byte and its offset.
    """
    p = Path(path)
    try:
        with open(p, "rb") as f:
            data = f.read(MAX_SOURCE_BYTES + 1)
    except OSError as e:
        from ..suggest import did_you_mean_file
        hint = did_you_mean_file(p) if isinstance(e, FileNotFoundError) else ""
        raise InvalidValue(f"cannot read {what} {str(p)!r}: {e.strerror or e}{hint}",
                           rule=f"the {what} is a readable file",
                           values={"path": str(p)}) from None
    if len(data) > MAX_SOURCE_BYTES:
        raise InvalidValue(f"{what} {str(p)!r} is larger than {MAX_SOURCE_BYTES} bytes (or endless)",
                           rule=f"source files are at most {MAX_SOURCE_BYTES} bytes", values={"path": str(p)})
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        off = e.start
        line = data.count(b"\n", 0, off) + 1
        column = off - (data.rfind(b"\n", 0, off) + 1) + 1
        bitcode = " (it is LLVM bitcode: give the text form, llvm-dis FILE)" \
            if data[:4] in _BITCODE_MAGIC else ""
        raise AsmSyntaxError(f"{what} is not UTF-8 text: byte 0x{data[off]:02x} at offset {off} cannot be "
                             f"decoded{bitcode}", line=line, column=column, source=str(p),
                             rule="source files are UTF-8 text", values={"byte": f"0x{data[off]:02x}",
                                                                         "offset": off}) from None


def _header(f, version):
    if version == (1, 0):
        return np.lib.format.read_array_header_1_0(f)
    if version == (2, 0):
        return np.lib.format.read_array_header_2_0(f)
    # 3.0 (UTF-8 field names) has no public reader; np.load itself uses this one
    return np.lib.format._read_array_header(f, version)      # noqa: SLF001


def load_npy(path: str | os.PathLike, what: str = "array", rule: str = ".npy file (numpy format, no pickles)"):
    """``np.load(path, allow_pickle=False)``, after checking that the file is a .npy file whose header's shape x
    item size fits in the bytes after the header (a forged header cannot make numpy allocate what the file does
    not hold). Every failure is an InvalidValue naming ``what``, the path and the reason."""
    p = str(path)

    def bad(reason: str, **values):
        return InvalidValue(f"cannot load {what} from {p}: {reason}", rule=rule, values={"file": p, **values})

    try:
        with open(p, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            try:
                version = np.lib.format.read_magic(f)
                shape, fortran, dtype = _header(f, version)
            except (ValueError, EOFError, SyntaxError) as e:
                raise bad(f"not a .npy file ({e})", bytes=size) from None
            if dtype.hasobject:
                raise bad("the array holds Python objects (pickles are not loaded)", dtype=str(dtype))
            need = math.prod(shape) * dtype.itemsize
            have = size - f.tell()
            if need > have:
                raise bad(f"the header declares shape {tuple(shape)} of {dtype} = {need} bytes, but the file holds "
                          f"{have} bytes after its header", shape=tuple(shape), dtype=str(dtype), need=need,
                          have=have)
            f.seek(0)
            return np.load(f, allow_pickle=False)
    except InvalidValue:
        raise
    except OSError as e:
        raise bad(e.strerror or str(e)) from None
    except (ValueError, EOFError, MemoryError, TypeError) as e:
        raise bad(f"{type(e).__name__}: {e}") from None


def make_dir(path: str | os.PathLike, what: str = "output directory") -> Path:
    """Create the directory ``path`` (and its parents), or an InvalidValue naming the path and the OS reason."""
    d = Path(path)
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        reason = "a file of that name exists" if isinstance(e, FileExistsError) else e.strerror or str(e)
        raise InvalidValue(f"cannot create {what} {str(d)!r}: {reason}",
                           rule=f"the {what} can be created (its parents are created too)",
                           values={"path": str(d)}) from None
    return d


def write_output(path: str | os.PathLike, write: Callable, what: str = "output file", binary: bool = True) -> Path:
    """Write the file ``path`` exactly under that name, creating missing parent directories (as every
    ``--save DIR`` does): ``write(f)`` fills the open file. A path that cannot be written (a directory, no
    permission, a parent that is a file) is an InvalidValue naming the path and the OS reason."""
    p = Path(path)
    make_dir(p.parent, f"directory of the {what}")
    try:
        with open(p, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8"})) as f:
            write(f)
    except OSError as e:
        raise InvalidValue(f"cannot write {what} {str(p)!r}: {e.strerror or e}",
                           rule=f"the {what} is a writable file path", values={"path": str(p)}) from None
    return p


def check_seed(seed, option: str = "--seed") -> int:
    """``seed`` as a non-negative integer (what numpy's SeedSequence accepts), else an InvalidValue."""
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise InvalidValue(f"{option} must be a non-negative integer", rule="numpy SeedSequence takes entropy >= 0",
                           values={"seed": seed})
    return int(seed)


def seeded_rng(seed, option: str = "--seed") -> np.random.Generator:
    """``np.random.default_rng(seed)`` after :func:`check_seed`."""
    return np.random.default_rng(check_seed(seed, option))


# ---------------------------------------------------------------- values named on the command line or a header
def parse_var_input(spec: str):
    """``--in VAR=file.npy`` or ``VAR=v0,v1,...`` (``systolic visa run``, the ``in`` lines of ``systolic run``):
    (name, array or list of exact values)."""
    if "=" not in spec:
        raise InvalidValue("--in takes VAR=file.npy or VAR=v0,v1,...", values={"in": spec})
    name, val = spec.split("=", 1)
    if val.endswith(".npy"):
        return name, load_npy(val, f"--in {name}", rule="--in VAR=file.npy: a .npy file (no pickles)")
    try:
        # a Python list of exact values: Machine.write rounds each once for the variable's type (an array would
        # have made big integers and decimals float64 first: a second rounding)
        return name, [parse_exact_number(x) for x in val.split(",")]
    except (ValueError, ZeroDivisionError):
        raise InvalidValue("--in values must be numbers separated by commas", values={"in": spec}) from None


def parse_exact_number(text: str):
    """One --in value at its exact value: an integer (decimal, 0x, 0o, 0b), nan / inf (float), -0.0 (float:
    the sign is kept), or a decimal or rational literal as a Fraction (1.00390625000000000001 is read exactly,
    not as the float64 nearest to it)."""
    x = text.strip()
    try:
        return int(x, 0)
    except ValueError:
        pass
    if x.lower().lstrip("+-") in ("nan", "inf", "infinity"):
        return float(x)
    q = Fraction(x)
    return -0.0 if q == 0 and x.startswith("-") else q


def parse_call_arg(text: str):
    """``--arg``: an integer (decimal or 0x...), or ``@global[+offset]`` as (name, offset) for a pointer."""
    t = text.strip()
    try:
        if t.startswith("@"):
            name, _, off = t[1:].partition("+")
            if not name:
                raise ValueError(text)
            return (name, int(off, 0) if off else 0)
        return int(t, 0)
    except ValueError:
        raise InvalidValue("an --arg is an integer (decimal or 0x...) or @global[+offset]",
                           rule="systolic amx run --arg", values={"arg": text}) from None


def load_global_npy(spec: str) -> tuple[str, np.ndarray]:
    """``--mem NAME=file.npy``: (global name, the array's bytes in C order as uint8)."""
    name, eq, path = spec.partition("=")
    if not eq or not name:
        raise InvalidValue("--mem takes NAME=file.npy", rule="systolic amx run --mem", values={"mem": spec})
    arr = load_npy(path, f"--mem {name}", rule="systolic amx run --mem NAME=file.npy (no pickles)")
    # any dtype: the global holds the array's bytes (C order)
    return name.lstrip("@"), np.ascontiguousarray(arr).reshape(-1).view(np.uint8).copy()
