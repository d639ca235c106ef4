"""``systolic study SCRIPT.py``: systolic.torch.compare per engine and data shard on a Dask cluster, merged."""

from __future__ import annotations

from pathlib import Path

import click

from . import emit_json
from .vectors import cluster_options


@click.command("study")
@click.argument("script", type=click.Path(exists=True, dir_okay=False))
@click.option("--engines", required=True, metavar="E1,E2,...",
              help="family:device[:precision[:model]], e.g. amx:spr,xmx:pvc:bf16:stage,xmx:dg2:int8.")
@click.option("--shards", type=int, default=1, show_default=True, help="Data slices (one task per engine and slice).")
@click.option("--k", "k", type=int, default=5, show_default=True, help="top-k agreement.")
@click.option("--no-fp32", is_flag=True, help="Leave out the plain fp32 PyTorch row.")
@click.option("--out", "out", type=click.Path(file_okay=False), default=None,
              help="Write report.json, report.txt and report.png (the plot needs matplotlib) here.")
@cluster_options
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.option("--json", "as_json", is_flag=True, help="Print the merged report as JSON.")
def command(script, engines, shards, k, no_fp32, out, gpu, workers, scheduler, quiet, as_json):
    """Run a study script (defines model() and data()) under every engine, sharded over the cluster."""
    from ..distributed.cluster import open_client
    from ..distributed.progress import progress_bar
    from ..distributed.study import parse_engines, prepare_study, run_study
    from ..errors import InvalidValue
    engs = parse_engines(engines)
    if gpu:
        engs = [(n, {**o, "backend": "cuda"}) for n, o in engs]
    plan = prepare_study(script, engs, shards=shards, k=k, include_fp32=not no_fp32)   # before a cluster starts
    if out:
        d = Path(out)
        try:
            d.mkdir(parents=True, exist_ok=True)
        except OSError as exc:                    # under a file, no permission
            raise InvalidValue(f"cannot make the report directory {out}: {exc.strerror or exc}",
                               rule="--out: a directory that exists or can be created", values={"out": out}) from exc
    with open_client(scheduler, workers, gpu) as client, \
            progress_bar("study", unit="tasks", enabled=not quiet and not as_json) as bar:
        rep = run_study(client, script, engs, on_progress=bar, plan=plan)
    if out:
        (d / "report.json").write_text(rep.to_json(indent=1) + "\n")
        (d / "report.txt").write_text(rep.table() + "\n")
        try:
            rep.plot(d / "report.png")
        except Exception as exc:                  # noqa: BLE001 - the plot is optional (matplotlib)
            click.echo(f"no plot: {exc}", err=True)
    if as_json:
        emit_json(rep.as_dict())
    else:
        click.echo(rep.table())
