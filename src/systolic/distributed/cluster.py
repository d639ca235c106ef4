"""Which Dask cluster a command runs on.

* default: a ``distributed.LocalCluster`` of worker *processes* on this machine, one thread each (the engines
  are CPU-bound Python + numpy: processes, not threads, scale), ``--workers N`` of them (default: the CPU count);
* ``--scheduler tcp://HOST:8786`` or the environment variable ``SYSTOLIC_SCHEDULER``: join an existing cluster
  (``dask scheduler`` / ``dask worker``: docs/distributed.md);
* ``--gpu``: one worker process per visible CUDA GPU, each seeing only its own (``CUDA_VISIBLE_DEVICES``), with
  the resource ``GPU=1``; the commands then compute with ``backend="cuda"``.

Dask's nanny sets ``OMP_NUM_THREADS`` / ``MKL_NUM_THREADS`` / ``OPENBLAS_NUM_THREADS`` to 1 in each worker
process, so N workers use N cores.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess

import numpy as np

from ..errors import BackendUnavailable, InvalidValue

__all__ = ["open_client", "gpu_count", "ENV_SCHEDULER"]

ENV_SCHEDULER = "SYSTOLIC_SCHEDULER"


def gpu_count() -> int:
    """Visible CUDA GPUs: ``CUDA_VISIBLE_DEVICES`` when set, else ``nvidia-smi -L`` (0 when neither says any)."""
    vis = os.environ.get("CUDA_VISIBLE_DEVICES")
    if vis is not None:
        return len([d for d in vis.split(",") if d.strip() and d.strip() != "-1"])
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


def _gpu_ids() -> list[str]:
    vis = os.environ.get("CUDA_VISIBLE_DEVICES")
    if vis is not None:
        return [d.strip() for d in vis.split(",") if d.strip() and d.strip() != "-1"]
    return [str(i) for i in range(gpu_count())]


@contextlib.contextmanager
def open_client(scheduler: str | None = None, workers: int | None = None, gpu: bool = False,
                threads_per_worker: int = 1, quiet: bool = True):
    """A ``distributed.Client`` on the chosen cluster (closed, and a local cluster shut down, on exit)."""
    try:
        from distributed import Client, LocalCluster, Nanny, Scheduler, SpecCluster
    except ImportError as exc:
        raise BackendUnavailable("dask distributed is not installed", rule="pip install 'systolic[distributed]'",
                                 values={"error": str(exc)}) from exc
    if scheduler is not None and not isinstance(scheduler, str):
        raise InvalidValue("--scheduler is an address (a string)", rule="--scheduler tcp://HOST:PORT",
                           values={"scheduler": scheduler})
    if not isinstance(gpu, (bool, np.bool_)):
        raise InvalidValue("gpu is True or False", rule="open_client(gpu: bool)", values={"gpu": gpu})
    address = scheduler or os.environ.get(ENV_SCHEDULER) or None
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise InvalidValue("--workers must be a positive integer", rule="--workers N: worker processes, N >= 1",
                           values={"workers": workers})
    level = logging.CRITICAL if quiet else logging.INFO   # quiet: no heartbeat noise while a cluster shuts down
    if address:
        if workers is not None or gpu:
            raise InvalidValue("--workers/--gpu size a local cluster; with --scheduler the cluster is already there",
                               values={"scheduler": address, "workers": workers, "gpu": gpu})
        try:
            client = Client(address)
        except (OSError, TimeoutError) as exc:       # refused, unknown host, nothing answering in time
            raise BackendUnavailable(f"cannot reach the Dask scheduler at {address}: {exc}",
                                     rule="--scheduler / SYSTOLIC_SCHEDULER: the address `dask scheduler` printed",
                                     values={"scheduler": address}) from exc
        try:
            yield client
        finally:
            client.close()
        return
    if gpu:
        ids = _gpu_ids()
        if not ids:
            raise BackendUnavailable("--gpu: no CUDA GPU is visible", rule="one worker per GPU needs a GPU",
                                     values={"CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES")})
        if workers is not None and workers != len(ids):
            raise InvalidValue("--gpu makes one worker per GPU", values={"workers": workers, "gpus": len(ids)})
        spec = {f"gpu-{d}": {"cls": Nanny, "options": {"nthreads": 1, "resources": {"GPU": 1},
                                                       "env": {"CUDA_VISIBLE_DEVICES": d}, "silence_logs": level}}
                for d in ids}
        cluster = SpecCluster(workers=spec, scheduler={"cls": Scheduler, "options": {"dashboard_address": ":0"}},
                              silence_logs=level)
    else:
        cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=threads_per_worker,
                               processes=True, dashboard_address=":0", silence_logs=level)
    try:
        client = Client(cluster)
        try:
            yield client
        finally:
            client.close()
    finally:
        cluster.close()
