"""Scale-out on Dask distributed: test-vector campaigns and numerics studies (docs/distributed.md).

* :mod:`~systolic.distributed.cluster`: the cluster a command runs on (local processes, an existing scheduler,
  one worker per GPU);
* :mod:`~systolic.distributed.kinds`: what one vector is per engine and instruction, drawn and computed by the
  engines;
* :mod:`~systolic.distributed.profiles`: input profiles (random, specials, denormals, FTZ window, ...);
* :mod:`~systolic.distributed.formats`: Parquet, npz and the text form of a shard;
* :mod:`~systolic.distributed.store`: atomic writes, digests, manifest and journal;
* :mod:`~systolic.distributed.campaign`: generate (deterministic, resumable) and verify;
* :mod:`~systolic.distributed.study`: :func:`systolic.torch.compare` per engine and data shard, merged.

Needs ``pip install 'systolic[distributed]'`` (dask[distributed], pyarrow); importing this package imports
neither until a command runs.
"""

from __future__ import annotations

__all__ = ["open_client", "Campaign", "Spec", "generate", "verify"]


def __getattr__(name):
    if name == "open_client":
        from .cluster import open_client
        return open_client
    if name in ("Campaign", "generate", "verify"):
        from . import campaign
        return getattr(campaign, name)
    if name == "Spec":
        from .kinds import Spec
        return Spec
    raise AttributeError(name)
