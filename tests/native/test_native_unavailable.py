"""Without AMX (or with it switched off) the native backend explains itself; everything else still works."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from systolic.amx import TileConfig, TileMachine, native, native_gemm
from systolic.errors import AmxUnavailable, SystolicError

from .conftest import NATIVE


@pytest.fixture
def disabled(monkeypatch):
    monkeypatch.setenv(native.DISABLE_ENV, "1")
    native._reasons.cache_clear()
    yield
    monkeypatch.delenv(native.DISABLE_ENV)
    native._reasons.cache_clear()


def test_disabled_native_says_why(disabled):
    ok, why = native.availability()
    assert not ok and native.DISABLE_ENV in why
    with pytest.raises(AmxUnavailable, match="native AMX is unavailable") as e:
        native.require_native()
    assert native.DISABLE_ENV in str(e.value)
    assert "ARCH_REQ_XCOMP_PERM" in e.value.rule
    assert "amx_features" in e.value.values


def test_machine_with_native_backend_raises_amx_unavailable(disabled):
    with pytest.raises(AmxUnavailable) as e:
        TileMachine(backend="native")
    assert isinstance(e.value, SystolicError)


def test_gemm_raises_amx_unavailable(disabled):
    a = np.ones((32, 64), np.int8)
    with pytest.raises(AmxUnavailable):
        native_gemm.matmul(a, a.T.copy())


@pytest.mark.skipif(NATIVE, reason="this CPU has AMX: the no-AMX explanation cannot be observed")
def test_no_amx_cpu_names_the_missing_feature():
    ok, why = native.availability()
    assert not ok
    assert "amx_tile" in why or "x86-64" in why or "tile data" in why
    with pytest.raises(AmxUnavailable):
        TileMachine(backend="native")


def test_emulator_still_works_when_native_is_unavailable(disabled):
    m = TileMachine(backend="cpu")
    m.ldtilecfg(TileConfig(palette=1, tiles={0: (1, 4), 1: (1, 4), 2: (1, 4)}))
    mem = np.array([1, 2, 3, 4], np.uint8)
    m.tileloadd(1, mem, 0, 4)
    m.tileloadd(2, np.array([1, 1, 1, 1], np.uint8), 0, 4)
    m.tdpbuud(0, 1, 2)
    out = np.zeros(4, np.uint8)
    m.tilestored(0, out, 0, 4)
    assert out.view(np.uint32)[0] == 1 + 2 + 3 + 4


def test_cli_native_check_explains(disabled):
    from systolic.cli import cli
    r = CliRunner().invoke(cli, ["amx", "native-check", "--json"])
    assert r.exit_code == 0, r.output
    import json
    data = json.loads(r.output)
    assert data["available"] is False and native.DISABLE_ENV in data["reason"]
