"""The host API's entry points refuse wrong types with InvalidValue naming the rule (reviewer's findings: a bare
ValueError for Buffer(ctx, "x", size=8), size="8" silently taken as 8, an AttributeError for prg.k(None, ...))."""
import numpy as np
import pytest

import systolic.cl as cl
from systolic.errors import InvalidValue, UnsupportedCombination


@pytest.fixture(scope="module")
def ctx():
    return cl.Context(device="pvc")


@pytest.mark.parametrize("kw, what", [
    (dict(flags="x", size=8), "flags"), (dict(flags=0, size="8"), "size"), (dict(flags=0, size=8.0), "size"),
    (dict(flags=True, size=8), "flags"), (dict(flags=1 << 40, size=8), "flags"), (dict(flags=-1, size=8), "flags"),
    (dict(flags=0, size=True), "size"), (dict(flags=0, size=2 ** 64), "size"),
    (dict(flags=cl.mem_flags.COPY_HOST_PTR, hostbuf=np.zeros(4, object)), "hostbuf"),
    (dict(flags=cl.mem_flags.COPY_HOST_PTR, hostbuf="abc"), "hostbuf"),
    (dict(flags=cl.mem_flags.COPY_HOST_PTR, hostbuf=np.zeros(4), size="8"), "size"),
])
def test_buffer_refuses_wrong_types(ctx, kw, what):
    with pytest.raises(InvalidValue, match=what):
        cl.Buffer(ctx, **kw)


def test_buffer_needs_a_context():
    with pytest.raises(InvalidValue, match="Context"):
        cl.Buffer(None, 0, size=8)


def test_buffer_still_takes_numpy_integers(ctx):
    assert cl.Buffer(ctx, np.int64(cl.mem_flags.READ_WRITE), size=np.uint32(8)).size == 8


@pytest.fixture(scope="module")
def prg(ctx):
    return cl.Program(ctx, "kernel void k(global int* x) { x[get_global_id(0)] = 1; }").build()


@pytest.mark.parametrize("queue", [None, "q", 3])
def test_kernel_call_needs_a_queue(ctx, prg, queue):
    b = cl.Buffer(ctx, 0, size=64)
    with pytest.raises(InvalidValue, match="CommandQueue"):
        prg.k(queue, (16,), (16,), b)


def test_copies_need_a_queue_and_integer_offsets(ctx):
    q = cl.CommandQueue(ctx)
    b = cl.Buffer(ctx, 0, size=64)
    with pytest.raises(InvalidValue, match="CommandQueue"):
        cl.enqueue_copy(None, np.zeros(16, np.int32), b)
    with pytest.raises(InvalidValue, match="device_offset"):
        cl.enqueue_copy(q, np.zeros(4, np.int32), b, device_offset="4")
    with pytest.raises(InvalidValue, match="CommandQueue"):
        cl.enqueue_fill_buffer(None, b, np.int32(1), 0, 64)
    with pytest.raises(InvalidValue, match="size"):
        cl.enqueue_fill_buffer(q, b, np.int32(1), 0, "64")
    with pytest.raises(InvalidValue, match="Buffer"):
        cl.enqueue_fill_buffer(q, np.zeros(4), np.int32(1), 0, 16)


@pytest.mark.parametrize("device", [np.array([1, 2]), 3])
def test_context_device_is_a_name(device):
    with pytest.raises(InvalidValue, match="device"):
        cl.Context(device=device)


def test_context_devices_names_one_device():
    """pyopencl's devices= names the device too: beside a device= naming another one, or as anything but one name,
    it was silently dropped (the context became device= or pvc); now InvalidValue."""
    assert cl.Context("dg2").platform.name == cl.Context(["dg2"]).platform.name == "dg2"
    assert cl.Context("xehpc", device="pvc").platform.name == "pvc"          # one device, two of its names: fine
    assert cl.Context(["spr"], device="sapphirerapids").platform.name == "spr"   # a CPU device too
    with pytest.raises(InvalidValue, match="devices= and device= name two devices"):
        cl.Context("dg2", device="pvc")
    for bad in (["dg2", "pvc"], [object()], 3, []):
        with pytest.raises(InvalidValue, match="devices is one device name or a one-name list"):
            cl.Context(bad)


def test_a_launch_beyond_the_interpreters_reach_is_refused_at_once(ctx, prg):
    # 2^40 work-items would build a list of 2^36 work-groups (MemoryError or hours): refused before any work
    q = cl.CommandQueue(ctx)
    with pytest.raises(UnsupportedCombination, match="work-items"):
        prg.k(q, (1 << 40,), (16,), cl.Buffer(ctx, 0, size=64))
