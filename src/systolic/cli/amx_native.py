"""``systolic amx native-check`` and ``systolic amx asm``: native AMX status, and real AMX assembly anywhere."""

from __future__ import annotations

import click

from . import emit_json
from .options import device_option


@click.command("native-check")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--silicon", is_flag=True,
              help="Also replay the recorded silicon vectors (tests/data/amx_silicon) on the native backend.")
def native_check(as_json, silicon):
    """Can this machine run AMX natively? If not, say why (CPU flags, LLVM, Linux tile-data permission)."""
    from .. import host
    from ..amx import native
    ok, why = native.availability()
    perm = host.request_tile_permission()
    info = {
        "available": ok, "reason": why, "cpu": host.cpu_model_name(), "amx_features": host.amx_features(),
        "llvm_amx_features": host.llvm_host_features(), "llvm": host.llvm_version(),
        "tile_data_permission": {"granted": perm.granted, "reason": perm.reason},
    }
    if ok:
        from ..amx import jit
        info["native_instructions"] = sorted(m for m in jit.DOT_INTRINSICS if native.host_supports(m))
    if silicon and ok:
        info["silicon_replay"] = _silicon_replay()
    if as_json:
        emit_json(info)
        return
    click.echo(f"native AMX: {'available' if ok else 'unavailable'}" + ("" if ok else f" ({why})"))
    click.echo(f"CPU: {info['cpu']}; AMX: {', '.join(info['amx_features']) or 'none'}; "
               f"LLVM sees: {', '.join(info['llvm_amx_features']) or 'none'}")
    click.echo(f"Linux tile data: {'granted' if perm.granted else 'not granted: ' + perm.reason}")
    if "silicon_replay" in info:
        for fam, (agree, total) in info["silicon_replay"].items():
            click.echo(f"  {fam}: {agree}/{total} recorded silicon operations reproduced natively")


def _silicon_replay() -> dict:
    import os
    import sys

    import numpy as np
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
    tools = os.path.join(root, "tools", "silicon")
    data = os.path.join(root, "tests", "data", "amx_silicon", "full.npz")
    if not (os.path.isdir(tools) and os.path.exists(data)):
        return {}
    sys.path.insert(0, tools)
    import replay as R
    import vectors as V

    from ..amx import TileMachine
    full = np.load(data)
    out = {}
    for fam in V.FAMILIES:
        m = TileMachine(backend="native")
        agree = total = 0
        for _, op, outs in R.full_ops(full, fam):
            got = R.replay(fam, op, m)
            total += 1
            agree += all(np.array_equal(got[k], outs[k]) for k in outs)
        out[fam] = (agree, total)
    return out


#: the LLVM release that first knows each CPU model's name (its X86.td processor; clang release notes:
#: sapphirerapids 12, emeraldrapids and graniterapids 16, graniterapids-d 17, diamondrapids 20). An LLVM that does
#: not know the name warns "'x' is not a recognized processor" and then aborts the whole process.
LLVM_CPU_SINCE = {"sapphirerapids": 12, "emeraldrapids": 16, "graniterapids": 16, "graniterapids-d": 17,
                  "diamondrapids": 20}


def llvm_cpu(cpu: str, mnemonic: str) -> str:
    """The LLVM CPU name for systolic's CPU model ``cpu`` (a name or alias of ``systolic amx cpus``), checked
    before LLVM sees it: an unknown or AMX-less CPU is an InvalidValue, a CPU without ``mnemonic``'s AMX
    extension, or an LLVM too old for the CPU or the extension, an UnsupportedCombination."""
    from ..amx import jit
    from ..amx.cpu import CPUS, INSTRUCTION_FEATURE, get_cpu
    from ..errors import InvalidValue, UnsupportedCombination
    names = ", ".join(f"{c.name} ({', '.join(c.aliases)})" if c.aliases else c.name for c in CPUS.values())
    try:
        model = get_cpu(cpu)
    except InvalidValue:
        raise InvalidValue(f"--device {cpu!r} is not an AMX CPU model (systolic amx cpus lists them)",
                           rule="systolic amx asm --device: one of " + names, values={"cpu": cpu}) from None
    feature = INSTRUCTION_FEATURE[mnemonic]
    if not model.supports(mnemonic):
        raise UnsupportedCombination(f"{model.name} has no {mnemonic.upper()}: it needs {feature.upper()}",
                                     rule="SDM/ISE: a TMUL instruction needs its CPUID feature",
                                     values={"cpu": model.name, "mnemonic": mnemonic, "needs": feature,
                                             "cpu_features": sorted(model.features)})
    major = jit.llvm_version()[0]
    since = LLVM_CPU_SINCE.get(model.name)
    if since is None or major < since:
        raise UnsupportedCombination(f"this LLVM ({major}) does not know the CPU name {model.name!r}",
                                     rule="LLVM X86 processors: " + ", ".join(f"{k} since LLVM {v}"
                                                                              for k, v in LLVM_CPU_SINCE.items()),
                                     values={"cpu": model.name, "llvm": major})
    if jit.DOT_INTRINSICS[mnemonic][1] not in jit.supported_features():
        raise UnsupportedCombination(f"this LLVM ({major}) cannot compile {mnemonic.upper()}",
                                     rule="LLVM AMX extensions: " + ", ".join(jit.supported_features()),
                                     values={"mnemonic": mnemonic, "llvm": major})
    return model.name


def demo_module(mnemonic: str):
    """The one-tile demo as an ``llvmlite.ir`` module: ``amx_demo(cfg, c, a, b)`` loads the 64-byte tile
    configuration, C into tmm0, A into tmm1 and B into tmm2 (stride 64 bytes each), runs ``mnemonic``
    (tmm0 += tmm1 . tmm2), stores tmm0 back to C and releases the tiles."""
    from llvmlite import ir

    from ..amx import isa
    from ..jit.build import PTR, VOID, define
    from ..jit.x86amx import Amx
    m = ir.Module(name="amx_demo")
    _, b, (cfg, c, a, bm) = define(m, "amx_demo", VOID, [PTR] * 4, names=("cfg", "c", "a", "b"))
    amx = Amx(m)
    amx.ldtilecfg(b, cfg)
    for tile, ptr in ((0, c), (1, a), (2, bm)):
        amx.tileloadd(b, tile, ptr, 64)
    amx.dot(b, isa.get(mnemonic).intrinsic, 0, 1, 2)
    amx.tilestored(b, 0, c, 64)
    amx.tilerelease(b)
    b.ret_void()
    return m


@click.command("asm")
@click.option("--mnemonic", default="tdpbf16ps", show_default=True, help="TMUL instruction of the demo kernel.")
@click.option("--gemm", is_flag=True, help="Print the native GEMM micro-kernel instead of the one-tile demo.")
@device_option("cpu", "spr", dest="cpu", aliases=("--cpu",),
               help="AMX CPU to compile for (systolic amx cpus: a name or alias, e.g. spr, gnr); it must have "
                   "the --mnemonic's AMX extension.")
@click.option("--ir", "show_ir", is_flag=True, help="Print the LLVM IR instead of the assembly.")
def asm(mnemonic, gemm, cpu, show_ir):
    """Real AMX assembly from LLVM (llvmlite), on any machine: a one-tile demo or the GEMM micro-kernel."""
    from ..amx import jit, native_gemm
    from ..errors import InvalidValue
    if mnemonic not in jit.DOT_INTRINSICS:
        raise InvalidValue("unknown TMUL instruction", rule="TMUL mnemonics: " + ", ".join(jit.DOT_INTRINSICS),
                           values={"mnemonic": mnemonic})
    llvm_name = llvm_cpu(cpu, mnemonic)       # before LLVM sees it: an unknown name aborts the process there
    module = native_gemm.kernel_ir(mnemonic) if gemm else demo_module(mnemonic)
    click.echo(str(module) if show_ir else jit.emit_asm(module, cpu=llvm_name))


commands = [native_check, asm]
