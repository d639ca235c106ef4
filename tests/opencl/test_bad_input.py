"""Bad input to the OpenCL runner found by the bad-input audit: typed errors naming the rule and the values.

Oracle for the work-group limit: intel/compute-runtime shared/source/device/device_caps.cpp
(``deviceInfo.maxWorkGroupSize = std::min(maxWS, 1024u)``): no Intel GPU work-group has more than 1024 items.
"""

from __future__ import annotations

import pytest

from systolic.errors import InvalidValue, UnsupportedCombination
from systolic.opencl import runner


def _noop(*a):
    return None


@pytest.mark.parametrize("local", [(2048,), (1 << 16,), (32, 64), (16, 8, 16)])
def test_work_group_is_at_most_1024(local):
    with pytest.raises(UnsupportedCombination, match="CL_INVALID_WORK_GROUP_SIZE") as ei:
        runner.run(_noop, local, local, device="pvc")
    v = ei.value.values
    assert v["local_size"] == local and v["max"] == 1024 and "compute-runtime" in ei.value.rule


def test_work_group_of_1024_runs():
    calls = []
    runner.run(lambda: calls.append(runner.get_sub_group_id()), (1024,), (1024,), device="pvc")
    assert sorted(calls) == list(range(1024 // 16))


def test_kernel_and_args_are_checked():
    with pytest.raises(InvalidValue, match="run needs a kernel") as ei:
        runner.run(None, (16,), (16,), device="pvc")
    assert ei.value.values == {"kernel": "NoneType"}
    with pytest.raises(InvalidValue, match="args is a tuple") as ei:
        runner.run(_noop, (16,), (16,), 5, device="pvc")
    assert ei.value.values == {"args": "int"}


def test_huge_global_range_is_typed():
    # 2**56 work-groups: itertools.product would hold them as a 512 PiB tuple, beyond any address space, so the
    # allocation fails at once whatever the host's overcommit policy
    with pytest.raises(InvalidValue, match="more work-groups than this host can enumerate") as ei:
        runner.run(_noop, (1 << 60,), (16,), device="pvc")
    assert ei.value.values["groups"] == [1 << 56]
