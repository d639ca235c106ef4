"""A 2-worker LocalCluster (processes) shared by the distributed tests, and campaign helpers."""

from __future__ import annotations

import pytest

distributed = pytest.importorskip("distributed")
pytest.importorskip("pyarrow")


@pytest.fixture(scope="session")
def cluster():
    from distributed import LocalCluster
    c = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                     silence_logs=40)
    yield c
    c.close()


@pytest.fixture
def client(cluster):
    from distributed import Client
    with Client(cluster) as cl:
        cl.wait_for_workers(2, timeout=60)
        yield cl
