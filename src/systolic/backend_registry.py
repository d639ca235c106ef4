"""The engines' ``backend=`` argument: a registry the engines own and the integrations fill.

``systolic.amx.matmul`` and ``systolic.xmx.matmul`` take ``backend="auto" | "cpu" | <provider>``. The CPU path
is the engine itself; every other backend is a *provider* in a higher layer (today ``"cuda"``:
:mod:`systolic.gpu`) that registers its implementation of each engine entry point here::

    register("amx.matmul", "cuda", amx_kernels.matmul)

so the engines never import the layer above them (tests/test_layering.py). A provider is loaded on the first
lookup that needs it, found by the entry-point group ``systolic.backends`` (pyproject.toml:
``[project.entry-points."systolic.backends"]``; an installed third-party package can add a backend the same
way) or, in a source checkout that is not installed (``PYTHONPATH=src``), by the module name kept in
:data:`BUILTIN`. Loading a provider must not need its hardware: a provider registers functions that raise
:class:`systolic.errors.BackendUnavailable` themselves when they cannot run, after checking their arguments
(so a bad argument is the CPU path's error on every machine).

``"auto"`` runs the CPU path unless an input is claimed by a provider's detector (the CUDA provider claims
arrays that live on a CUDA device). Plain numpy inputs never load a provider.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable

import numpy as np

from .errors import BackendUnavailable, InvalidValue

__all__ = ["GROUP", "BUILTIN", "register", "register_detector", "lookup", "resolve", "names"]

#: the importlib.metadata entry-point group of backend providers; an entry point ``name = "module:function"``
#: names a function that takes no argument and registers the provider's implementations here
GROUP = "systolic.backends"

#: the providers shipped with systolic, by module name (what a source checkout without installed metadata uses)
BUILTIN = {"cuda": "systolic.gpu.register:register"}

_impls: dict[tuple[str, str], Callable] = {}             # (engine entry point, backend) -> implementation
_detectors: dict[str, Callable[[object], bool]] = {}     # backend -> "does this input live on my device?"
_loaded: set[str] = set()                                # providers whose loader has run
_all_loaded = False                                      # "auto" has loaded every provider it knows of
_lock = threading.RLock()                                # a provider's loader calls register() on this thread


def register(engine: str, backend: str, fn: Callable) -> None:
    """Make ``fn`` the implementation of ``engine`` (e.g. ``"amx.matmul"``) on ``backend`` (e.g. ``"cuda"``).

    ``fn`` takes the engine function's arguments less ``backend=``. Registering again replaces it."""
    if backend in ("auto", "cpu"):
        raise InvalidValue("'auto' and 'cpu' are the engines' own backends, not providers",
                           values={"engine": engine, "backend": backend})
    with _lock:
        _impls[(engine, backend)] = fn


def register_detector(backend: str, claims: Callable[[object], bool]) -> None:
    """``backend="auto"`` runs on ``backend`` when ``claims(x)`` is true for any input ``x`` (it must only look
    at the object: no device probe, no import of a heavy library)."""
    with _lock:
        _detectors[backend] = claims


def _entry_points() -> dict[str, object]:
    """The installed entry points of :data:`GROUP`, by name (read once: scanning the metadata costs)."""
    global _eps
    if _eps is None:
        from importlib.metadata import entry_points
        _eps = {ep.name: ep for ep in entry_points(group=GROUP)}
    return _eps


_eps: dict[str, object] | None = None


def names() -> tuple[str, ...]:
    """Every name ``backend=`` accepts: ``auto``, ``cpu``, then the providers (registered, installed, built in)."""
    with _lock:
        provided = {b for _, b in _impls} | set(_detectors) | set(BUILTIN) | set(_entry_points())
    return ("auto", "cpu", *sorted(provided))


def _load(backend: str) -> None:
    """Run ``backend``'s provider (entry point first, else :data:`BUILTIN`) once."""
    with _lock:
        if backend in _loaded:
            return
        _loaded.add(backend)
        ep = _entry_points().get(backend)
        target = ep.value if ep is not None else BUILTIN.get(backend)
        if target is None:                                 # registered by hand only: nothing to load
            return
        try:
            if ep is not None:
                fn = ep.load()
            else:
                mod, _, attr = target.partition(":")
                fn = getattr(importlib.import_module(mod), attr)
            fn()
        except Exception as e:                             # a broken provider is a typed error, never an ImportError
            _loaded.discard(backend)
            raise BackendUnavailable(f"the {backend} backend's provider could not be loaded: {e}",
                                     rule=f"entry point group {GROUP!r} or systolic.backend_registry.BUILTIN",
                                     values={"backend": backend, "provider": target}) from e


def _check_name(backend: str) -> None:
    if backend in ("auto", "cpu") or backend in BUILTIN:
        return
    with _lock:
        if any(b == backend for _, b in _impls) or backend in _detectors:
            return
    if backend not in _entry_points():
        known = names()
        # the message lists the names as the engines' docstrings do: "auto, cpu, cuda"
        raise InvalidValue("unknown backend", rule=", ".join(known), values={"backend": backend})


#: what numpy holds (arrays, numpy and Python scalars): inputs no provider claims, so "auto" on these loads nothing
_HOST = (np.ndarray, np.generic, int, float, complex, str, bytes)


def resolve(backend: str, *arrays) -> str:
    """The backend an engine call runs on: ``"cpu"`` or a provider's name.

    An unknown name is :class:`systolic.errors.InvalidValue`. ``"auto"`` is the first provider whose detector
    claims an input, else ``"cpu"``. A provider's name is returned as it is: no device is probed here (its
    implementation raises :class:`BackendUnavailable` when it cannot run).
    """
    if backend == "cpu":
        return backend
    if not isinstance(backend, str):
        raise InvalidValue("unknown backend", rule=", ".join(names()), values={"backend": backend})
    _check_name(backend)
    if backend != "auto":
        return backend
    for x in arrays:
        if x is not None and not isinstance(x, _HOST):
            return _claim(arrays)
    return "cpu"


def _claim(arrays) -> str:
    """"auto" with an input numpy does not hold: the provider whose detector claims one, else "cpu"."""
    global _all_loaded
    if not _all_loaded:                                    # once: every provider registers its detector
        for name in names()[2:]:
            try:
                _load(name)
            except BackendUnavailable:                     # a provider that cannot load claims no input
                continue
        _all_loaded = True
    for name, claims in tuple(_detectors.items()):
        for x in arrays:
            if x is not None and claims(x):
                return name
    return "cpu"


def lookup(engine: str, backend: str) -> Callable:
    """The implementation of ``engine`` on ``backend`` (a provider's name), loading the provider on first use.

    :class:`BackendUnavailable` when no provider supplies it."""
    fn = _impls.get((engine, backend))
    if fn is not None:
        return fn
    _load(backend)
    fn = _impls.get((engine, backend))
    if fn is None:
        raise BackendUnavailable(f"the {backend} backend has no {engine}",
                                 rule=f"providers register their engines in systolic.backend_registry "
                                      f"(entry point group {GROUP!r})",
                                 values={"engine": engine, "backend": backend})
    return fn
