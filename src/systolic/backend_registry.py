"""The engines' ``backend=`` argument: a registry the engines own and the integrations fill.

``backend=`` says only where the work runs (docs/ARCHITECTURE.md "Vocabulary"). ``systolic.amx.matmul`` and
``systolic.xmx.matmul`` take ``backend="auto" | "cpu" | <provider>``. The CPU path is the engine itself; every
other backend is a *provider* in a higher layer (today ``"cuda"``: :mod:`systolic.gpu`) that registers its
implementation of each engine entry point here::

    register("amx.matmul", "cuda", amx_kernels.matmul)

so the engines never import the layer above them (tests/test_layering.py). The providers are records of one
:class:`systolic.registry.Registry` (:data:`PROVIDERS`: the backend names, "did you mean" for a mistyped one).
A provider is loaded on the first lookup that needs it, found by the entry-point group ``systolic.backends``
(pyproject.toml: ``[project.entry-points."systolic.backends"]``; an installed third-party package can add a
backend the same way) or, in a source checkout that is not installed (``PYTHONPATH=src``), by the loader the
package root ``systolic/__init__.py`` hands :func:`provide` (the root sits above every layer, so this module
names no provider). Loading a provider must not need its hardware: a provider registers functions that raise
:class:`systolic.errors.BackendUnavailable` themselves when they cannot run, after checking their arguments
(so a bad argument is the CPU path's error on every machine).

``"auto"`` runs the CPU path unless an input is claimed by a provider's detector (the CUDA provider claims
arrays that live on a CUDA device). Plain numpy inputs never load a provider.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .errors import BackendUnavailable, InvalidValue
from .registry import Registry

__all__ = ["GROUP", "Provider", "PROVIDERS", "provide", "providers", "register", "register_detector", "lookup",
           "resolve", "names"]

#: the importlib.metadata entry-point group of backend providers; an entry point ``name = "module:function"``
#: names a function that takes no argument and registers the provider's implementations here
GROUP = "systolic.backends"

#: the engines' own backends: no provider runs them
OWN = ("auto", "cpu")


@dataclass(frozen=True)
class Provider:
    """One ``backend=`` name. ``load``: fills the registry (:func:`register`, :func:`register_detector`), run
    once on first use; None: nothing to load (the engines' own backends, a provider registered by hand).
    ``source``: where it comes from (an entry point's ``module:function``), named by a load failure."""

    name: str
    load: Callable[[], None] | None = None
    source: str = ""


def _registry() -> Registry[Provider]:
    reg: Registry[Provider] = Registry("backend", rule="", key="backend", kind=None, normalize=str,
                                       listed=lambda r: names())
    for own in OWN:
        reg.add(own, Provider(own, source="the engines' own"))
    return reg


#: every backend name -> its Provider (case-sensitive: "CUDA" is not "cuda")
PROVIDERS: Registry[Provider] = _registry()

_impls: dict[tuple[str, str], Callable] = {}             # (engine entry point, backend) -> implementation
_detectors: dict[str, Callable[[object], bool]] = {}     # backend -> "does this input live on my device?"
_loaded: set[str] = set()                                # providers whose loader has run
_all_loaded = False                                      # "auto" has loaded every provider it knows of
_eps_read = False                                        # the installed entry points are in PROVIDERS
_lock = threading.RLock()                                # a provider's loader calls register() on this thread


def provide(name: str, load: Callable[[], None] | None, source: str = "") -> Provider:
    """Make ``name`` a backend whose implementations ``load()`` registers on first use (``source``: where it
    comes from, for the error when it cannot load). An installed entry point of the same name replaces it."""
    if name in OWN:
        raise InvalidValue("'auto' and 'cpu' are the engines' own backends, not providers", values={"backend": name})
    with _lock:
        return PROVIDERS.add(name, Provider(name, load, source))


def providers() -> list[Provider]:
    """The provider records (the engines' own backends excluded), installed entry points included."""
    _read_entry_points()
    return [p for p in PROVIDERS if p.name not in OWN]


def _by_hand(backend: str) -> None:
    """A backend named only by register()/register_detector() becomes a provider with nothing to load."""
    if backend not in PROVIDERS:
        PROVIDERS.add(backend, Provider(backend, source="registered by hand"))


def register(engine: str, backend: str, fn: Callable) -> None:
    """Make ``fn`` the implementation of ``engine`` (e.g. ``"amx.matmul"``) on ``backend`` (e.g. ``"cuda"``).

    ``fn`` takes the engine function's arguments less ``backend=``. Registering again replaces it."""
    if backend in OWN:
        raise InvalidValue("'auto' and 'cpu' are the engines' own backends, not providers",
                           values={"engine": engine, "backend": backend})
    with _lock:
        _by_hand(backend)
        _impls[(engine, backend)] = fn


def register_detector(backend: str, claims: Callable[[object], bool]) -> None:
    """``backend="auto"`` runs on ``backend`` when ``claims(x)`` is true for any input ``x`` (it must only look
    at the object: no device probe, no import of a heavy library)."""
    with _lock:
        _by_hand(backend)
        _detectors[backend] = claims


def _entry_point_loader(ep) -> Callable[[], None]:
    return lambda: ep.load()()


def _read_entry_points() -> None:
    """The installed entry points of :data:`GROUP` become providers (once: scanning the metadata costs); an
    entry point replaces a provider of the same name that has not loaded yet (installed metadata wins)."""
    global _eps_read
    if _eps_read:
        return
    from importlib.metadata import entry_points
    with _lock:
        for ep in entry_points(group=GROUP):
            if ep.name not in OWN and ep.name not in _loaded:
                PROVIDERS.add(ep.name, Provider(ep.name, _entry_point_loader(ep), ep.value))
        _eps_read = True


def names() -> tuple[str, ...]:
    """Every name ``backend=`` accepts: ``auto``, ``cpu``, then the providers (registered, installed, built in)."""
    _read_entry_points()
    with _lock:
        return (*OWN, *sorted(n for n in PROVIDERS.names() if n not in OWN))


def _load(backend: str) -> None:
    """Run ``backend``'s provider loader once."""
    _read_entry_points()
    with _lock:
        if backend in _loaded:
            return
        p = PROVIDERS.get(backend) if backend in PROVIDERS else Provider(backend)
        _loaded.add(backend)
        if p.load is None:                                 # registered by hand only (or unknown): nothing to load
            return
        try:
            p.load()
        except Exception as e:                             # a broken provider is a typed error, never an ImportError
            _loaded.discard(backend)
            raise BackendUnavailable(f"the {backend} backend's provider could not be loaded: {e}",
                                     rule=f"entry point group {GROUP!r} or systolic.backend_registry.provide",
                                     values={"backend": backend, "provider": p.source}) from e


def _check_name(backend) -> None:
    """An unknown name is the registry's InvalidValue ("unknown backend 'x' (did you mean ...)", rule: the
    names ``backend=`` accepts)."""
    if isinstance(backend, str) and backend in PROVIDERS:
        return
    _read_entry_points()
    if not isinstance(backend, str) or backend not in PROVIDERS:
        raise PROVIDERS.unknown(backend)


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
