"""Bad input never crashes: random DPAS/DPASW arguments either run or raise a typed SystolicError."""

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

from systolic.errors import IllegalInstruction, SystolicError
from systolic.xmx import GRF, dpas, dpasw
from systolic.xmx.kernels import dpas_fast

PRECS = ["s8", "u8", "s4", "u4", "s2", "u2", "bf", "hf", "tf32", "bf8", "hf8", "e2m1", "u1", "f", "d", "q", "", 7,
         None, "int4"]
TYPES = ["d", "ud", "f", "bf", "hf", "df", "w", "tf32", None, 3, "float"]
OFFS = st.one_of(st.integers(-100, 9000), st.sampled_from([0, 32, 64, 512, 1024, 4096, 8128]), st.none(),
                 st.floats(allow_nan=True), st.text(max_size=2))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["dg2", "pvc", "bmg", "xe3p"]), st.sampled_from(PRECS), st.sampled_from(PRECS),
       st.sampled_from(TYPES), st.sampled_from(TYPES), OFFS, OFFS, OFFS, OFFS,
       st.one_of(st.integers(-2, 10), st.none()), st.one_of(st.integers(-1, 9), st.sampled_from([None, 8.0, True])),
       st.sampled_from([None, 8, 16, 4, 8.0, True]), st.booleans())
def test_random_arguments_raise_only_typed_errors(platform, p1, p2, dt, s0t, dst, src0, src1, src2, rc, sd, es,
                                                  fast):
    g = GRF(platform)
    g.data[:] = np.random.default_rng(0).integers(0, 256, g.size, dtype=np.uint8)
    try:
        (dpas_fast if fast else dpas)(g, dst=dst, src0=src0, src1=src1, src2=src2, dst_type=dt, src0_type=s0t,
                                      src1_precision=p1, src2_precision=p2, rc=rc, sd=sd, exec_size=es)
    except SystolicError as e:
        assert str(e) and (e.rule or e.values)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["s8", "bf", "s2", "tf32"]), st.integers(-1, 9), OFFS, st.booleans())
def test_random_dpasw_arguments(p, rc, src2, same_pair):
    g = GRF("dg2")
    h = g if same_pair else GRF("dg2")
    try:
        dpasw(g, pair=h, dst=2048, src0=None, src1=1024, src2=src2, dst_type="f" if p in ("bf", "tf32") else "d",
              src1_precision=p, src2_precision=p, rc=rc)
    except IllegalInstruction as e:
        assert e.rule


def test_non_integer_fields_are_illegal():
    g = GRF("dg2")
    for kw in (dict(sd=8.0), dict(rc=True), dict(exec_size=8.0), dict(rc=2.0)):
        try:
            dpas(g, dst=2048, src0=None, src1=1024, src2=0, dst_type="d", src1_precision="s8", src2_precision="s8",
                 **kw)
        except IllegalInstruction as e:
            assert "integer" in str(e)
        else:
            raise AssertionError(f"{kw} was accepted")
