"""The emulator (and the spec path) against recorded silicon: bit-identical outputs, same faults.

* ``full.npz``: every stored operation (300 per TMUL instruction, 100 per data-movement family), compared
  byte for byte;
* ``digests.npz``: a fixed sample of the 100000 operations of each family (10 families, the TDPBF16PS edge
  family included) (all of them with
  ``SYSTOLIC_SILICON_FULL=1``), regenerated from the seeds and compared by 8-byte digest;
* ``quirks.json``: the edge programs: the same #UD/#GP where the silicon faulted, the same bytes elsewhere.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from systolic.amx import TileMachine
from systolic.errors import GeneralProtection, InvalidOpcode

from .conftest import DATA

import compare as C  # noqa: E402  (tools/silicon)
import replay as R  # noqa: E402
import vectors as V  # noqa: E402

FULL = os.environ.get("SYSTOLIC_SILICON_FULL", "") not in ("", "0")
SAMPLE = 150  # operations per family from the digests in the default (CI) run


@pytest.fixture(scope="module")
def full():
    return np.load(os.path.join(DATA, "full.npz"))


@pytest.fixture(scope="module")
def digests():
    return np.load(os.path.join(DATA, "digests.npz"))


def _replay_full(full, fam, backend, limit=None):
    m = R.machine(backend)
    n = 0
    for i, op, outs in R.full_ops(full, fam):
        got = R.replay(fam, op, m)
        for k in outs:
            assert np.array_equal(got[k], outs[k]), f"{fam} op {i}: {k} differs from silicon ({backend})"
        n += 1
        if limit and n >= limit:
            break
    return n


@pytest.mark.parametrize("fam", V.FAMILIES)
def test_emulator_equals_silicon_on_stored_operations(full, fam):
    assert _replay_full(full, fam, "emulator") == (300 if fam.startswith("dot:") else 100)


@pytest.mark.parametrize("fam", V.FAMILIES)
def test_spec_path_equals_silicon(full, fam):
    assert _replay_full(full, fam, "spec", limit=12) == 12


@pytest.mark.parametrize("fam", V.FAMILIES)
def test_emulator_equals_silicon_digests(digests, fam):
    sil = digests[f"{fam}/out"]
    if FULL:
        agree, bad, errors, drift = C.check_range(fam, 0, len(sil), sil, "emulator")
        assert not bad and not errors, (fam, bad[:10], list(errors.items())[:3])
        assert agree == len(sil)
        return
    # a fixed sample spread over the whole range (the first 300/100 are covered by the stored set)
    idx = np.random.default_rng(2026).choice(np.arange(1000, len(sil)), SAMPLE, replace=False)
    m = TileMachine()
    for i in sorted(int(x) for x in idx):
        op = V.generate(fam, i)
        got = R.replay(fam, op, m)
        d = V.digest(got[k] for k in V.OUTPUTS[V.kind_of(fam)])
        assert d == sil[i].tobytes(), f"{fam} op {i} differs from silicon"


def _quirk_program(case, m):
    a = np.random.default_rng(1).integers(0, 256, 1024, dtype=np.uint8)
    out = np.full(1024, 0xEE, np.uint8)
    cfgout = np.full(64, 0xCC, np.uint8)
    m.ldtilecfg(np.frombuffer(bytes.fromhex(case["cfg"]), np.uint8).copy())
    for s in case["steps"]:
        w = s.split()
        if w[0] == "load":
            m.tileloadd(int(w[1]), a, 0, 64)
        elif w[0] == "loaddt1":
            m.tileloaddt1(int(w[1]), a, 0, 64)
        elif w[0] == "store":
            m.tilestored(int(w[1]), out, 0, 64)
        elif w[0] == "zero":
            m.tilezero(int(w[1]))
        elif w[0] == "sttilecfg":
            m.sttilecfg(cfgout, 0)
        elif w[0] == "release":
            m.tilerelease()
        else:
            getattr(m, w[0])(int(w[1]), int(w[2]), int(w[3]))
    return cfgout, out


QUIRKS = json.load(open(os.path.join(DATA, "quirks.json")))
FAULT = {"SIGILL": InvalidOpcode, "SIGSEGV": GeneralProtection}


@pytest.mark.parametrize("name", sorted(QUIRKS))
def test_edge_programs_fault_like_silicon(name):
    case = QUIRKS[name]
    m = TileMachine()
    if "fault" in case:
        with pytest.raises(FAULT[case["fault"]]):
            _quirk_program(case, m)
        return
    cfgout, out = _quirk_program(case, m)
    assert cfgout.tobytes().hex() == case["cfg_after"]
    assert out.tobytes().hex() == case["out"]
