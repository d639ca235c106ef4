"""Regenerate the layout pictures of docs/layouts.md and the README: ``python docs/img/make_layout_pictures.py``.

Every picture is drawn from the operands' ``systolic.layout.Layout`` objects by ``systolic.explorer``.
"""

from pathlib import Path

from systolic.explorer import layout_svg, mma_layouts, mma_svg, resolve

HERE = Path(__file__).resolve().parent


def mma(fname, layer, title, view="lane", highlight=None, **opts):
    d = mma_layouts(layer, **opts)
    (HERE / fname).write_text(mma_svg(d["A"], d["B"], d["C"], view=view, title=title, highlight=highlight))


def one(fname, layer, operand, view="holder", title=None, **opts):
    (HERE / fname).write_text(layout_svg(resolve(layer, operand, **opts), view=view, title=title))


if __name__ == "__main__":
    mma("dpas_pvc_bf16.svg", "dpas", "DPAS bf16 on PVC (SIMD16): D = A x B + C, cells = lane.component",
        device="pvc", precision="bf16")
    mma("dpas_pvc_tf32.svg", "dpas", "DPAS tf32 on PVC: lanes 0-7 hold the even rows of A, 8-15 the odd rows",
        device="pvc", precision="tf32")
    mma("dpas_dg2_s8_rc4.svg", "dpas", "DPAS int8 on DG2 (SIMD8), rc 4: four K values per lane and dword",
        device="dg2", precision="s8", rc=4)
    one("dpasw_dg2_bf16_a.svg", "dpasw", "a", title="DPASW bf16 A on DG2: GRFs 0-3 from EU0, 4-7 from EU1",
        precision="bf16")
    mma("amx_tdpbf16ps.svg", "amx", "AMX TDPBF16PS 4x4x8: B is VNNI (pairs of K in one dword)", view="holder",
        instruction="tdpbf16ps", m=4, n=4, k=8)
    mma("opencl_pvc_bf16.svg", "opencl", "OpenCL intel_sub_group_bf16_bf16_matrix_mad_k16 on PVC: work-item.component",
        view="holder", name="intel_sub_group_bf16_bf16_matrix_mad_k16", device="pvc", m=8)
    one("opencl_dg2_split_a.svg", "opencl", "a", title="OpenCL split bf16 on DG2: a's rows shared by two sub-groups",
        name="intel_sub_group_bf16_bf16_split_matrix_mad_k16", device="dg2", m=8)
    mma("sycl_pvc_bf16_16x16x16.svg", "sycl", "joint_matrix bf16 16x16x16 on PVC (two DPAS): work-item.index",
        view="holder", device="pvc", type="bf16", m=16, n=16, k=16, ctype="fp32", layout="ext_intel_packed")
    mma("dpas_pvc_bf16_d2_3.svg", "dpas", "DPAS bf16 on PVC, RC 4: what D[2, 3] is made of", view="holder",
        highlight=(2, 3), device="pvc", precision="bf16", rc=4)
    one("dpas_pvc_bf16_b_grf.svg", "dpas", "b", title="DPAS Src1 (B) bf16 on PVC: GRF.dword@bit",
        device="pvc", precision="bf16")
