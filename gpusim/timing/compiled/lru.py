"""Least-recently-used sets of sector addresses, as arrays a compiled function can keep.

These are the `OrderedDict`s of mem/l2.py (`SectorCache`, the dirty list) with the same operations
and the same order: a hash index from sector to node, and a doubly linked list of nodes from the
least to the most recently used. One LRU is the tuple

    (slots, links, keys, vals, meta, free)

- slots: int32[2 ** bits], an open-addressing hash table (linear probing) of nodes, keyed by their
  sectors (`keys`); 0 when empty (node 0 is never an entry, so that zeroed memory is an empty table);
- links: int32[nodes, 2], each node's (previous, next); node 0 is the list's head: its next is the
  oldest entry, its previous the newest;
- keys, vals: the sector of each node and its value (a sector's fill cycle; unused for the dirty list);
- meta: int64[4]: entries, capacity, nodes handed out so far, bits of the hash table;
- free: int32[nodes] (free[0]: how many are stacked), nodes given back by removals.

Node numbers are 32-bit and the table holds nodes, not (sector, node) pairs: the L2, dirty and reach
LRUs of the H100 (1.18 M, 0.70 M and 0.88 M sectors) take 111 MB instead of 245 MB once full.

The list holds `capacity` + 1 entries for a moment: an insertion comes before the eviction it causes,
as in `OrderedDict` (`fill` then `popitem`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

NONE = -1  # "no sector" (a miss, nothing evicted); sectors are addresses / 32, never negative
SIZE, CAPACITY, HANDED, BITS = 0, 1, 2, 3
GOLDEN = np.uint64(11400714819323198485)  # 2^64 / golden ratio: Fibonacci hashing


def table_bits(capacity: int) -> int:
    """A table at most half full."""
    return max(4, int(2 * (capacity + 2) - 1).bit_length())


def new_lru(capacity: int):
    """An empty LRU for `capacity` entries (arrays allocated zeroed: pages are touched only as used)."""
    nodes = capacity + 2
    if nodes >= 1 << 31:
        raise ValueError(f"an LRU of {capacity} entries does not fit 32-bit node numbers")
    bits = table_bits(capacity)
    meta = np.array([0, capacity, 0, bits], dtype=np.int64)
    return (np.zeros(1 << bits, dtype=np.int32), np.zeros((nodes, 2), dtype=np.int32),
            np.zeros(nodes, dtype=np.int64), np.zeros(nodes, dtype=np.float64), meta,
            np.zeros(nodes + 1, dtype=np.int32))


@njit(inline="always")
def _home(key, bits):
    return np.int64((np.uint64(key) * GOLDEN) >> np.uint64(64 - bits))


@njit(inline="always")
def _slot(lru, key):
    """The hash slot holding `key`'s node, or the empty slot where it would go."""
    slots, keys = lru[0], lru[2]
    mask = slots.shape[0] - 1
    i = _home(key, lru[4][BITS])
    while slots[i] != 0 and keys[slots[i]] != key:
        i = (i + 1) & mask
    return i


@njit(inline="always")
def _unindex(lru, key):
    """Delete `key` from the hash table (backward-shift deletion: no tombstones)."""
    slots, keys = lru[0], lru[2]
    mask = slots.shape[0] - 1
    bits = lru[4][BITS]
    i = _slot(lru, key)
    j = i
    while True:
        j = (j + 1) & mask
        if slots[j] == 0:
            break
        k = _home(keys[slots[j]], bits)
        # the entry at j may move to i unless its home lies cyclically in (i, j]
        if (i <= j and (k <= i or k > j)) or (i > j and k <= i and k > j):
            slots[i] = slots[j]
            i = j
    slots[i] = 0


@njit(inline="always")
def _unlink(links, n):
    p, q = links[n, 0], links[n, 1]
    links[p, 1] = q
    links[q, 0] = p


@njit(inline="always")
def _append(links, n):
    """Make node n the newest (just before the head, at the list's end)."""
    last = links[0, 0]
    links[n, 0] = last
    links[n, 1] = 0
    links[last, 1] = n
    links[0, 0] = n


@njit(inline="always")
def find(lru, key):
    """The node holding `key`, or 0."""
    return lru[0][_slot(lru, key)]


@njit(inline="always")
def move_to_end(lru, n):
    links = lru[1]
    _unlink(links, n)
    _append(links, n)


@njit(inline="always")
def insert(lru, key, val):
    """Add `key` as the newest entry (it must not be present); its node."""
    slots, links, keys, vals, meta, free = lru
    if free[0] > 0:
        n = free[free[0]]
        free[0] -= 1
    else:
        meta[HANDED] += 1
        n = meta[HANDED]
    keys[n] = key
    vals[n] = val
    _append(links, n)
    slots[_slot(lru, key)] = n
    meta[SIZE] += 1
    return n


@njit(inline="always")
def remove(lru, n):
    """Take node n out; its key."""
    links, keys, meta, free = lru[1], lru[2], lru[4], lru[5]
    _unlink(links, n)
    key = keys[n]
    _unindex(lru, key)
    meta[SIZE] -= 1
    free[0] += 1
    free[free[0]] = n
    return key


@njit(inline="always")
def pop_oldest(lru):
    """`OrderedDict.popitem(last=False)`: remove the least recently used entry; its key."""
    return remove(lru, lru[1][0, 1])


@njit(inline="always")
def over_capacity(lru):
    return lru[4][SIZE] > lru[4][CAPACITY]


# ---- SectorCache (mem/l2.py) ---------------------------------------------------------------------
@njit(inline="always")
def cache_lookup(lru, counts, key):
    """`SectorCache.lookup`: the sector's ready cycle (moved to the newest) or -inf on a miss;
    counts[0] / counts[1] count hits / misses."""
    n = find(lru, key)
    if n:
        move_to_end(lru, n)
        counts[0] += 1
        return lru[3][n]
    counts[1] += 1
    return -np.inf


@njit(inline="always")
def cache_fill(lru, key, ready):
    """`SectorCache.fill`: insert or refresh the sector (now the newest); the sector evicted, or NONE."""
    n = find(lru, key)
    if n:
        lru[3][n] = ready
        move_to_end(lru, n)
    else:
        insert(lru, key, ready)
    if over_capacity(lru):
        return pop_oldest(lru)
    return NONE


@njit(inline="always")
def cache_touch(lru, key):
    """`SectorCache.touch`: the sector becomes the newest, inserted (ready at once) if absent; uncounted."""
    n = find(lru, key)
    if n:
        move_to_end(lru, n)
    else:
        cache_fill(lru, key, 0.0)


@njit(inline="always")
def cache_access(lru, counts, key):
    """`SectorCache.access`: hit or miss, allocating on a miss."""
    if cache_lookup(lru, counts, key) != -np.inf:
        return True
    cache_fill(lru, key, 0.0)
    return False
