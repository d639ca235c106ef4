"""One vocabulary for every verb of the command line (issue 27): the options that name the same thing are spelled
the same way everywhere, and a mistyped name is answered with the close ones.

* ``--device`` names the hardware in every command (``-d`` for short), and every alias of a device is accepted
  (``spr`` = ``sapphirerapids`` = ``intel_cpu_spr``; ``pvc`` = ``xehpc`` = ``intel_gpu_pvc``). The old names,
  ``--cpu`` and ``--platform`` (``-p`` in ``systolic visa``), stay as hidden aliases.
* ``--dst-type`` takes the element-type names of ``systolic types`` (int32, u32, fp32, bf16, fp16) and their vISA
  spellings (d, ud, f, bf, hf) everywhere.
* ``--m`` is M (the rows of A, C and D) everywhere; ``--rc`` (DPAS's repeat count) is its alias.
* Operands are named either way everywhere: ``a``/``b``/``c``/``d`` or the instruction's ``src0``/``src1``/
  ``src2``/``dst`` (docs/glossary.md has the table per engine).
"""

from __future__ import annotations

import functools

import click

__all__ = ["SuggestingGroup", "device_option", "DEVICE_HELP", "DST_TYPE_HELP", "M_HELP"]

DST_TYPE_HELP = ("Dst/Src0 (C and D) type: int32, u32, fp32, bf16, fp16 (vISA's d, ud, f, bf, hf too); default: "
                 "int32 for integer inputs, fp32 for floats.")
M_HELP = "M: rows of A, C and D (DPAS's repeat count; --rc is the same option)."
DEVICE_HELP = {
    "cpu": "AMX CPU: spr, emr, gnr, gnr-d, dmr (any alias: sapphirerapids, intel_cpu_spr, ...)",
    "gpu": "XMX GPU: dg2, pvc, bmg, lnl, xe3p (any alias: xehpc, ponte-vecchio, intel_gpu_pvc, arl, ...)",
    "sycl": "SYCL device: spr, emr, gnr, dmr, dg2, arl, pvc, bmg, lnl (any alias)",
    "any": "device: an AMX CPU (spr, gnr, ...) or an XMX GPU (pvc, dg2, bmg, ...), any alias",
}


class SuggestingGroup(click.Group):
    """A group whose "No such command" names the close commands."""

    def resolve_command(self, ctx, args):
        name = args[0] if args else None
        if name is not None and not name.startswith("-") and self.get_command(ctx, name) is None:
            from ..suggest import did_you_mean
            ctx.fail(f"No such command {name!r}{did_you_mean(name, self.list_commands(ctx))}. "
                     f"'{ctx.command_path} --help' lists them.")
        return super().resolve_command(ctx, args)


def normalize_device(value: str | None, kind: str) -> str | None:
    """The name the command's engine takes for any alias of a device of ``kind`` (cpu: the AMX CPU model;
    gpu: the XMX platform; sycl: the SYCL device; any: unchanged)."""
    if value is None or kind == "any":
        return value
    from ..run import devices as D
    return {"cpu": D.amx_cpu, "gpu": D.xmx_platform, "sycl": D.sycl_device}[kind](value)


def device_option(kind: str, default: str | None = None, *, dest: str = "device", aliases=("--cpu", "--platform"),
                  help: str | None = None, normalize: bool = True):
    """``--device/-d`` (plus the old spellings in ``aliases``, hidden) for a command whose engine is ``kind``
    (cpu, gpu, sycl, any); the function gets the value, normalised to its engine's name, as ``dest``."""
    text = (help or DEVICE_HELP[kind]) + (f" [default: {default}]" if default else "")

    def deco(f):
        @functools.wraps(f)
        def wrapper(*a, **kw):
            given = [(o, kw.pop(f"_device_alias_{i}", None)) for i, o in enumerate(aliases)]
            value = kw.pop("_device", None)
            names = [("--device", value)] if value is not None else []
            names += [(o, v) for o, v in given if v is not None]
            if len({v for _, v in names}) > 1:
                raise click.UsageError(" and ".join(f"{o} {v}" for o, v in names) + " name two devices; give one "
                                       "--device")
            value = names[0][1] if names else default
            kw[dest] = normalize_device(value, kind) if normalize else value
            return f(*a, **kw)

        for i, o in reversed(list(enumerate(aliases))):
            wrapper = click.option(*o.split("/"), f"_device_alias_{i}", default=None, hidden=True)(wrapper)
        return click.option("--device", "-d", "_device", default=None, metavar="DEVICE", help=text)(wrapper)
    return deco


def path_option(default: str = "spec", aliases=("--spec", "--fast"), help: str | None = None):
    """``--path spec|fast`` (docs/ARCHITECTURE.md "Vocabulary") plus the older flags in ``aliases`` (hidden, still
    working: ``--fast`` is ``--path fast``); the function gets ``path``. Two spellings naming different paths are
    a usage error (the older ``--spec --fast`` pair too: it used to mean whichever came last)."""
    text = (help or "Spec path (the manual, transcribed) or fast path (vectorised, proven bit-identical).") \
        + f" [default: {default}]"

    def deco(f):
        @functools.wraps(f)
        def wrapper(*a, **kw):
            value = kw.pop("_path", None)
            names = [("--path", value)] if value is not None else []
            names += [(o, o[2:]) for o in aliases if kw.pop(f"_path_alias_{o[2:]}", False)]
            if len({v for _, v in names}) > 1:
                raise click.UsageError(" and ".join(o if o != "--path" else f"--path {v}" for o, v in names)
                                       + " name two paths; give one --path")
            kw["path"] = names[0][1] if names else default
            return f(*a, **kw)

        for o in reversed(aliases):
            wrapper = click.option(o, f"_path_alias_{o[2:]}", is_flag=True, default=False, hidden=True)(wrapper)
        return click.option("--path", "_path", type=click.Choice(["spec", "fast"]), default=None, help=text)(wrapper)
    return deco
