"""Python programs for ``systolic run``: the program-file protocol (docs/run.md, "Python programs").

A program is a Python file with

* a module docstring (what it computes; its first line is the report's title),
* ``DEVICE = "spr"``: its default device (a string),
* optionally ``DEVICES = (...)``: the devices it supports (strings; ``DEVICE`` among them),
* ``def main(device: str) -> dict``: runs the kernel on ``device`` and returns
  ``{"result": <numpy array>, "oracle": <numpy array computed independently>}``; extra keys are allowed
  (``"note"``: a sentence for the report; ``"sub_group_size"``: the sub-group size the kernel ran with).

Each broken clause raises :class:`systolic.errors.ProgramError` naming it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import itertools
import os
import sys
import time
from pathlib import Path

import numpy as np

from ..errors import ProgramError, SystolicError
from .compare import as_array, compare
from .deadline import Deadline
from .header import pick_device

__all__ = ["load", "run"]

_ids = itertools.count()


@contextlib.contextmanager
def program_dir(path: Path):
    """The program's directory first on ``sys.path`` while it imports and while ``main`` runs (a sibling module
    may be imported in either); afterwards the directory leaves ``sys.path`` and the sibling modules the program
    imported leave ``sys.modules``, so a later program from another directory imports its own siblings."""
    here = str(path.resolve().parent)
    before = set(sys.modules)
    sys.path.insert(0, here)
    try:
        yield
    finally:
        try:
            sys.path.remove(here)
        except ValueError:
            pass
        for mod_name in [m for m in sys.modules if m not in before]:
            top = mod_name.partition(".")[0]
            if top in before:            # a submodule of a package loaded before the run: not the program's
                continue
            f = getattr(sys.modules[mod_name], "__file__", None)
            try:
                inside = f is not None and Path(f).resolve().is_relative_to(here) and (
                    Path(here, top + ".py").exists() or Path(here, top).is_dir())
            except (OSError, ValueError, TypeError):
                inside = False
            if inside and not mod_name.startswith("systolic_program_"):
                sys.modules.pop(mod_name, None)


class _OsExit(BaseException):
    """``os._exit(code)`` called by the program in this process (see :func:`no_os_exit`)."""

    def __init__(self, code):
        super().__init__(code)
        self.code = code


@contextlib.contextmanager
def no_os_exit():
    """While the program runs, ``os._exit`` in this process raises instead of ending it with no report (and an exit
    status of the program's choosing); a forked child (multiprocessing) still exits with the real ``os._exit``."""
    real, pid = os._exit, os.getpid()

    def guarded(code):
        if os.getpid() != pid:
            real(code)
        raise _OsExit(code)

    os._exit = guarded
    try:
        yield
    finally:
        os._exit = real


def _os_exited(exc: _OsExit, path: Path, when: str) -> ProgramError:
    return ProgramError(f"the program {path.name} called os._exit({exc.code!r}) {when}, before main returned a "
                        "result", rule='program protocol: main() returns {"result", "oracle"} (no sys.exit, '
                        'no os._exit)', values={"file": str(path), "exit_status": exc.code})


def load(path: Path):
    """Import the program file as a fresh module (call it inside :func:`program_dir`, which puts its directory
    first on ``sys.path``)."""
    name = f"systolic_program_{next(_ids)}_{path.stem.replace('-', '_')}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ProgramError("cannot import the program file", rule="program protocol: a Python file",
                           values={"file": str(path)})
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod            # as an import would: dataclasses, pickling and typing look it up there
    try:
        spec.loader.exec_module(mod)
    except ImportError as exc:         # e.g. a programming-model layer this installation lacks
        sys.modules.pop(name, None)
        raise _cannot_import(exc, path) from exc
    except SystemExit as exc:          # sys.exit() at import: no result, so never a silent exit status 0
        sys.modules.pop(name, None)
        raise _exited(exc, path, "while it was imported") from exc
    except _OsExit as exc:
        sys.modules.pop(name, None)
        raise _os_exited(exc, path, "while it was imported") from None
    except SystolicError:              # already typed, names its own rule
        sys.modules.pop(name, None)
        raise
    except (KeyboardInterrupt, Deadline):   # the user's Ctrl-C / the time limit stay what they are
        sys.modules.pop(name, None)
        raise
    except BaseException as exc:       # a bug in the program, also a BaseException of its own or GeneratorExit:
        sys.modules.pop(name, None)    # one `error:` line naming it (--traceback shows all)
        raise _raised(exc, path, "while it was imported") from exc
    return mod


def _cannot_import(exc: ImportError, path: Path) -> ProgramError:
    return ProgramError(f"the program cannot import what it needs: {exc}",
                        rule="program protocol: the program imports (systolic and its dependencies)",
                        values={"file": str(path)})


def _text(v) -> str:
    """``repr(v)`` for the report, or the type's name when the program's own ``__repr__`` raises."""
    try:
        return repr(v)
    except Exception:                  # noqa: BLE001 - the program's code, not ours
        return f"<{type(v).__name__} object (its repr raised)>"


def _exited(exc: SystemExit, path: Path, when: str) -> ProgramError:
    return ProgramError(f"the program {path.name} called sys.exit({exc.code!r}) {when}, before main returned a "
                        "result", rule='program protocol: main() returns {"result", "oracle"} (no sys.exit)',
                        values={"file": str(path), "exit_status": exc.code})


def _raised(exc: BaseException, path: Path, when: str) -> ProgramError:
    text = str(exc)
    return ProgramError(f"the program {path.name} raised {type(exc).__name__}{': ' + text if text else ''} {when}",
                        rule='program protocol: main() returns {"result", "oracle"} without raising',
                        values={"file": str(path), "exception": type(exc).__name__})


#: systolic packages a program may be written against -> how the report names them (most specific first)
MODELS = (("systolic.sycl", "SYCL joint_matrix"), ("systolic.opencl", "OpenCL sub-group built-ins"),
          ("systolic.visa", "vISA"), ("systolic.compiler", "AMX tile compiler"), ("systolic.xmx", "XMX engine"),
          ("systolic.amx", "AMX engine"))


def models_used(mod) -> list[str]:
    """The programming models / engines the program imports at module level (for the report's title line)."""
    names = set()
    for v in vars(mod).values():
        n = v.__name__ if inspect.ismodule(v) else getattr(v, "__module__", None)
        if isinstance(n, str) and n.startswith("systolic."):
            names.add(n)
    return [label for prefix, label in MODELS if any(n == prefix or n.startswith(prefix + ".") for n in names)]


class _Clauses:
    """The protocol clauses a program breaks, gathered so that one error names them all (a program missing three
    clauses hears of the three at once, not one per run)."""

    def __init__(self):
        self.broken: list[tuple[str, str, dict]] = []

    def add(self, message: str, rule: str, values: dict) -> None:
        self.broken.append((message, rule, values))

    def raise_if_any(self) -> None:
        if not self.broken:
            return
        if len(self.broken) == 1:
            msg, rule, values = self.broken[0]
            raise ProgramError(f"{msg} (docs/run.md: the program protocol)", rule=rule, values=values)
        msgs = "; ".join(f"({n}) {m}" for n, (m, _, _) in enumerate(self.broken, 1))
        values = {k: v for _, _, vs in self.broken for k, v in vs.items()}
        raise ProgramError(f"the program breaks {len(self.broken)} clauses of the protocol: {msgs} "
                           "(docs/run.md: the program protocol)",
                           rule=" | ".join(r for _, r, _ in self.broken), values=values)


def check_protocol(mod, path: Path) -> tuple[str, str, tuple[str, ...] | None]:
    """(docstring, DEVICE, DEVICES or None) after checking every declaration clause of the protocol; every
    broken clause is named in one ProgramError."""
    bad = _Clauses()
    doc = (mod.__doc__ or "").strip()
    if not doc:
        bad.add("the program has no module docstring",
                "program protocol: a module docstring says what the program computes", {"file": str(path)})
    default = getattr(mod, "DEVICE", None)
    device_rule = 'program protocol: DEVICE = "<name>", the default device'
    if not hasattr(mod, "DEVICE"):
        bad.add("the program declares no DEVICE", device_rule, {"file": str(path)})
    elif not isinstance(default, str) or not default:
        bad.add("DEVICE must be a non-empty string", device_rule, {"DEVICE": repr(default)})
        default = None
    devices = getattr(mod, "DEVICES", None)
    if devices is not None:
        if isinstance(devices, str) or not isinstance(devices, (tuple, list)) or not devices \
                or not all(isinstance(d, str) and d for d in devices):
            bad.add("DEVICES must be a non-empty tuple of device names",
                    "program protocol: DEVICES = (...), the devices the program supports", {"DEVICES": repr(devices)})
            devices = None
        else:
            devices = tuple(devices)
            if default is not None and default not in devices:
                bad.add("DEVICE is not one of DEVICES", "program protocol: the default device is one of DEVICES",
                        {"DEVICE": default, "DEVICES": list(devices)})
    fn = getattr(mod, "main", None)
    if not callable(fn):
        bad.add("the program defines no main(device)", "program protocol: def main(device: str) -> dict",
                {"file": str(path)})
    else:
        try:
            inspect.signature(fn).bind("device")
        except TypeError:
            bad.add("main must take exactly one argument, the device name",
                    "program protocol: def main(device: str) -> dict", {"signature": str(inspect.signature(fn))})
        except ValueError:  # no signature (a builtin): let the call decide
            pass
    bad.raise_if_any()
    return doc, default, devices


def run(path: Path, device: str | None = None) -> dict:
    """Load, check and run the program; the raw material of a report (see :func:`systolic.run.run_file`)."""
    t0 = time.perf_counter()
    from .. import counters
    with program_dir(path), no_os_exit():
        mod = load(path)
        doc, default, devices = check_protocol(mod, path)
        dev = pick_device(device, default, devices)
        with counters.recording() as rec:
            t1 = time.perf_counter()
            try:
                out = mod.main(dev)
            except SystemExit as exc:
                raise _exited(exc, path, "in main") from exc
            except _OsExit as exc:
                raise _os_exited(exc, path, "in main") from None
            except (SystolicError, KeyboardInterrupt, Deadline):   # typed / Ctrl-C / the time limit: unchanged
                raise
            except ImportError as exc:  # an import inside main: the same rule as one at the top of the file
                raise _cannot_import(exc, path) from exc
            except BaseException as exc:   # any other exception of the program (BaseException subclasses too)
                raise _raised(exc, path, "in main") from exc
            t2 = time.perf_counter()
    if not isinstance(out, dict):
        raise ProgramError("main must return a dict", rule='program protocol: main() returns {"result", "oracle"}',
                           values={"returned": type(out).__name__})
    missing = [k for k in ("result", "oracle") if k not in out]
    if missing:
        raise ProgramError(f"main returned no {' and no '.join(repr(k) for k in missing)} (docs/run.md: the "
                           "program protocol)", rule='program protocol: main() returns {"result", "oracle"}',
                           values={"keys": sorted(map(str, out))})
    result = as_array(out["result"], "result")
    oracle = as_array(out["oracle"], "oracle")
    if np.shares_memory(result, oracle):
        # the same buffer (or a view of it) compared with itself always agrees: that oracle proves nothing
        raise ProgramError("result and oracle share memory, so the oracle is not independent of the result",
                           rule="program protocol: the oracle is computed independently (its own array)",
                           values={"result": str(result.dtype), "oracle": str(oracle.dtype)})
    # extra keys are text in the report (a dict may have non-string keys: 1, None, tuples)
    extras = {k if isinstance(k, str) else repr(k): v for k, v in out.items() if k not in ("result", "oracle")}
    sg = extras.get("sub_group_size")
    if sg is not None and (isinstance(sg, bool) or not isinstance(sg, (int, np.integer)) or not 1 <= sg <= 128):
        # the report prints it as a fact about the run: an impossible size (-3, 0, "16") is the program's error
        raise ProgramError(f"main() returned sub_group_size {sg!r}: a sub-group size is a positive integer",
                           rule="program protocol: sub_group_size is the size the kernel ran with (1 .. 128)",
                           values={"sub_group_size": repr(sg)[:40]})
    return {"kind": "python", "title": doc.splitlines()[0], "description": doc, "device": dev,
            "default_device": default, "devices": list(devices) if devices is not None else None,
            "sub_group_size": None if sg is None else int(sg),
            "models": models_used(mod),
            "checks": [compare("result", result, oracle)], "recorder": rec,
            "seconds": {"run": t2 - t1, "total": time.perf_counter() - t0},
            "extras": {k: (v if isinstance(v, (str, int, float, bool)) or v is None else _text(v))
                       for k, v in extras.items() if not isinstance(v, np.ndarray) and k != "sub_group_size"}}
