"""Per-CTA global-memory footprints of an emulator run.

A CTA's footprint is, per global load or store instruction, the distinct 32-byte sectors that its
executions touch over the whole run (every loop iteration, including those a sampled-mode trace
leaves out). Sampled mode extends the footprints of the CTAs it emulates to the whole grid
(`gpusim.timing.mem.grid`) to estimate DRAM traffic that depends on the grid's order: inputs read
again after the L2 lost them, and outputs written back before the kernel ends.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from gpusim.trace.lanes import lane_bits


class Lanes(NamedTuple):
    """An emulator log's global accesses lane by lane (`global_lanes`): per executing lane whose sector is
    not its executing left neighbour's, its request (one warp's execution of one instruction), group
    ((CTA, warp of the CTA, instruction), as `_key` decodes it) and sector."""
    request: np.ndarray
    group: np.ndarray
    sector: np.ndarray
    warps_per_cta: int
    n_pc: int


def global_lanes(emu, kind_of_pc: np.ndarray, shift: int = 5) -> Lanes | None:
    """The emulator log's global accesses lane by lane (`Lanes`; sectors of 2**shift bytes), None without
    any. `kind_of_pc[i]` is 1 for a global load, 2 for a global store, 0 otherwise (only those are
    kept); lanes that did not execute are left out; most lanes of a coalesced access repeat their left
    neighbour's sector and are dropped here."""
    log = emu.log
    keep = [s for s in sorted(log.mem) if kind_of_pc[log.pcs[s]]]
    if not keep:
        return None
    wpc = emu.launch.warps_per_cta
    local = np.arange(len(emu.warp_cta))
    n_pc = len(kind_of_pc)
    key_of_warp = (np.asarray(emu.ctas, dtype=np.int64)[np.asarray(emu.warp_cta)] * wpc + local % wpc) * n_pc
    requests, groups, sectors = [], [], []
    exact = log.exec_masks is not None and len(log.exec_masks) == len(log.pcs)
    first = 0
    for s in keep:
        block = log.mem[s][0].reshape(-1, 32).astype(np.uint64, copy=False)
        mask = (log.exec_masks[s] & log.masks[s]) if exact else log.masks[s]
        lanes = lane_bits(mask)
        secs = block >> np.uint64(shift)
        repeat = np.zeros_like(lanes)
        repeat[:, 1:] = lanes[:, :-1] & (secs[:, 1:] == secs[:, :-1])
        rows, cols = np.nonzero(lanes & ~repeat)
        requests.append(first + rows)
        first += len(block)
        groups.append(key_of_warp[np.asarray(log.warps[s], dtype=np.int64)[rows]] + int(log.pcs[s]))
        sectors.append(secs[rows, cols])
    return Lanes(np.concatenate(requests), np.concatenate(groups), np.concatenate(sectors), wpc, n_pc)


def _key(group: int, wpc: int, n_pc: int) -> tuple[int, int, int]:
    """(CTA id, instruction index, warp of the CTA) of a group number."""
    warp, pc = divmod(int(group), n_pc)
    return warp // wpc, pc, warp % wpc


def _runs(*cols):
    """The rows of the columns sorted (the last column varying fastest), repeated rows dropped."""
    order = np.lexsort(cols[::-1])
    cols = [c[order] for c in cols]
    new = np.zeros(len(cols[0]), dtype=bool)
    new[:1] = True
    for c in cols:
        new[1:] |= c[1:] != c[:-1]
    return [c[new] for c in cols]


def _by_group(lanes: Lanes, group: np.ndarray, *cols) -> dict:
    """{(cta id, instruction index, warp of the CTA): (each column's run)} for `group` sorted."""
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    ends = np.r_[starts[1:], len(group)]
    return {_key(group[a], lanes.warps_per_cta, lanes.n_pc): tuple(c[a:b] for c in cols) for a, b in zip(starts, ends)}


def cta_footprints(lanes: Lanes | None) -> dict:
    """{(cta id, instruction index, warp of the CTA): sorted distinct sector numbers (uint64)} of the
    accesses `lanes` (`global_lanes`) holds: per warp too, as one instruction may read one matrix in
    some warps and another in the others (maxas's SGEMM)."""
    if lanes is None:
        return {}
    group, sec = _runs(lanes.group, lanes.sector)
    return {key: run for key, (run,) in _by_group(lanes, group, sec).items()}


def block_asks(lanes: Lanes | None, fetch: int) -> dict:
    """{(cta id, instruction index, warp of the CTA): (blocks, asked)}: the aligned blocks of `fetch`
    sectors (an L2 miss's DRAM fetch, `memory.l2.dram_fetch_bytes`) that the group's requests touch,
    ascending, and for each the most of its sectors one request of the group asks for. A miss by a
    request that asks fewer brings the rest alongside (`l2_block_fills`, mem/l2.py `_fetched_with`)."""
    if lanes is None:
        return {}
    req, group, sec = _runs(lanes.request, lanes.group, lanes.sector)  # distinct sectors per request
    blk = sec // np.uint64(fetch)
    start = np.flatnonzero(np.r_[True, (req[1:] != req[:-1]) | (blk[1:] != blk[:-1])])
    asked = np.diff(np.r_[start, len(req)])  # sectors per (request, block)
    group, blk = group[start], blk[start]
    order = np.lexsort((asked, blk, group))  # per (group, block) the largest last
    group, blk, asked = group[order], blk[order], asked[order]
    last = np.r_[(group[1:] != group[:-1]) | (blk[1:] != blk[:-1]), True]
    return _by_group(lanes, group[last], blk[last], asked[last])
