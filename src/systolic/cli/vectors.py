"""``systolic vectors generate|verify``: test-vector campaigns on a Dask cluster (docs/distributed.md)."""

from __future__ import annotations

import sys

import click

from . import emit_json
from .options import DST_TYPE_HELP, SuggestingGroup


def cluster_options(f):
    """--scheduler / --workers / --gpu, shared by every distributed command."""
    f = click.option("--gpu", is_flag=True,
                     help="One worker per visible CUDA GPU; results computed with backend=cuda.")(f)
    f = click.option("--workers", type=int, default=None,
                     help="Worker processes of the local cluster (default: this machine's CPU count).")(f)
    f = click.option("--scheduler", default=None, metavar="tcp://HOST:8786",
                     help="Join this Dask scheduler instead of starting a local cluster (default: "
                          "$SYSTOLIC_SCHEDULER).")(f)
    return f


def _shape(text):
    if text is None:
        return None
    try:
        m, k, n = (int(x) for x in text.split(","))
    except ValueError:
        raise click.BadParameter("M,K,N: three integers (rows, K dwords, N dwords)") from None
    return (m, k, n)


def _backend(backend, gpu, path):
    """(backend, path) of the options: ``--backend spec`` is the cpu backend's spec path (``--path spec``; a
    ``--path fast`` beside it is a usage error); ``path`` None: not given (fast)."""
    if gpu and backend not in (None, "cuda"):
        raise click.BadParameter(f"--gpu computes with backend cuda, not {backend}", param_hint="--backend")
    backend = "cuda" if gpu else (backend or "cpu")
    if backend == "spec":
        if path not in (None, "spec"):
            raise click.UsageError(f"--backend spec is the older spelling of --backend cpu --path spec, not the "
                                   f"--path {path} also given; give --backend cpu --path ...")
        backend, path = "cpu", "spec"
    path = "fast" if path is None else path
    if path == "spec" and backend != "cpu":
        raise click.BadParameter(f"the spec path runs on the cpu backend, not {backend}", param_hint="--path")
    return backend, path


def _path_option(f):
    return click.option("--path", type=click.Choice(["fast", "spec"]), default=None,
                        help="cpu backend: the fast path or the spec path (the manual's pseudo-code). "
                             "[default: fast]")(f)


@click.group("vectors", cls=SuggestingGroup)
def group():
    """Test-vector campaigns: generate bit-exact vectors on a cluster, verify them (docs/distributed.md)."""


@group.command("generate")
@click.option("--engine", required=True, help="amx:<cpu> (systolic amx cpus) or xmx:<platform> (systolic xmx platforms); any alias, SYCL names included (amx:intel_cpu_spr, xmx:arl).")
@click.option("--instruction", default=None, help="AMX TMUL mnemonic (tdpbf16ps, tdpbssd, ...); XMX: dpas.")
@click.option("--precision", default=None, help="XMX: bf16, fp16, tf32, s8, ... or AxB (Src2 x Src1), e.g. s8xu4.")
@click.option("--model", default=None, help="XMX float numerics model (stage, sequential, exact, block(L,F)).")
@click.option("--dst-type", default=None, help="XMX: " + DST_TYPE_HELP)
@click.option("--m", "--rc", "rc", type=int, default=None, help="XMX: M (DPAS's repeat count), 1..8 (default 8).")
@click.option("--shape", default=None, metavar="M,K,N", help="AMX: rows, K dwords, N dwords (default 16,16,16).")
@click.option("--profile", default="random", show_default=True,
              help="random|specials|denormals|ftz-window|cancellation (float), random|extremes|wrap (integer), all.")
@click.option("--count", type=int, default=1024, show_default=True, help="Vectors in the campaign.")
@click.option("--seed", type=int, default=0, show_default=True, help="Campaign seed (shard i uses (seed, i)).")
@click.option("--shard-size", type=int, default=256, show_default=True, help="Vectors per shard file.")
@click.option("--out", "out", required=True, type=click.Path(file_okay=False), help="Output directory.")
@click.option("--format", "fmt", type=click.Choice(["parquet", "npz", "text"]), default="parquet",
              show_default=True, help="Shard file format.")
@click.option("--backend", type=click.Choice(["cpu", "spec", "native", "cuda"]), default=None,
              help="Where workers compute results (default cpu; --gpu: cuda; spec = cpu with --path spec).")
@_path_option
@cluster_options
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary.")
def generate_cmd(engine, instruction, precision, model, dst_type, rc, shape, profile, count, seed, shard_size, out,
                 fmt, backend, path, gpu, workers, scheduler, quiet, as_json):
    """Generate a campaign (resumes when OUT holds the same one: digest-verified shards are kept)."""
    from ..distributed.campaign import Campaign, generate, open_directory
    from ..distributed.cluster import open_client
    from ..distributed.kinds import Spec
    from ..distributed.progress import progress_bar
    spec = Spec(engine=engine, instruction=instruction, precision=precision, model=model, dst_type=dst_type, rc=rc,
                shape=_shape(shape))
    campaign = Campaign(spec, profile, count, seed, shard_size, fmt).canonical()   # checked before a cluster starts
    backend, path = _backend(backend, gpu, path)
    open_directory(campaign, out)                  # the directory and a manifest already there, likewise
    notes = []
    with open_client(scheduler, workers, gpu) as client, \
            progress_bar("generate", enabled=not quiet and not as_json) as bar:
        res = generate(client, campaign, out, backend=backend, path=path, on_progress=bar, on_event=notes.append)
    rate = res.vectors / res.seconds if res.seconds else 0.0
    summary = {"out": str(out), "shards": len(res.manifest["shards"]), "vectors": res.manifest["vector_count"],
               "computed_shards": len(res.computed), "skipped_shards": len(res.skipped),
               "rejected_shards": [{"index": i, "reason": r} for i, r in res.rejected],
               "vectors_computed": res.vectors, "seconds": round(res.seconds, 3),
               "vectors_per_second": round(rate, 1), "backend": backend, "path": path}
    if as_json:
        emit_json(summary)
        return
    for n in notes:
        click.echo(n, err=True)
    click.echo(f"{out}: {summary['vectors']} vectors in {summary['shards']} shards ({len(res.computed)} computed, "
               f"{len(res.skipped)} kept after digest check) in {res.seconds:.2f} s, {rate:,.0f} vectors/s "
               f"({backend})")


@group.command("verify")
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@click.option("--backend", type=click.Choice(["cpu", "spec", "native", "cuda"]), default=None,
              help="Recompute results with this backend (default cpu; --gpu: cuda; native: this CPU's AMX; spec = "
                   "cpu with --path spec).")
@_path_option
@cluster_options
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def verify_cmd(directory, backend, path, gpu, workers, scheduler, quiet, as_json):
    """Recompute every shard on the cluster; exit status 1 on a bad shard or a mismatching row."""
    from ..distributed.campaign import read_campaign, verify
    from ..distributed.cluster import open_client
    from ..distributed.progress import progress_bar
    backend, path = _backend(backend, gpu, path)
    read_campaign(directory)                       # the manifest, checked before a cluster starts
    with open_client(scheduler, workers, gpu) as client, \
            progress_bar("verify", enabled=not quiet and not as_json) as bar:
        res = verify(client, directory, backend=backend, path=path, on_progress=bar)
    if as_json:
        emit_json({"ok": res.ok, "shards": res.shards, "vectors_checked": res.vectors,
                   "bad_shards": res.bad_shards, "mismatched_rows": res.mismatched_rows,
                   "mismatches": res.mismatches, "seconds": round(res.seconds, 3), "backend": backend,
                   "path": path})
    else:
        for b in res.bad_shards:
            what = f"bad shard {b['index']} ({b['file']})" if b["index"] is not None else b["file"]
            click.echo(f"{what}: {b['reason']}")
        for m in res.mismatches:
            click.echo(f"mismatch: shard {m['shard']} row {m['row']} (vector {m['vector']}) image {m['image']} "
                       f"byte {m['byte']}: stored 0x{m['stored']:02x}, recomputed 0x{m['recomputed']:02x}")
        state = "ok" if res.ok else "FAILED"
        click.echo(f"{directory}: {state}: {res.vectors} vectors in {res.shards} shards recomputed with {backend}, "
                   f"{len(res.bad_shards)} bad shards, {res.mismatched_rows} mismatching rows ({res.seconds:.2f} s)")
    if not res.ok:
        sys.exit(1)
