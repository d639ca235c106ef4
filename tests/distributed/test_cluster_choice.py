"""Cluster choice refusals, each a typed error before anything runs."""

from __future__ import annotations

import socket

import pytest
from click.testing import CliRunner

from systolic.cli import cli
from systolic.distributed.cluster import ENV_SCHEDULER, gpu_count, open_client
from systolic.errors import BackendUnavailable, InvalidValue


def test_gpu_without_a_visible_gpu(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert gpu_count() == 0
    with pytest.raises(BackendUnavailable):
        with open_client(gpu=True):
            pass


def test_workers_and_scheduler_exclude_each_other():
    with pytest.raises(InvalidValue):
        with open_client(scheduler="tcp://127.0.0.1:1", workers=2):
            pass
    with pytest.raises(InvalidValue):
        with open_client(workers=0):
            pass


def test_unreachable_scheduler_is_typed(monkeypatch, tmp_path):
    import dask
    with socket.socket() as s:                      # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv(ENV_SCHEDULER, f"tcp://127.0.0.1:{port}")
    with dask.config.set({"distributed.comm.timeouts.connect": "2s"}):
        # valid options (bad ones are refused before the scheduler is contacted: test_cli_bad_options.py)
        r = CliRunner().invoke(cli, ["vectors", "generate", "--engine", "amx:spr", "--instruction", "tdpbssd",
                                     "--shape", "2,2,2", "--count", "2", "--out", str(tmp_path / "c"), "--quiet"])
    assert r.exit_code == 1 and isinstance(r.exception, BackendUnavailable), (r.output, r.exception)
    assert "cannot reach the Dask scheduler" in str(r.exception)
