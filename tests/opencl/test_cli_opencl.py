"""The ``systolic opencl`` verbs."""

import json
import subprocess
import sys

from click.testing import CliRunner

from systolic.cli import cli


def run(*args):
    return CliRunner().invoke(cli, ["opencl", *args])


def test_list_json_per_platform():
    for platform, count in (("dg2", 246), ("pvc", 148), ("xe3p", 196)):
        r = run("list", "--platform", platform, "--json")
        assert r.exit_code == 0, r.output
        d = json.loads(r.output)
        assert len(d) == count
    d = json.loads(run("list", "--platform", "dg2", "--name", "u8_i8_split", "--json").output)
    assert [(x["M"], x["a"], x["dpas"]) for x in d] == [(2, "uint", "dpasw.s8.u8.8.2"), (4, "uint2", "dpasw.s8.u8.8.4"),
                                                      (8, "uint4", "dpasw.s8.u8.8.8")]
    assert run("list").exit_code == 0


def test_explain_json_tells_who_holds_what():
    r = run("explain", "intel_sub_group_tf32_tf32_matrix_mad_k8", "--platform", "pvc", "--m", "4", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    a = d["operands"]["a"]
    assert a["holder"] == ["work_item", "component"]
    by_wi = {h["work_item"]: h["components"] for h in a["holders"]}
    assert by_wi[9] == [[[1, 1]], [[3, 1]]]          # work-item 9: odd rows of column 1
    b = {h["work_item"]: h["components"] for h in d["operands"]["b"]["holders"]}
    assert b[3][5] == [[5, 3]]
    assert run("explain", "intel_sub_group_i4_i4_matrix_mad_k64", "--platform", "dg2").exit_code == 0


def test_explain_unavailable_is_one_error_line():
    r = subprocess.run([sys.executable, "-m", "systolic", "opencl", "explain",
                        "intel_sub_group_i8_i8_split_matrix_mad_k32", "--platform", "pvc"],
                       capture_output=True, text=True)
    assert r.returncode == 1
    assert r.stderr.startswith("error:") and "DPASW" in r.stderr


def test_help():
    for args in ((), ("list",), ("explain",)):
        r = run(*args, "--help")
        assert r.exit_code == 0 and "Usage" in r.output
