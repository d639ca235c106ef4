"""device= / path= / backend= across the engines; the older keywords warn and give the same bits.

Every older spelling is exercised here on purpose: each call is inside ``pytest.warns`` (the suite turns
``systolic.vocabulary.RenamedWarning`` into an error elsewhere, pyproject.toml). Oracles: int64 matrix products
(exact at these sizes), and the new spelling's own result for "same bits" (the old spelling must not change it).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from systolic import layout, visa, xmx
from systolic import opencl as cl
from systolic.amx import TileMachine
from systolic.amx import matmul as amx_matmul
from systolic.errors import InvalidValue
from systolic.vocabulary import RenamedWarning, renamed, spelled

def OLD():
    return pytest.warns(DeprecationWarning)


def _ints(seed, shape):
    return np.random.default_rng(seed).integers(-128, 128, shape, dtype=np.int8)


@pytest.mark.parametrize("call", [
    lambda: xmx.matmul(_ints(0, (8, 32)), _ints(1, (32, 16)), platform="pvc"),
    lambda: xmx.dpas(_dpas_call()[0], **_dpas_call()[1], platform="pvc"),
    lambda: cl.distribute("intel_sub_group_i8_i8_matrix_mad_k32", "a", np.ones((8, 32), np.int64), platform="pvc"),
    lambda: visa.run_text(_VISA, platform="dg2"),
    lambda: layout.get("dpas", "b", platform="dg2"),
    lambda: amx_matmul(_ints(0, (3, 8)), _ints(1, (8, 5)), cpu="spr"),
], ids=["xmx.matmul", "xmx.dpas", "opencl.distribute", "visa.run_text", "layout.get", "amx.matmul"])
def test_the_warning_is_a_deprecation_and_names_the_caller(call):
    with pytest.warns(RenamedWarning) as rec:
        call()
    assert issubclass(RenamedWarning, DeprecationWarning)
    assert [w.filename for w in rec] == [__file__]          # stacklevel: the user's line, not systolic's


def _dpas_call():
    g, kw, _, _ = _dpas_operands()
    return g, kw


def test_amx_matmul_device_and_path():
    a, b = _ints(0, (3, 8)), _ints(1, (8, 5))
    want = a.astype(np.int64) @ b.astype(np.int64)           # exact: no wrap at this size
    assert np.array_equal(amx_matmul(a, b, device="spr"), want)
    assert np.array_equal(amx_matmul(a, b, device="spr", path="spec"), want)
    with pytest.warns(DeprecationWarning, match="cpu= is deprecated, use device="):
        assert np.array_equal(amx_matmul(a, b, cpu="spr"), want)
    with pytest.raises(InvalidValue, match="path is 'spec' or 'fast'"):
        amx_matmul(a, b, path="slow")
    with pytest.raises(TypeError, match="unexpected keyword argument 'cpux'"):
        amx_matmul(a, b, cpux="spr")


def test_xmx_matmul_device():
    a, b = _ints(2, (8, 32)), _ints(3, (32, 16))
    want = a.astype(np.int64) @ b.astype(np.int64)
    assert np.array_equal(xmx.matmul(a, b, device="pvc"), want)
    assert np.array_equal(xmx.matmul(a, b, None, "dg2"), want)               # positional, as before
    with pytest.warns(DeprecationWarning, match="platform= is deprecated, use device="):
        assert np.array_equal(xmx.matmul(a, b, platform="pvc"), want)


def test_tile_machine_vocabulary():
    assert TileMachine(device="gnr").cpu.name == "graniterapids"
    assert TileMachine(path="spec").backend.name == "spec" and TileMachine().backend.name == "emulator"
    with pytest.warns(DeprecationWarning, match="backend='spec' is deprecated"):
        assert TileMachine(backend="spec").backend.name == "spec"
    with pytest.warns(DeprecationWarning, match="cpu= is deprecated"):
        assert TileMachine(cpu="emr").cpu.name == "emeraldrapids"
    with pytest.raises(InvalidValue, match="give device= only"):
        TileMachine(cpu="emr", device="spr")


def test_tile_machine_older_backend_beside_a_path_that_says_otherwise():
    """backend="emulator" / "spec" stand for the cpu backend's fast / spec path: a path= given beside one that says
    otherwise was silently ignored (the old backend ran); now InvalidValue naming both. Agreeing: fine."""
    for old, path, other in (("emulator", "fast", "spec"), ("spec", "spec", "fast")):
        with pytest.raises(InvalidValue, match=f"backend='{old}' means path='{path}', not the path='{other}'"):
            TileMachine(backend=old, path=other)
        with pytest.warns(RenamedWarning, match=f"backend='{old}' is deprecated"):
            assert TileMachine(backend=old, path=path).backend.name == old
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert TileMachine(backend="cpu", path="fast").backend.name == TileMachine().backend.name == "emulator"
        assert TileMachine(backend="cpu", path="spec").backend.name == "spec"
    with pytest.raises(InvalidValue, match="the spec path runs on the cpu backend"):
        TileMachine(backend="native", path="spec")             # was: path ignored, the native backend made


def _dpas_operands(platform="pvc"):
    """A GRF with an s8 DPAS's operands in place (exec size = the platform's), and the exact D."""
    g = xmx.GRF(platform)
    gb, n = g.grf_bytes, xmx.get_platform(platform).exec_size
    a, b = _ints(5, (8, 32)), _ints(6, (32, n))
    from systolic.xmx import pack
    g.write(0, pack.pack_src2(a, "s8"))
    g.write(16 * gb, pack.pack_src1(b, "s8"))
    kw = dict(dst=48 * gb, src0=None, src1=16 * gb, src2=0, dst_type="d", src1_precision="s8",
              src2_precision="s8")
    return g, kw, a.astype(np.int64) @ b.astype(np.int64), 48 * gb


def _d(g, off, shape):
    return g.read(off, 4 * shape[0] * shape[1]).view("<i4").reshape(shape)


def test_xmx_dpas_device_and_path():
    for path in ("spec", "fast"):
        g, kw, want, off = _dpas_operands()
        xmx.dpas(g, **kw, device="pvc", path=path)
        assert np.array_equal(_d(g, off, want.shape), want)
    g, kw, want, off = _dpas_operands()
    with pytest.warns(DeprecationWarning, match="xmx.dpas: platform= is deprecated, use device="):
        xmx.dpas(g, **kw, platform="pvc")
    assert np.array_equal(_d(g, off, want.shape), want)
    with pytest.raises(InvalidValue, match="give device= only"):
        xmx.dpas(g, **kw, platform="pvc", device="pvc")
    with pytest.raises(InvalidValue, match="path is 'spec' or 'fast'"):
        xmx.dpas(g, **kw, path="quick")
    with pytest.raises(InvalidValue, match="keeps no trace"):
        xmx.dpas(g, **kw, path="fast", trace={"row": 0, "col": 0})


def test_xmx_dpas_fast_is_the_older_spelling_of_path_fast():
    g, kw, want, off = _dpas_operands()
    with pytest.warns(DeprecationWarning, match=r"xmx.dpas_fast is deprecated, use xmx.dpas\(..., path='fast'\)"):
        fast = xmx.dpas_fast
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fast(g, **kw, device="pvc")                          # the function itself takes the new keywords
    assert np.array_equal(_d(g, off, want.shape), want)


def test_xmx_dpasw_device():
    g0, kw, want, off = _dpas_operands("dg2")
    g1 = g0.copy()
    xmx.dpasw(g0, pair=g1, **kw, device="dg2")
    new = g0.read(off, 4 * want.size)
    g0, kw, want, off = _dpas_operands("dg2")
    g1 = g0.copy()
    with pytest.warns(DeprecationWarning, match="xmx.dpasw: platform= is deprecated"):
        xmx.dpasw(g0, pair=g1, **kw, platform="dg2")
    assert np.array_equal(g0.read(off, 4 * want.size), new)
    with pytest.raises(InvalidValue, match="give device= only"):
        xmx.dpasw(g0, pair=g1, **kw, platform="dg2", device="dg2")


def test_xmx_grf_device():
    assert xmx.GRF(device="dg2").platform.name == xmx.GRF("dg2").platform.name == "dg2"
    with pytest.warns(DeprecationWarning, match="xmx.GRF: platform= is deprecated"):
        assert xmx.GRF(platform="dg2").grf_bytes == xmx.GRF(device="dg2").grf_bytes
    with pytest.raises(InvalidValue, match="give device= only"):
        xmx.GRF(platform="dg2", device="bmg")


def test_sycl_takes_the_engines_device_names():
    """A SYCL device is found by every alias its engine's table gives it (the same names as device= elsewhere)."""
    from systolic import sycl
    from systolic.amx import CPUS, get_cpu
    from systolic.xmx import PLATFORMS
    for d in sycl.devices():
        if d.backend == "amx":
            names = [n for n in ("sapphirerapids", "spr", "emeraldrapids", "emr", "graniterapids", "gnr",
                                 "diamondrapids", "dmr") if get_cpu(n).name == d.engine]
        elif d.engine == d.name:
            names = [d.engine, *PLATFORMS[d.engine].aliases]
        else:
            names = []
        for n in names:
            assert sycl.get_device(n) is d, n
            assert sycl.queue(n).get_device().record is d
    assert sycl.get_device("xehpc").name == "pvc" and sycl.get_device("alchemist").name == "dg2"
    assert sycl.get_device("arl").engine == "dg2" and sycl.get_device("dg2").name == "dg2"
    assert set(CPUS) >= {d.engine for d in sycl.devices() if d.backend == "amx"}


def test_xmx_get_model_device():
    assert xmx.get_model(device="dg2") == xmx.get_model(None, xmx.get_platform("dg2"))
    assert xmx.get_model(device="bmg").name == xmx.get_platform("bmg").default_model
    with pytest.warns(DeprecationWarning, match="xmx.get_model: platform= is deprecated"):
        assert xmx.get_model(platform=xmx.get_platform("dg2")) == xmx.get_model(device="dg2")


def test_cl_prelude_device():
    from systolic import cl
    with pytest.warns(DeprecationWarning, match="cl.prelude: platform= is deprecated"):
        assert cl.prelude(platform="dg2") == cl.prelude(device="dg2") == cl.prelude("dg2") != cl.prelude()


def test_opencl_builtin_device_and_path():
    f = cl.intel_sub_group_i8_i8_matrix_mad_k32
    rng = np.random.default_rng(4)
    A, B = rng.integers(-128, 128, (8, 32)), rng.integers(-128, 128, (32, 16))
    C = np.zeros((8, 16), np.int64)
    a, b, acc = (cl.distribute(f.__name__, op, X, device="pvc") for op, X in (("a", A), ("b", B), ("acc", C)))
    d = f(a, b, acc, device="pvc", path="spec")
    assert (cl.gather(f.__name__, "result", d, device="pvc") == A @ B).all()
    with pytest.warns(DeprecationWarning) as rec:
        assert np.array_equal(f(a, b, acc, platform="pvc", engine="spec"), d)
    said = sorted(str(w.message).split(" (")[0] for w in rec)
    assert said == [f"{f.__name__}: engine= is deprecated, use path=", f"{f.__name__}: platform= is deprecated, "
                    "use device="]
    with pytest.raises(InvalidValue, match="give device= only"):
        f(a, b, acc, platform="pvc", device="pvc")
    for call in (f, lambda *args, **kw: cl.call(f.__name__, *args, **kw)):
        for path in ("fast", "spec"):          # path= given, even at its default, is given: beside engine= it clashes
            with pytest.raises(InvalidValue, match="engine= and path= name the same thing; give path= only"):
                call(a, b, acc, engine="spec", path=path)
        with pytest.warns(RenamedWarning, match="engine= is deprecated, use path="):
            assert np.array_equal(call(a, b, acc, engine="fast"), d)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert np.array_equal(call(a, b, acc, path="fast"), d) and np.array_equal(call(a, b, acc), d)


@pytest.mark.parametrize("fn, args", [
    (cl.distribute, ("intel_sub_group_i8_i8_matrix_mad_k32", "a", np.ones((8, 32), np.int64))),
    (cl.layout, ("intel_sub_group_i8_i8_matrix_mad_k32", "b")),
], ids=["distribute", "layout"])
def test_opencl_helpers_device(fn, args):
    new = fn(*args, device="dg2")
    with pytest.warns(DeprecationWarning, match=f"opencl.{fn.__name__}: platform= is deprecated"):
        old = fn(*args, platform="dg2")
    assert np.array_equal(np.asarray(new), np.asarray(old)) if isinstance(new, np.ndarray) else new == old
    with pytest.raises(InvalidValue, match="give device= only"):
        fn(*args, platform="dg2", device="dg2")


def test_opencl_gather_builtins_resolve_run_device():
    name = "intel_sub_group_i8_i8_matrix_mad_k32"
    v = cl.distribute(name, "b", np.ones((32, 8), np.int64), device="dg2")
    with OLD():
        assert np.array_equal(cl.gather(name, "b", v, platform="dg2"), cl.gather(name, "b", v, device="dg2"))
    with OLD():
        assert cl.builtins(platform="dg2") == cl.builtins(device="dg2") == cl.builtins("dg2")
    with OLD():
        assert cl.resolve(name, platform="dg2") == cl.resolve(name, device="dg2")
    seen = []

    def kernel():
        seen.append(cl.get_sub_group_size())
    cl.run(kernel, 8, 8, device="dg2")
    with OLD():
        cl.run(kernel, 8, 8, platform="dg2")
    assert seen == [8, 8]


_VISA = """
.decl V1 v_type=G type=d num_elts=8
add (M1, 8) V1(0,0)<1> 0x76543210:v 0x1:d
"""


def test_visa_device():
    want = [1, 2, 3, 4, 5, 6, 7, 8]
    assert visa.run_text(_VISA, device="dg2").read("V1").tolist() == want
    assert visa.run_text(_VISA, "dg2").platform.name == "dg2"                     # positional, as before
    with pytest.warns(DeprecationWarning, match="visa.run_text: platform= is deprecated"):
        m = visa.run_text(_VISA, platform="dg2")
    assert m.read("V1").tolist() == want and m.platform.name == "dg2"
    with pytest.warns(DeprecationWarning, match="visa Machine: platform= is deprecated"):
        assert visa.Machine(visa.parse(_VISA), platform="bmg").platform.name == "bmg"
    assert visa.Machine(visa.parse(_VISA), device="bmg").platform.name == "bmg"
    assert visa.Machine(visa.parse(_VISA)).platform.name == "pvc"
    with pytest.raises(InvalidValue, match="give device= only"):
        visa.run_text(_VISA, device="dg2", platform="pvc")
    with pytest.warns(DeprecationWarning, match="fast_alu= is deprecated"):
        m = visa.run_text(_VISA, device="dg2", fast_alu=True)
    assert m.read("V1").tolist() == want
    prog = visa.parse(_VISA)
    for old in ("fast_dpas", "fast_alu"):      # a flag saying otherwise than a given path was silently obeyed
        for v, path in ((True, "spec"), (False, "fast")):
            with pytest.raises(InvalidValue, match=f"{old}={v} says otherwise than the path='{path}' also given"):
                visa.Machine(prog, **{old: v, "path": path})
        with pytest.warns(RenamedWarning):
            m = visa.Machine(prog, **{old: True, "path": "fast"})
        assert m.fast_dpas and m.fast_alu
        with pytest.warns(RenamedWarning):                     # a flag alone: that unit only, as before
            m = visa.Machine(prog, **{old: True})
        assert (m.fast_dpas, m.fast_alu) == (old == "fast_dpas", old == "fast_alu")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert (visa.Machine(prog).fast_dpas, visa.Machine(prog, path="fast").fast_alu) == (False, True)


def test_layout_get_device():
    new = layout.get("dpas", "b", device="dg2", precision="s8")
    with pytest.warns(DeprecationWarning, match="layout.get: platform= is deprecated"):
        old = layout.get("dpas", "b", platform="dg2", precision="s8")
    assert new.params == old.params and new.shape == old.shape
    with pytest.raises(InvalidValue, match="give device= only"):
        layout.get("dpas", "b", platform="dg2", device="pvc")


def test_sycl_queue_amx_backend():
    from systolic import sycl
    def how(q):                                   # in the caller's words: what was given reads back
        return q.amx_backend, q.amx_path
    assert how(sycl.queue("spr", amx="compiled")) == ("cpu", "fast")
    assert how(sycl.queue("spr", amx="compiled", path="spec")) == ("cpu", "spec")
    assert how(sycl.queue("spr", amx="compiled", path="fast")) == ("cpu", "fast")
    assert how(sycl.queue("spr", amx="compiled", amx_backend="native")) == ("native", "fast")
    for old, new in (("emulator", ("cpu", "fast")), ("spec", ("cpu", "spec")), ("llvm", ("native", "fast"))):
        with pytest.warns(DeprecationWarning, match=f"sycl.queue: amx_backend='{old}' is deprecated"):
            assert how(sycl.queue("spr", amx="compiled", amx_backend=old)) == new
        with pytest.warns(DeprecationWarning):                # given again in the new words, the same: fine
            assert how(sycl.queue("spr", amx="compiled", amx_backend=old, path=new[1])) == new
    for old, path in (("spec", "fast"), ("emulator", "spec"), ("llvm", "spec")):   # an explicit path says otherwise
        with pytest.raises(InvalidValue, match=f"amx_backend='{old}' means path=.*not the path='{path}' also given"):
            sycl.queue("spr", amx="compiled", amx_backend=old, path=path)
    with pytest.raises(InvalidValue, match="the spec path runs on the cpu backend, not native"):
        sycl.queue("spr", amx="compiled", amx_backend="native", path="spec")
    with pytest.raises(InvalidValue, match="unknown backend of the compiled AMX path"):
        sycl.queue("spr", amx_backend="gpu")
    with pytest.raises(InvalidValue, match="path is 'spec' or 'fast'"):
        sycl.queue("spr", path="exact")


def test_sycl_queue_hands_the_tile_compiler_its_own_backend_name(monkeypatch):
    """amx_backend="native" reads back as given, and the compiled program is still run by the tile compiler's
    whole-program JIT (its backend "llvm"; its "native" would run each instruction on its own)."""
    from systolic import sycl
    import systolic.sycl.lower_amx_compiled as LC
    seen = []
    monkeypatch.setattr(LC, "run_compiled", lambda launch, kernel, make_item, backend, path: seen.append(
        (backend, path)))
    for kw, want in (({"amx_backend": "native"}, ("llvm", "fast")), ({}, ("cpu", "fast")),
                     ({"path": "spec"}, ("cpu", "spec"))):
        q = sycl.queue("spr", amx="compiled", **kw)
        q.parallel_for(sycl.nd_range((1, 16), (1, 16)), lambda item: None)
        assert seen.pop() == want


#: one TDPBF8PS on tiles loaded from @a, @b, @c (AMX-FP8: Diamond Rapids, not Sapphire Rapids)
_FP8_DOT = """
@a = global [1024 x i8] zeroinitializer, align 64
@b = global [1024 x i8] zeroinitializer, align 64
@c = global [1024 x i8] zeroinitializer, align 64
define void @dot(i16 %m, i16 %n, i16 %k) {
entry:
  %ta = call x86_amx @llvm.x86.tileloadd64.internal(i16 %m, i16 %k, ptr @a, i64 64)
  %k4 = lshr i16 %k, 2
  %tb = call x86_amx @llvm.x86.tileloadd64.internal(i16 %k4, i16 %n, ptr @b, i64 64)
  %tc = call x86_amx @llvm.x86.tileloadd64.internal(i16 %m, i16 %n, ptr @c, i64 64)
  %r = call x86_amx @llvm.x86.tdpbf8ps.internal(i16 %m, i16 %n, i16 %k, x86_amx %tc, x86_amx %ta, x86_amx %tb)
  call void @llvm.x86.tilestored64.internal(i16 %m, i16 %n, ptr @c, i64 64, x86_amx %r)
  ret void
}
declare x86_amx @llvm.x86.tileloadd64.internal(i16, i16, ptr, i64)
declare x86_amx @llvm.x86.tdpbf8ps.internal(i16, i16, i16, x86_amx, x86_amx, x86_amx)
declare void @llvm.x86.tilestored64.internal(i16, i16, ptr, i64, x86_amx)
"""


def test_compiler_module_run_device():
    """Module.run / run_eager take device= (the CPU model); cpu= warns and decides the same: Sapphire Rapids
    has no AMX-FP8 (#UD), Diamond Rapids has it."""
    from systolic.compiler import compile_ir
    from systolic.errors import InvalidOpcode
    mod = compile_ir(_FP8_DOT)
    mem = lambda: {k: np.zeros(1024, np.uint8) for k in "abc"}                        # noqa: E731
    for run in (mod.run, mod.run_eager):
        run("dot", 16, 64, 64, memory=mem(), device="dmr")
        with pytest.raises(InvalidOpcode):
            run("dot", 16, 64, 64, memory=mem(), device="spr")
        with pytest.warns(DeprecationWarning, match="cpu= is deprecated, use device="):
            run("dot", 16, 64, 64, memory=mem(), cpu="dmr")
        with pytest.warns(DeprecationWarning), pytest.raises(InvalidOpcode):
            run("dot", 16, 64, 64, memory=mem(), cpu="spr")
        with pytest.raises(InvalidValue, match="give device= only"):
            run("dot", 16, 64, 64, memory=mem(), cpu="spr", device="dmr")
        for old, path in (("emulator", "fast"), ("spec", "spec")):   # backend= says where, path= how
            new = run("dot", 16, 64, 64, memory=mem(), device="dmr", backend="cpu", path=path).machine.backend.name
            with pytest.warns(DeprecationWarning, match=f"backend='{old}' is deprecated, use backend='cpu', "
                                                        f"path='{path}'"):
                assert run("dot", 16, 64, 64, memory=mem(), device="dmr", backend=old).machine.backend.name == new
        with pytest.raises(InvalidValue, match="the spec path runs on the cpu backend"):
            run("dot", 16, 64, 64, memory=mem(), device="dmr", backend="native", path="spec")
        for old, path, other in (("emulator", "fast", "spec"), ("spec", "spec", "fast")):   # a path saying otherwise
            with pytest.raises(InvalidValue, match=f"backend='{old}' means path='{path}', not the path='{other}'"):
                run("dot", 16, 64, 64, memory=mem(), device="dmr", backend=old, path=other)
            with pytest.warns(RenamedWarning):
                assert run("dot", 16, 64, 64, memory=mem(), device="dmr", backend=old,
                           path=path).machine.backend.name == old


def test_distributed_backend_and_path():
    """Campaign shards: backend= says where (cpu, native, cuda), path= how; backend='spec' is the older spelling
    of cpu + the spec path (same bytes), and the spec path runs on cpu only."""
    from systolic.distributed import Campaign, Spec
    from systolic.distributed.campaign import make_shard, verify_shard
    c = Campaign(Spec("amx:spr", "tdpbf16ps", shape=(2, 2, 2)), profile="specials", count=4, shard_size=2,
                 format="npz")
    fast = make_shard(c.args(), 0, "cpu")["data"]
    spec = make_shard(c.args(), 0, "cpu", path="spec")["data"]
    assert spec == fast                                          # the paths are proven bit-identical
    with pytest.warns(DeprecationWarning, match="make_shard: backend='spec' is deprecated, use backend='cpu', "
                                                "path='spec'"):
        assert make_shard(c.args(), 0, "spec")["data"] == spec
    with pytest.warns(DeprecationWarning, match="verify_shard: backend='spec'"):
        assert verify_shard(c.args(), 0, spec, "spec")["bad_rows"] == 0
    assert verify_shard(c.args(), 0, spec, "cpu", path="spec")["bad_rows"] == 0
    with pytest.raises(InvalidValue, match="the spec path runs on the cpu backend"):
        make_shard(c.args(), 0, "cuda", path="spec")
    with pytest.raises(InvalidValue, match="path is 'spec' or 'fast'"):
        make_shard(c.args(), 0, "cpu", path="exact")
    with pytest.raises(InvalidValue, match="make_shard: backend='spec' means path='spec', not the path='fast'"):
        make_shard(c.args(), 0, "spec", path="fast")              # was: silently the spec path
    with pytest.raises(InvalidValue, match="verify_shard: backend='spec' means path='spec'"):
        verify_shard(c.args(), 0, spec, "spec", path="fast")
    with pytest.warns(RenamedWarning):
        assert make_shard(c.args(), 0, "spec", path="spec")["data"] == spec


def test_the_shim_itself():
    assert renamed({}, {"cpu": "device"}, "f", device="spr") == {"device": "spr"}
    with pytest.warns(RenamedWarning, match="f: cpu= is deprecated, use device="):
        assert renamed({"cpu": "emr"}, {"cpu": "device"}, "f", device=None) == {"device": "emr"}
    with pytest.raises(TypeError, match="unexpected keyword argument 'cpux'"):
        renamed({"cpux": 1}, {"cpu": "device"}, "f", device=None)
    means = {"backend": "cpu", "path": "spec"}
    for given in ({}, {"path": None}, {"path": "spec"}, {"backend": "cpu", "path": None}):
        with pytest.warns(RenamedWarning, match="f: backend='spec' is deprecated, use backend='cpu', path='spec'"):
            assert spelled("backend='spec'", means, "f", **given) == means
    with pytest.raises(InvalidValue, match="f: backend='spec' means path='spec', not the path='fast' also given"):
        spelled("backend='spec'", means, "f", path="fast")


def _ran_or_refused(f):
    """What a call decided from its CPU model / platform: "ran", or the name of the error that refused it (an
    InvalidValue, as for two keywords naming one thing, goes on up)."""
    from systolic.errors import InvalidOpcode, UnsupportedCombination
    try:
        f()
    except (InvalidOpcode, UnsupportedCombination) as e:
        return type(e).__name__
    return "ran"


def _amx_fp16(**kw):
    """amx.matmul of float16: TDPFP16PS, AMX-FP16, Granite Rapids on (Sapphire Rapids: #UD, InvalidOpcode)."""
    a, b = np.ones((3, 8), np.float16), np.ones((8, 5), np.float16)
    return _ran_or_refused(lambda: amx_matmul(a, b, **kw))


def _xmx_tf32(**kw):
    """xmx.matmul in tf32: pvc and bmg take it, dg2 refuses (UnsupportedCombination)."""
    a, b = np.ones((8, 8), np.float32), np.ones((8, 16), np.float32)
    return _ran_or_refused(lambda: xmx.matmul(a, b, precision="tf32", **kw))


def _module_fp8(method):
    """Module.run / run_eager of the TDPBF8PS program: AMX-FP8 runs on Diamond Rapids, is #UD (InvalidOpcode) on
    Sapphire Rapids."""
    def call(**kw):
        from systolic.compiler import compile_ir
        mem = {k: np.zeros(1024, np.uint8) for k in "abc"}
        return _ran_or_refused(lambda: getattr(compile_ir(_FP8_DOT), method)("dot", 16, 64, 64, memory=mem, **kw))
    return call


def _cl_prelude_platform(**kw):
    from systolic import cl
    return cl.prelude(**kw).splitlines()[1].split(",")[0]     # "// platform <name>"


#: every signature whose device= has a default: (call -> what it modelled, the old keyword, an old value, what
#: that models, device='s default, what the default models)
_DEFAULTED = {
    "amx.matmul": (_amx_fp16, "cpu", "gnr", "ran", "sapphirerapids", "InvalidOpcode"),
    "TileMachine": (lambda **kw: TileMachine(**kw).cpu.name, "cpu", "emr", "emeraldrapids", "sapphirerapids",
                    "sapphirerapids"),
    "Module.run": (_module_fp8("run"), "cpu", "dmr", "ran", "sapphirerapids", "InvalidOpcode"),
    "Module.run_eager": (_module_fp8("run_eager"), "cpu", "dmr", "ran", "sapphirerapids", "InvalidOpcode"),
    "xmx.GRF": (lambda **kw: xmx.GRF(**kw).platform.name, "platform", "dg2", "dg2", "pvc", "pvc"),
    "xmx.matmul": (_xmx_tf32, "platform", "dg2", "UnsupportedCombination", "pvc", "ran"),
    "cl.prelude": (_cl_prelude_platform, "platform", "dg2", "// platform dg2", "pvc", "// platform pvc"),
}


@pytest.mark.parametrize("where", list(_DEFAULTED))
def test_a_new_keyword_given_at_its_default_still_conflicts_with_the_old(where):
    """device= given at its default value is still given: beside the older keyword it is InvalidValue, not
    silently overridden by the old one (xmx.matmul(device="pvc", platform="dg2") ran dg2)."""
    call, old, value, modelled, default, default_models = _DEFAULTED[where]
    assert modelled != default_models                                # the observation tells the two apart
    with pytest.raises(InvalidValue, match=f"{old}= and device= name the same thing"):
        call(**{old: value, "device": default})
    with pytest.warns(RenamedWarning, match=f"{old}= is deprecated, use device="):
        assert call(**{old: value}) == modelled                      # the old keyword alone: as before
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert call(device=default) == call() == default_models    # the new keyword alone, and the default
        assert call(device=value) == modelled


def test_device_positional_at_its_default_conflicts_with_the_old_keyword():
    """The positional spellings (TileMachine, xmx.GRF, cl.prelude, xmx.matmul's fourth argument) are given too."""
    from systolic import cl
    a, b = _ints(0, (8, 32)), _ints(1, (32, 16))
    for call in (lambda: TileMachine("sapphirerapids", cpu="emr"), lambda: xmx.GRF("pvc", platform="dg2"),
                 lambda: cl.prelude("pvc", platform="dg2"), lambda: xmx.matmul(a, b, None, "pvc", platform="xe2")):
        with pytest.raises(InvalidValue, match="name the same thing"):
            call()
    assert TileMachine("sapphirerapids").cpu.name == "sapphirerapids" and xmx.GRF("dg2").platform.name == "dg2"


def test_xmx_layout_device_keyword():
    """xmx.layout.layout / shape / operand_layout: device= (positional as before); platform= warns, same result.
    Oracle for the shape: DPAS on PVC is 8 rows x SIMD16, bf16 K = 16 (visa-DPAS.md "Semantics")."""
    from systolic.xmx.layout import layout as dpas_layout
    from systolic.xmx.layout import operand_layout, shape
    new = dpas_layout(device="pvc", operand="b", src1_precision="bf")
    assert (new.rows, new.cols) == (16, 16)
    assert np.array_equal(dpas_layout("pvc", "b", "bf").index, new.index)
    with pytest.warns(RenamedWarning, match="xmx.layout.layout: platform= is deprecated, use device=") as rec:
        old = dpas_layout(platform="pvc", operand="b", src1_precision="bf")
    assert [w.filename for w in rec] == [__file__]
    assert np.array_equal(old.index, new.index) and np.array_equal(old.bit, new.bit)
    with pytest.warns(RenamedWarning, match="xmx.layout.shape: platform="):
        assert shape(platform="dg2", src1_precision="s8") == shape("dg2", "s8")
    with pytest.warns(RenamedWarning, match="xmx.layout.operand_layout: platform="):
        assert operand_layout(platform="dg2", src1_precision="s8", operand="dst") == \
            operand_layout("dg2", "s8", "s8", "dst")
    with pytest.raises(InvalidValue, match="give device= only"):
        dpas_layout("pvc", "b", "bf", platform="dg2")
    with pytest.raises(InvalidValue, match="device= not given"):
        dpas_layout(operand="b", src1_precision="bf")
    with pytest.raises(TypeError, match="unexpected keyword argument 'platfrom'"):
        shape(platfrom="pvc", src1_precision="bf")
