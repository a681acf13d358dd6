"""Lane masks: a warp's 32 lanes as the bits of one 32-bit word (bit t = lane t)."""

from __future__ import annotations

import numpy as np


def lane_bits(masks) -> np.ndarray:
    """Which lanes each 32-bit mask has set: bool, the masks' shape x 32 (entry t = bit t)."""
    m = np.asarray(masks, dtype="<u4")
    flat = np.ascontiguousarray(m.reshape(-1))
    return np.unpackbits(flat.view(np.uint8).reshape(-1, 4), axis=1, bitorder="little").view(bool).reshape(m.shape + (32,))
