"""AMX: the tile machine (emulated bit-exactly, or native), CPU models, and whole GEMMs as AMX computes them.

* :class:`TileConfig` - the 64-byte TILECFG;
* :class:`TileMachine` - state + one method per instruction, every #GP/#UD/fault rule of the SDM;
* :func:`matmul` - a whole GEMM exactly as a tiled AMX kernel computes it;
* :data:`CPUS` / :func:`get_cpu` - CPU models as data (features, palettes, CPUID 0x1D/0x1E).
"""

from .backends import backend_names, get_backend, register_backend
from .cpu import CPUS, CpuModel, Palette, get_cpu
from .machine import TMUL_MNEMONICS, TileMachine
from .tilecfg import TileConfig

__all__ = ["TileConfig", "TileMachine", "matmul", "CPUS", "CpuModel", "Palette", "get_cpu", "register_backend",
           "get_backend", "backend_names", "TMUL_MNEMONICS"]


def __getattr__(name):
    if name == "matmul":
        from .gemm import matmul
        return matmul
    raise AttributeError(name)
