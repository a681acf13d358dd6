"""One output's verdict against its reference, a block of elements at a time.

The rule (`emu.run.check`): a float output passes when its relative RMS error, sqrt(sum (out - ref)^2)
/ (rms(ref) * sqrt(elements)), over all the elements compared, is below the tolerance; an integer
output when every element equals its reference. A failed output names its first wrong element (in
logical C order): for floats the first whose |out - ref| is not within tolerance x rms(ref) (one
exists whenever the error test fails; else, when the sums overflowed, the largest difference), for
integers the first that differs.

The sums are accumulated block by block, so that an output of a GiB never has its float64 copy,
its reference or its differences in memory whole. The first wrong element of a float output needs
rms(ref), which is known only at the end: each block keeps whether it holds a difference above any
threshold (its NaN flag and largest difference), and the first block that holds one above the
final threshold is made again to find the element.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np


def compare_blocks(n_blocks: int, block: Callable, shape: tuple, tol: float, integer: bool) -> dict:
    """The verdict of an output of logical `shape` compared in `n_blocks` blocks: `block(i)` gives
    the i-th block's (output values, reference values, where) as flat arrays, `where` the logical
    C-order position of each element (an int array), or of the first (an int: the block's elements
    are consecutive). The entry: elements compared, of (the output's size), rel_error, tolerance,
    passed and, when it failed, first_wrong (index, value, reference)."""
    total = int(np.prod(shape, dtype=np.int64))
    if integer:
        return _integer(n_blocks, block, shape, total)
    size, sq_ref, sq_diff, blocks = 0, [], [], []
    for i in range(n_blocks):
        out, ref, where = block(i)
        ref = np.asarray(ref, dtype=np.float64)
        with np.errstate(all="ignore"):
            diff = np.abs(out.astype(np.float64) - ref)
            sq_ref.append(float(np.sum(np.square(ref))))
            sq_diff.append(float(np.sum(np.square(diff))))
        size += out.size
        if not out.size:
            continue
        worst = np.nan_to_num(diff, nan=np.inf)  # (the fallback's measure: NaN first, inf as the largest float)
        k = int(np.argmax(worst))
        blocks.append((i, bool(np.isnan(diff).any()), float(np.fmax.reduce(diff)), float(worst[k]),
                       _position(where, k), out[k].item(), ref[k].item()))
    with np.errstate(all="ignore"):
        scale = float(np.sqrt(np.float64(math.fsum(sq_ref)) / size)) if size else 0.0
        err = float(np.sqrt(np.float64(math.fsum(sq_diff))) / max(scale * np.sqrt(max(size, 1)), 1e-300))
    if not np.isfinite(err):
        err = float("inf")
    entry = {"elements": size, "of": total, "rel_error": err, "tolerance": tol, "passed": err < tol or err == 0.0}
    if entry["passed"]:
        return entry
    limit = tol * scale
    first = next((b for b in blocks if b[1] or b[2] > limit), None)  # the first block with a wrong element
    if first is not None:
        out, ref, where = block(first[0])
        ref = np.asarray(ref, dtype=np.float64)
        with np.errstate(all="ignore"):
            wrong = ~(np.abs(out.astype(np.float64) - ref) <= limit)
        k = int(np.argmax(wrong))
        pos, value, reference = _position(where, k), out[k].item(), ref[k].item()
    else:  # no element beyond the limit (the sums overflowed): the largest difference, the first of equals
        best = max(blocks, key=lambda b: b[3])
        pos, value, reference = best[4:7]
    entry["first_wrong"] = _wrong(pos, shape, value, reference)
    return entry


def _integer(n_blocks: int, block: Callable, shape: tuple, total: int) -> dict:
    size = wrong_count = 0
    first = None
    for i in range(n_blocks):
        out, ref, where = block(i)
        wrong = out != ref
        count = int(np.count_nonzero(wrong))
        if count and first is None:
            k = int(np.argmax(wrong))
            first = _wrong(_position(where, k), shape, out[k].item(), ref[k].item())
        wrong_count += count
        size += out.size
    entry = {"elements": size, "of": total, "rel_error": float(wrong_count) / max(size, 1), "tolerance": 0.0,
             "passed": wrong_count == 0, "integer": True}
    if first is not None:
        entry["first_wrong"] = first
    return entry


def _position(where, k: int) -> int:
    return int(where) + k if np.ndim(where) == 0 else int(where[k])


def _wrong(pos: int, shape: tuple, value, reference) -> dict:
    return {"index": [int(i) for i in np.unravel_index(pos, shape)], "value": value, "reference": reference}
