"""The work-items of one launch batch, as lanes (issue 21 item 3).

A batch is whole work-groups; a work-group is padded to a whole number of sub-groups (the last one partial when
the work-group size is not a multiple of S: its missing work-items are invalid lanes). Lane ``l``:
work-group ``l // wg_lanes`` of the batch, local linear id ``l % wg_lanes`` (x fastest, then y, then z; Intel's
compilers cut sub-groups from it, S at a time: cl_intel_subgroups "Execution Model"), sub-group
``local_linear // S``, sub-group local id ``local_linear % S``. Lanes of one sub-group are contiguous, so a
sub-group value is ``value.reshape(G, S, ...)``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Lanes"]


class Lanes:
    def __init__(self, S: int, local: tuple[int, int, int], global_size: tuple[int, int, int], work_dim: int,
                 groups: list[tuple[int, int, int]], offset=(0, 0, 0)) -> None:
        self.S = S
        self.local = local
        self.global_size = global_size
        self.work_dim = work_dim
        self.offset = offset
        wg = local[0] * local[1] * local[2]
        self.wg_size = wg
        self.num_sub_groups = -(-wg // S)
        self.wg_lanes = self.num_sub_groups * S
        self.n_wg = len(groups)
        self.n = self.n_wg * self.wg_lanes
        self.G = self.n // S
        lin = np.arange(self.wg_lanes)
        self.group_of = np.repeat(np.arange(self.n_wg), self.wg_lanes)
        loc_lin = np.tile(np.minimum(lin, wg - 1), self.n_wg)
        self.valid = np.tile(lin < wg, self.n_wg)
        self.all_valid = bool(self.valid.all())
        lx = loc_lin % local[0]
        ly = (loc_lin // local[0]) % local[1]
        lz = loc_lin // (local[0] * local[1])
        self.local_id = [lx.astype(np.int64), ly.astype(np.int64), lz.astype(np.int64)]
        gid = np.asarray(groups, dtype=np.int64).reshape(-1, 3)
        self.group_id = [np.repeat(gid[:, d], self.wg_lanes) for d in range(3)]
        self.groups = [tuple(int(x) for x in g) for g in gid]
        self.global_id = [self.group_id[d] * local[d] + self.local_id[d] + offset[d] for d in range(3)]
        self.sg_local_id = np.tile(lin % S, self.n_wg).astype(np.int32)
        self.sg_id = np.tile(lin // S, self.n_wg).astype(np.int32)
        # lanes per sub-group that exist (the partial last sub-group)
        self.sg_size = np.tile(np.minimum(S, wg - (lin // S) * S), self.n_wg).astype(np.int32)

    def uniform_group(self, d: int):
        """get_group_id(d) as a scalar when the batch is one work-group, else per lane."""
        return self.group_id[d][0] if self.n_wg == 1 else self.group_id[d]

    def describe(self, lane: int) -> dict:
        lane = int(lane)
        return {"work_item": tuple(int(self.global_id[d][lane]) for d in range(self.work_dim)),
                "work_group": self.groups[int(self.group_of[lane])][:self.work_dim],
                "local_id": tuple(int(self.local_id[d][lane]) for d in range(self.work_dim)),
                "sub_group": int(self.sg_id[lane]), "sub_group_local_id": int(self.sg_local_id[lane])}
