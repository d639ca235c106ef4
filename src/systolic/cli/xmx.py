"""``systolic xmx ...``: XMX platforms, one DPAS on random or given operands, GEMMs on .npy files, layouts."""

from __future__ import annotations

import click
import numpy as np

from . import emit_json
from .options import DST_TYPE_HELP, SuggestingGroup, device_option, path_option


@click.group("xmx", cls=SuggestingGroup)
def group():
    """XMX systolic arrays: platforms, DPAS/DPASW, GEMM as DPAS tiles, register layouts."""


@group.command("platforms")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def platforms(as_json):
    """The GPU platforms: GRF, exec size, DPASW, precisions, accumulator types, denormal rule."""
    from ..xmx.platform import PLATFORMS
    if as_json:
        emit_json([p.as_dict() for p in PLATFORMS.values()])
        return
    from rich.console import Console
    from rich.table import Table
    t = Table(title="XMX platforms")
    for col in ("name", "family", "GRF", "N", "DPASW", "precisions", "bf16/tf32 denormals", "aliases"):
        t.add_column(col)
    for p in PLATFORMS.values():
        d = p.as_dict()
        t.add_row(p.name, p.family, f"{p.num_grf} x {p.grf_bytes} B", str(p.exec_size), "yes" if p.has_dpasw else "no",
                  " ".join(d["precisions"]), p.denormals["bf16"], ", ".join(p.aliases))
    Console().print(t)


_FLOAT_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "bf8": "float8_e5m2", "hf8": "float8_e4m3fn",
                 "e2m1": "float4_e2m1fn"}


def _random_logical(rng, prec, shape):
    import ml_dtypes

    from .. import types as T
    from ..xmx.rules import canonical_precision
    p = canonical_precision(prec)
    t = T.get(p)
    if t.fmt is None:
        return rng.integers(t.min, t.max + 1, size=shape).astype(np.int64), p
    x = rng.standard_normal(shape)
    if p == "tf32":
        return x.astype(np.float32), p
    return x.astype(getattr(ml_dtypes, _FLOAT_DTYPES[p]) if p != "fp16" else np.float16), p


@group.command("dpas")
@device_option("gpu", "pvc", dest="platform", aliases=("--platform",))
@click.option("--precision", default="bf16", show_default=True,
              help="B's (Src1's) precision: s8 u8 s4 u4 s2 u2 bf16 fp16 tf32 bf8 hf8 e2m1.")
@click.option("--src2-precision", default=None, help="A's (Src2's) precision (default: --precision).")
@click.option("--dst-type", default=None, help=DST_TYPE_HELP)
@click.option("--m", "--rc", "rc", default=8, show_default=True, type=int, help="M (DPAS's repeat count), 1..8.")
@click.option("--model", default=None, help="Numerics model: stage, sequential, exact, block(L,F).")
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of the random operands.")
@click.option("--null-src0", is_flag=True, help="Src0 = null (C = 0).")
@path_option("spec", ("--spec", "--fast"), help="Spec path (pseudo-code) or fast path (vectorised, same bits).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def dpas_cmd(platform, precision, src2_precision, dst_type, rc, model, seed, null_src0, path, as_json):
    """Run one DPAS on random operands placed in a register file; show A, B, C and D."""
    from ..xmx import GRF, dpas
    from ..xmx import pack as PK
    from ..xmx.models import get_model
    from ..xmx.rules import canonical_precision, check, ops_per_chan, precision_class
    from .. import types as T
    from .inputs import seeded_rng
    rng = seeded_rng(seed)              # before any work: a negative seed is an InvalidValue, not numpy's error
    g = GRF(platform)
    P = g.platform
    gb = g.grf_bytes
    p1, p2 = canonical_precision(precision), canonical_precision(src2_precision or precision)
    is_int = precision_class(p1) == "int"
    dt = dst_type or ("int32" if is_int else "fp32")
    # every DPAS rule (rc 1..8, legal types, precisions on this platform) before any operand is built
    check(P, exec_size=None, sd=8, rc=rc, dst_type=dt, src0_type=None, src1_precision=p1, src2_precision=p2,
          dst=96 * gb, src0=None if null_src0 else 64 * gb, src1=32 * gb, src2=0)
    k = 8 * ops_per_chan(p1, p2)
    n = P.exec_size
    a, p2 = _random_logical(rng, p2, (rc, k))
    b, p1 = _random_logical(rng, p1, (k, n))
    acc_t = T.get(dt).name
    c = None if null_src0 else (rng.integers(-1000, 1000, (rc, n)) if is_int else rng.standard_normal((rc, n)))
    gb = g.grf_bytes
    off = dict(dst=96 * gb, src0=None if c is None else 64 * gb, src1=32 * gb, src2=0)
    g.write(0, PK.pack_src2(a, p2))
    g.write(32 * gb, PK.pack_src1(b, p1))
    if c is not None:
        g.write(64 * gb, PK.pack_acc(c.astype(np.int32) if is_int else c.astype(np.float32), acc_t))
    mdl = get_model(model, P)
    dpas(g, **off, dst_type=dt, src1_precision=p1, src2_precision=p2, rc=rc, model=mdl, path=path)
    d = PK.unpack_acc(g.read(off["dst"], rc * n * PK.acc_dtype(acc_t).itemsize), acc_t, rc, n)
    out = {"platform": P.name, "instruction": f"dpas.{p1}.{p2}.8.{rc} ({n}) r96 {'null' if c is None else 'r64'} "
                                              f"r32 r0", "model": mdl.label if not is_int else None,
           "A": np.asarray(a, dtype=np.float64 if not is_int else np.int64).tolist(),
           "B": np.asarray(b, dtype=np.float64 if not is_int else np.int64).tolist(),
           "C": None if c is None else np.asarray(c).tolist(), "D": d.astype(np.float64 if not is_int else np.int64).tolist()}
    if as_json:
        emit_json(out)
        return
    from rich.console import Console
    con = Console()
    con.print(f"[bold]{out['instruction']}[/bold] on {P.name}" + (f", model {out['model']}" if out["model"] else ""))
    with np.printoptions(precision=6, suppress=True, linewidth=160):
        con.print("D =", np.array(out["D"]))


def _load_npy(path: str, what: str):
    """np.load without pickles; unreadable or malformed files become InvalidValue."""
    from .inputs import load_npy
    return load_npy(path, what, rule="systolic xmx gemm: A, B, --c are .npy files (no pickles)")


def _with_dtype(x: np.ndarray, type_name: str | None, what: str) -> np.ndarray:
    """Apply ``--a-dtype``/``--b-dtype``.

    np.save writes ml_dtypes arrays (bfloat16, int4, float8_*, ...) as raw void data (``|V2``, ``|V1``), which
    np.load cannot type. The named systolic type reinterprets those bytes when the item sizes agree. Nothing is
    guessed: void data without a type is an error, and a typed array must already have the named dtype.
    """
    from .. import types as T
    from ..errors import InvalidValue
    if type_name is None:
        if x.dtype.kind == "V":
            raise InvalidValue(f"{what} holds untyped {x.dtype.itemsize}-byte elements (dtype {x.dtype.str}): "
                               f"np.save stores ml_dtypes arrays this way; name the type with --{what.lower()}-dtype",
                               rule="--a-dtype/--b-dtype: bf16 fp16 bf8 hf8 e2m1 s8 u8 s4 u4 s2 u2",
                               values={"operand": what, "dtype": x.dtype.str})
        return x
    t = T.get(type_name)
    want = t.dtype
    if want is None:
        raise InvalidValue(f"{t.name} has no numpy dtype to read {what} as (tf32: float32 data and --precision tf32)",
                           values={"operand": what, "type": t.name})
    if x.dtype == want:
        return x
    if x.dtype.kind != "V":
        raise InvalidValue(f"{what} has dtype {x.dtype}, not {want}: --{what.lower()}-dtype only types raw "
                           "(void) data and converts nothing", values={"operand": what, "dtype": str(x.dtype),
                                                                       "type": t.name})
    if x.dtype.itemsize != want.itemsize or x.dtype.fields is not None:
        raise InvalidValue(f"{what}'s {x.dtype.itemsize}-byte elements cannot be {t.name} "
                           f"({want.itemsize}-byte elements)",
                           values={"operand": what, "dtype": x.dtype.str, "type": t.name})
    return np.ascontiguousarray(x).view(want)


@group.command("gemm")
@click.argument("a_file", type=click.Path(exists=True, dir_okay=False))
@click.argument("b_file", type=click.Path(exists=True, dir_okay=False))
@click.option("--c", "c_file", type=click.Path(exists=True, dir_okay=False), help="Initial accumulator C (.npy).")
@device_option("gpu", "pvc", dest="platform", aliases=("--platform",))
@click.option("--model", default="stage", show_default=True)
@click.option("--precision", default=None, help="tf32 for float32 inputs.")
@click.option("--a-dtype", default=None,
              help="Element type of A's file when np.save stored it untyped (ml_dtypes: bf16, s4, hf8, ...).")
@click.option("--b-dtype", default=None, help="Element type of B's file (as --a-dtype).")
@click.option("--out", "out_file", type=click.Path(dir_okay=False), help="Write D to this .npy file.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary (and D when small).")
def gemm_cmd(a_file, b_file, c_file, platform, model, precision, a_dtype, b_dtype, out_file, as_json):
    """D = C + A @ B as chained DPAS tiles, on .npy files (A: M x K, B: K x N, ml_dtypes dtypes).

    np.save stores ml_dtypes arrays (bfloat16, int4, fp8...) untyped; give their types with --a-dtype/--b-dtype.
    """
    from ..xmx import matmul
    a = _with_dtype(_load_npy(a_file, "A"), a_dtype, "A")
    b = _with_dtype(_load_npy(b_file, "B"), b_dtype, "B")
    c = _load_npy(c_file, "C") if c_file else None
    d = matmul(a, b, c, device=platform, model=model, precision=precision)
    if out_file:
        from .inputs import write_output
        write_output(out_file, lambda f: np.save(f, d), "--out file")      # exactly that name (np.save(path)
        #                                                                    would append .npy to other names)
    summary = {"platform": platform, "model": model, "shape": list(d.shape), "dtype": str(d.dtype),
               "out": out_file}
    if d.size <= 4096:
        summary["D"] = d.astype(np.float64).tolist()
    if as_json:
        emit_json(summary)
    else:
        click.echo(f"D: {d.shape[0]} x {d.shape[1]} {d.dtype}" + (f" -> {out_file}" if out_file else ""))
        if d.size <= 256:
            click.echo(str(d))


@group.command("layout", hidden=True)
@device_option("gpu", "pvc", dest="platform", aliases=("--platform",))
@click.option("--precision", default="bf16", show_default=True, help="B's (Src1's) precision.")
@click.option("--src2-precision", default=None)
@click.option("--operand", default="src1", show_default=True, help="a, b, c, d or src2, src1, src0, dst.")
@click.option("--m", "--rc", "rc", default=8, show_default=True, type=int)
@click.option("--json", "as_json", is_flag=True)
def layout_cmd(platform, precision, src2_precision, operand, rc, as_json):
    """Which GRF dword holds which matrix elements: the old spelling of ``systolic layout table dpas OPERAND
    --by holder`` (the one register-layout command), kept for scripts."""
    from ..layout.operands import operand_name
    from ..xmx.layout import layout, operand_layout
    op = operand_name("dpas", operand)
    if as_json:
        emit_json(operand_layout(platform, precision, src2_precision or precision, op, rc))
        return
    from ..explorer import table
    click.echo(table(layout(platform, op, precision, src2_precision, rc=rc), by="holder"), nl=False)



