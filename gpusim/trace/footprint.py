"""Per-CTA global-memory footprints of an emulator run.

A CTA's footprint is, per global load or store instruction, the distinct 32-byte sectors that its
executions touch over the whole run (every loop iteration, including those a sampled-mode trace
leaves out). Sampled mode extends the footprints of the CTAs it emulates to the whole grid
(`gpusim.timing.mem.grid`) to estimate DRAM traffic that depends on the grid's order: inputs read
again after the L2 lost them, and outputs written back before the kernel ends.
"""

from __future__ import annotations

import numpy as np

from gpusim.trace.lanes import lane_bits


def cta_footprints(emu, kind_of_pc: np.ndarray, shift: int = 5) -> dict:
    """{(cta id, instruction index, warp of the CTA): sorted distinct sector numbers (uint64)} over the
    emulator log's global accesses (per warp too: one instruction may read one matrix in some warps
    and another in the others, as maxas's SGEMM does). `kind_of_pc[i]` is 1 for a global load, 2 for
    a global store, 0 otherwise (only those are kept); lanes that did not execute are left out."""
    log = emu.log
    keep = [s for s in sorted(log.mem) if kind_of_pc[log.pcs[s]]]
    if not keep:
        return {}
    wpc = emu.launch.warps_per_cta
    local = np.arange(len(emu.warp_cta))
    n_pc = len(kind_of_pc)
    key_of_warp = (np.asarray(emu.ctas, dtype=np.int64)[np.asarray(emu.warp_cta)] * wpc + local % wpc) * n_pc
    groups, sectors = [], []
    exact = log.exec_masks is not None and len(log.exec_masks) == len(log.pcs)
    for s in keep:
        block = log.mem[s][0].reshape(-1, 32).astype(np.uint64, copy=False)
        mask = (log.exec_masks[s] & log.masks[s]) if exact else log.masks[s]
        lanes = lane_bits(mask)
        secs = block >> np.uint64(shift)
        # a lane whose sector is its executing left neighbour's adds nothing (most lanes of a coalesced access)
        repeat = np.zeros_like(lanes)
        repeat[:, 1:] = lanes[:, :-1] & (secs[:, 1:] == secs[:, :-1])
        rows, cols = np.nonzero(lanes & ~repeat)
        secs = secs[rows, cols]
        group = key_of_warp[np.asarray(log.warps[s], dtype=np.int64)[rows]] + int(log.pcs[s])
        groups.append(group)
        sectors.append(secs)
    group, sec = np.concatenate(groups), np.concatenate(sectors)
    order = np.lexsort((sec, group))
    group, sec = group[order], sec[order]
    new = np.r_[True, (group[1:] != group[:-1]) | (sec[1:] != sec[:-1])]
    group, sec = group[new], sec[new]
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    ends = np.r_[starts[1:], len(group)]
    out = {}
    for a, b in zip(starts, ends):
        warp, pc = divmod(int(group[a]), n_pc)
        out[(warp // wpc, pc, warp % wpc)] = sec[a:b]
    return out
