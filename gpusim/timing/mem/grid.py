"""The grid's DRAM traffic from its CTAs' footprints, wave by wave (sampled mode's cold counters).

Sampled mode simulates a few SMs, whose L2 cannot see what the rest of the grid does to it: whether
an input comes from DRAM once or again (the L2 lost it between two waves of CTAs), and whether an
output is written back during the kernel (later waves pushed it out) or stays dirty in L2. Both
depend on the grid's order, so this module replays the grid at the level of footprints:

- **Footprints for the whole grid.** Each emulated CTA's footprint (`gpusim.trace.footprint`) is,
  per global load or store instruction and warp, a set of sectors (one instruction may read A in
  some warps and B in others, as maxas's SGEMM does). A GEMM, transpose or copy moves each set rigidly with the block index (`base + blockIdx . stride`, a stride per
  instruction and grid dimension): the strides come from CTA 0 and the CTAs one step along each
  grid dimension, and every other emulated CTA must agree, else there is no grid model (None) and
  the caller keeps its per-SM estimate.
- **Waves.** CTAs launch in id order, `slots` (busy SMs x CTAs per SM) at a time; the model takes
  them in waves of `slots` that run side by side. (CTAs of one GEMM wave step through K in near
  lockstep: detailed mode's DRAM reads on dgemm_unroll gtx970 1024 are the sum of its 5 waves'
  footprints to the sector.)
- **Reads.** A wave reads from DRAM the sectors of its footprint that the L2 does not hold when it
  starts: the L2 holds the sectors of the latest whole waves that fit in `capacity` together (loads
  and stores; each sector counted in the wave that touched it last). A wave that does not fit leaves
  nothing the next wave reads: that one reads in the same order, an LRU's worst case. (dgemm_naive_coalesced
  h100 2048: 1056 CTAs a wave touch 34 MiB of inputs and 2 MiB of outputs, just over the 36 MiB the
  L2 holds, so each of the 16 waves reads B again: 545 MiB, as Nsight measures; sampled mode's SMs
  gave 483.)
- **Write-backs**, the three rules `mem/l2.py` applies sector by sector, applied to each wave's
  outputs (written at its end, oldest first): a wave's output sector is written back before the
  kernel ends if after it more than `dirty_limit` sectors are stored, or more than `reach`
  distinct reused sectors (stores, and loads that hit L2: read by two CTAs of a wave, or found from
  an earlier wave) are touched, or more than `capacity` distinct sectors in all.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

LOAD, STORE = 1, 2


def access_kinds(program, cfg) -> np.ndarray:
    """Per instruction index: LOAD for a global load, STORE for a global store, else 0 (timing.static's kinds)."""
    from gpusim.timing.static import GLOAD, GSTORE, static_info

    return np.array([LOAD if s.kind == GLOAD else STORE if s.kind == GSTORE else 0 for s in static_info(program, cfg)],
                    dtype=np.int8)


def block_index(ctas: np.ndarray, grid) -> np.ndarray:
    """(n, 3) block indices of linear CTA ids (x fastest)."""
    gx, gy = grid[0], grid[1]
    return np.stack([ctas % gx, (ctas // gx) % gy, ctas // (gx * gy)], axis=1)


def spans(ctas, grid) -> bool:
    """Whether the block indices of `ctas` (CTA 0 among them) tell a stride along every grid
    dimension of more than one block: their offsets from CTA 0 have full rank there."""
    dims = [d for d in range(3) if grid[d] > 1]
    if not dims:
        return True
    b = block_index(np.asarray(ctas, dtype=np.int64), grid)[:, dims]
    return np.linalg.matrix_rank(b.astype(float)) == len(dims)


def extra_ctas(ctas, grid) -> list[int]:
    """CTAs to emulate besides `ctas` so that their block indices tell every stride: CTA 0 and the
    CTA one step along each grid dimension that the others do not span yet."""
    have = sorted(set(ctas) | {0})
    for d in range(3):
        if grid[d] > 1 and not spans(have, grid):
            unit = int(np.prod(grid[:d]))
            if unit not in have and np.linalg.matrix_rank(block_index(np.array(have + [unit]), grid).astype(float)) > \
                    np.linalg.matrix_rank(block_index(np.array(have), grid).astype(float)):
                have.append(unit)
    return sorted(set(have) - set(ctas))


class GridFootprint:
    """Every CTA's footprint as CTA 0's moved by the block index (see the module docstring)."""

    def __init__(self, sets: dict, grid, asks: dict | None = None, fetch: int = 1):
        """`sets`: {(kind, strides along x, y, z): CTA 0's sectors that move so (sorted, distinct)};
        `asks`: for the same keys, CTA 0's blocks of `fetch` sectors and the most of each block's
        sectors one request asks for (`gpusim.trace.footprint.block_asks`), where known."""
        self.sets = [(kind, np.array(stride, np.int64), s0) for (kind, stride), s0 in sets.items()]
        self.asks = [(asks or {}).get(key) for key in sets]
        self.fetch = fetch
        self.grid = tuple(grid)
        self._buckets: dict = {}  # (set index, modulus, block) -> CTA 0's blocks by residue (see `_residues`)
        self._blocks: dict = {}  # (set index, block) -> the set's strides and CTA 0's sectors in blocks

    @classmethod
    def fit(cls, footprints: dict, kind_of_pc, grid, asks: dict | None = None,
            fetch: int = 1) -> "GridFootprint | None":
        """From {(cta, instruction, warp): sectors} of the emulated CTAs; None where the sets do not
        move rigidly, or the CTAs' block indices do not tell the strides (`spans`). Sets that move
        alike (same kind, same strides) are kept as one. `asks` ({(cta, instruction, warp): (blocks,
        asked)}, `block_asks` for blocks of `fetch` sectors): CTA 0's, kept per set (the most asked
        of a block over the set's groups) for the fills of its misses (`waves`)."""
        ctas = sorted({c for c, _, _ in footprints})
        if 0 not in ctas or not spans(ctas, grid):
            return None
        keys = sorted({(p, w) for _, p, w in footprints})
        others = np.array([c for c in ctas if c], dtype=np.int64)
        b = block_index(others, grid).astype(float)
        empty = np.zeros(0, np.uint64)
        moving = {}  # (kind, strides) -> CTA 0's sets that move so
        asked = {}  # (kind, strides) -> CTA 0's (blocks, asked) of those sets
        for p, w in keys:
            s0 = footprints.get((0, p, w), empty).astype(np.int64)
            if not len(s0):
                return None
            sets = [footprints.get((int(c), p, w), empty) for c in others]
            if any(len(sc) != len(s0) for sc in sets):
                return None
            moved = np.array([int(sc[0]) - int(s0[0]) for sc in sets], dtype=float)
            stride = np.zeros(3, np.int64)
            if len(sets):
                stride = np.rint(np.linalg.lstsq(b, moved, rcond=None)[0]).astype(np.int64)
            for c, sc in zip(others, sets):  # every emulated CTA must be where the strides put it
                at = int(block_index(np.array([c]), grid)[0] @ stride)
                if not np.array_equal(sc.astype(np.int64), s0 + at):
                    return None
            key = (int(kind_of_pc[p]), tuple(stride.tolist()))
            moving.setdefault(key, []).append(s0)
            if asks is not None and (0, p, w) in asks:
                asked.setdefault(key, []).append(asks[(0, p, w)])
        sets = {key: _unique(np.concatenate(s)) for key, s in moving.items()}
        most = {key: _most(a) for key, a in asked.items() if len(a) == len(moving[key])}
        return cls(sets, grid, most, fetch)

    def aligned(self, kind: int, block: int) -> bool:
        """Whether every set of `kind` moves by whole blocks of `block` sectors."""
        return all(not (stride % block).any() for k, stride, _ in self.sets if k == kind)

    def sectors(self, ctas: np.ndarray, kind: int, modulus: int = 1, block: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """Distinct sectors the CTAs' accesses of `kind` touch, and how many (CTA, instruction)
        footprints touch each; with `modulus` p > 1 only the sectors that are 0 modulo p (a sample).
        With `block` > 1 (the sets `aligned` to it): every sector of the aligned blocks of `block`
        sectors they touch (an L2 miss's DRAM fetch, `memory.l2.dram_fetch_bytes`), the sample taken by
        block (block id 0 modulo p)."""
        return self.blocks(ctas, kind, modulus, block)[:2]

    def blocks(self, ctas: np.ndarray, kind: int, modulus: int = 1,
               block: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """`sectors`, and per sector whether a miss brings it alongside a sector its request asked for
        (an L2 block fill): of a block whose requests ask for at most a of its sectors, `block` - a
        are marked (the fewest over the sets that touch it; none where the sets' asks are not known)."""
        if block > 1:
            blocks, weights, holes = self._sectors(ctas, kind, modulus, block)
            fill = np.arange(block)[None, :] >= (block - holes)[:, None]
            return (blocks[:, None] * block + np.arange(block)).ravel(), np.repeat(weights, block), fill.ravel()
        secs, weights, _ = self._sectors(ctas, kind, modulus, 1)
        return secs, weights, np.zeros(len(secs), dtype=bool)

    def _sectors(self, ctas: np.ndarray, kind: int, modulus: int,
                 block: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """`sectors` in units of `block` sectors (block ids), with each block's holes (see `blocks`)."""
        bidx = block_index(ctas, self.grid)
        parts, weights, holes = [], [], []
        for i, (k, _, _) in enumerate(self.sets):
            if k != kind:
                continue
            stride, s0, h0 = self._in_blocks(i, block)
            offsets, counts = np.unique(bidx @ stride, return_counts=True)
            if modulus == 1:
                parts.append((s0[None, :] + offsets[:, None]).ravel())
                weights.append(np.repeat(counts, len(s0)))
                holes.append(np.tile(h0, len(offsets)))
                continue
            buckets = self._residues(i, modulus, block)
            need = (-offsets) % modulus  # the residue of CTA 0's sectors that an offset moves to 0
            for q in np.unique(need):
                (b, h), at = buckets[q], need == q
                parts.append((b[None, :] + offsets[at][:, None]).ravel())
                weights.append(np.repeat(counts[at], len(b)))
                holes.append(np.tile(h, int(at.sum())))
        if not parts:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
        secs, weights, holes = np.concatenate(parts), np.concatenate(weights), np.concatenate(holes)
        order = np.lexsort((holes, secs))  # per sector the fewest holes first
        secs, weights, holes = secs[order], weights[order], holes[order]
        first = np.flatnonzero(np.r_[True, secs[1:] != secs[:-1]])
        return secs[first], np.add.reduceat(weights, first) if len(first) else weights, holes[first]

    def _in_blocks(self, i: int, block: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Set i's strides, CTA 0's distinct sectors in units of `block` sectors and each one's holes
        (`block` - the most of its sectors a request asks for; 0 where not known) (worked out once)."""
        if (i, block) not in self._blocks:
            stride, s0 = self.sets[i][1], self.sets[i][2]
            if block > 1:
                stride, s0 = stride // block, _unique(s0 // block)
            holes = np.zeros(len(s0), np.int64)
            ask = self.asks[i]
            if block > 1 and block == self.fetch and ask is not None and len(ask[0]):
                at = np.clip(np.searchsorted(ask[0], s0), 0, len(ask[0]) - 1)
                holes = np.where(ask[0][at] == s0, block - ask[1][at], 0)
            self._blocks[(i, block)] = (stride, s0, holes)
        return self._blocks[(i, block)]

    def _residues(self, i: int, modulus: int, block: int = 1) -> dict:
        """CTA 0's sectors (blocks of `block` sectors) of set i and their holes by their residue modulo
        `modulus` (worked out once)."""
        if (i, modulus, block) not in self._buckets:
            _, s0, h0 = self._in_blocks(i, block)
            res = s0 % modulus
            self._buckets[(i, modulus, block)] = {int(q): (s0[res == q], h0[res == q]) for q in range(modulus)}
        return self._buckets[(i, modulus, block)]

    def entries(self, n_ctas: int, slots: int) -> int:
        """Sector entries `waves` builds over the grid (before removing repeats): its time and memory."""
        total = 0
        for w0 in range(0, n_ctas, slots):
            bidx = block_index(np.arange(w0, min(n_ctas, w0 + slots)), self.grid)
            total += sum(len(np.unique(bidx @ stride)) * len(s0) for _, stride, s0 in self.sets)
        return total


def _most(asks: list) -> tuple[np.ndarray, np.ndarray]:
    """(blocks, asked) lists merged: distinct blocks, ascending, each with its largest `asked`."""
    blocks = np.concatenate([b for b, _ in asks]).astype(np.int64)
    asked = np.concatenate([a for _, a in asks]).astype(np.int64)
    order = np.lexsort((asked, blocks))
    blocks, asked = blocks[order], asked[order]
    last = np.r_[blocks[1:] != blocks[:-1], True] if len(blocks) else np.zeros(0, bool)
    return blocks[last], asked[last]


def _unique(a: np.ndarray) -> np.ndarray:
    """Sorted distinct values (by sorting: numpy's hash-based unique is slower here)."""
    a = np.sort(a)
    return a[np.r_[True, a[1:] != a[:-1]]] if len(a) else a


def _after(sets: list) -> np.ndarray:
    """after[w] = distinct sectors over sets[w + 1:] (a suffix union's size per wave)."""
    n = len(sets)
    if not n:
        return np.zeros(0, np.int64)
    secs = np.concatenate(sets)
    wave = np.repeat(np.arange(n), [len(s) for s in sets])
    if not len(secs):
        return np.zeros(n, np.int64)
    order = np.lexsort((wave, secs))
    secs, wave = secs[order], wave[order]
    last = np.r_[secs[1:] != secs[:-1], True]  # each sector's last wave
    per_wave = np.bincount(wave[last], minlength=n)
    return np.r_[np.cumsum(per_wave[::-1])[::-1][1:], 0]


class Replay(NamedTuple):
    """`waves`' counts, and `lookups`: the load sectors the counted waves look up in L2 (each wave's
    distinct ones), found there or read."""
    reads: int
    writes: int
    fills: int
    lookups: int


def waves(fp: GridFootprint, n_ctas: int, slots: int, capacity: int, dirty_limit: int | None,
          reach: int | None, fetch: int = 1, after_itself: bool = False) -> Replay:
    """(sectors read from DRAM, sectors written back to DRAM during the kernel, sectors of the reads
    that came alongside a missed one, not asked for: `l2_block_fills`; and the lookups, `Replay`), from a cold L2;
    capacity, dirty_limit and reach in sectors (the last two None where the card has no such rule).
    The L2 holds, when a wave starts, the sectors of the latest whole waves that fit in it together
    (each sector counted in the wave that touched it last). Grids of more than `MAX_ENTRIES` sector
    entries are replayed on a sample: the sectors that are 0 modulo the smallest odd prime p that
    brings them under it, against 1/p of each limit, the counts scaled by p (an odd prime shares no
    factor with the power-of-two strides of matrices, so every residue gets its share). `fetch` > 1:
    loads read whole aligned blocks of that many sectors (`memory.l2.dram_fetch_bytes`), where every
    load set moves by whole blocks (else sectors alone); a missed block's sectors that its requests do
    not ask for are block fills (`GridFootprint.blocks`; detailed mode counts a miss's block fills as
    `mem/l2.py` does, per request).

    `after_itself`: the launch follows a launch of the same grid on the same buffers (`memory.l2.initial:
    warm`, as CUDA-event loops relaunch): the grid is replayed twice and the counts are the second
    launch's. Its first waves find what the first launch's last waves left, if those fit (a grid whose
    waves cycle through more than the L2 holds finds none of it: an LRU's worst case again). Write-backs
    are those during the second launch: its own outputs' and the first launch's dirty outputs it pushes
    out (copy_float4 h100 1024, 64 MiB each way: 64.0 MiB, detailed mode 62.5)."""
    p = _modulus(fp.entries(n_ctas, slots))
    capacity, dirty_limit, reach = (None if x is None else max(1, x // p) for x in (capacity, dirty_limit, reach))
    loads, sharers, fills, outs = [], [], [], []
    block = fetch if fetch > 1 and fp.aligned(LOAD, fetch) else 1
    for w0 in range(0, n_ctas, slots):
        ctas = np.arange(w0, min(n_ctas, w0 + slots))
        sec, n, fill = fp.blocks(ctas, LOAD, p, block)
        loads.append(sec)
        sharers.append(n)
        fills.append(fill)
        outs.append(fp.sectors(ctas, STORE, p)[0])
    touched = [_unique(np.concatenate([a, b])) for a, b in zip(loads, outs)]
    universe = _unique(np.concatenate(touched))
    first = 0  # the first wave counted (the second launch's, `after_itself`): the same waves again
    if after_itself:
        first = len(loads)
        loads, sharers, fills, outs, touched = loads * 2, sharers * 2, fills * 2, outs * 2, touched * 2
    last = np.full(len(universe), -1, np.int64)  # the wave that touched each sector last
    per_wave = np.zeros(len(touched), np.int64)  # sectors whose last touch is each wave
    reads, filled, lookups, reused = 0, 0, 0, []
    for w, (sec, n, fill, t) in enumerate(zip(loads, sharers, fills, touched)):
        # the latest whole waves whose sectors fit (a wave that does not fit leaves nothing the next
        # one reads: it reads in the same order, an LRU's worst case)
        oldest = w - int((np.cumsum(per_wave[:w][::-1]) <= capacity).sum())
        found = last[np.searchsorted(universe, sec)] >= max(oldest, 0)  # (never touched: -1)
        if w >= first:
            lookups += len(sec)
            reads += int(len(sec) - found.sum())
            filled += int((fill & ~found).sum())
        reused.append(_unique(np.concatenate([sec[found | (n >= 2)], outs[w]])))
        ids = np.searchsorted(universe, t)
        before = last[ids]
        np.subtract.at(per_wave, before[before >= 0], 1)
        last[ids] = w
        per_wave[w] = len(ids)
    written = np.array([len(o) for o in outs], dtype=np.int64)
    if not first:
        back = _written_back(written, (_after(touched), _after(outs), _after(reused)), capacity, dirty_limit, reach)
        return Replay(reads * p, int(back.sum()) * p, filled * p, lookups * p)
    # the same waves twice: after a first-launch wave come all of the launch's sectors (the second
    # launch touches and stores every one of them again), after a second-launch wave what the cold
    # replay has after it; the first launch's outputs written back during the second are those by its
    # end less those by the first's end
    once_touched, once_outs = _after(touched[:first]), _after(outs[:first])
    every = (len(universe), len(_unique(np.concatenate(outs[:first]))))
    back = _written_back(written, (np.r_[np.full(first, every[0]), once_touched],
                                   np.r_[np.full(first, every[1]), once_outs], _after(reused)),
                         capacity, dirty_limit, reach)
    back[:first] -= _written_back(written[:first], (once_touched, once_outs, _after(reused[:first])), capacity,
                                  dirty_limit, reach)
    return Replay(reads * p, int(back.sum()) * p, filled * p, lookups * p)


def _written_back(written: np.ndarray, after: tuple, capacity: int, dirty_limit: int | None,
                  reach: int | None) -> np.ndarray:
    """Per wave, how many of its output sectors are written back before the waves given end: those
    after which (`after`: distinct sectors touched, stored, reused in the waves after each) more than
    `capacity` distinct sectors are touched, more than `dirty_limit` stored, or more than `reach`
    reused (the three rules of the module docstring)."""
    back = np.zeros(len(written), dtype=np.int64)
    for limit, later in zip((capacity, dirty_limit, reach), after):
        if limit is not None:
            back = np.maximum(back, np.clip(written + later - limit, 0, written))
    return back


# sector entries (before repeats are removed) that `waves` replays in full; more are sampled. A speed and
# memory limit, not fitted: the suite's n <= 1024 grids and the GTX 970's take up to 4.5 M (exact);
# n=2048 copies and naive GEMMs 9-19 M, SGEMMs at 4096 135 M (45 s and 10 GB in full)
MAX_ENTRIES = 8_000_000


def _modulus(entries: int) -> int:
    """1 when `entries` fit MAX_ENTRIES, else the smallest odd prime p with entries / p within it."""
    if entries <= MAX_ENTRIES:
        return 1
    p = max(3, -(-entries // MAX_ENTRIES))
    p += 1 - p % 2
    while any(p % d == 0 for d in range(3, int(p ** 0.5) + 1, 2)):
        p += 2
    return p
