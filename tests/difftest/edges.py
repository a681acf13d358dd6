"""Edge values shared by the difftest generators (pure Python: the GPU-side scripts import it
without numpy): 32-bit ones (0, +-1, INT_MIN, INT_MAX, shift counts 31..64, +-0.0, +-inf, NaNs,
denormals, 2^31, 2^32, halfway cases...) and 64-bit ones (integers and doubles); and splitmix64, a
stream of random words that is the same on every machine."""

import struct


def f32(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def f64(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


EDGE32 = [0, 1, 0xFFFFFFFF, 0x80000000, 0x7FFFFFFF, 31, 32, 33, 63, 64, 0xFFFF, 0x10000, 0x12345678, 3, 0xFFFFFFFE,
          f32(0.0), f32(-0.0), f32(1.0), f32(-1.0), f32(0.5), f32(2.5), f32(-2.5), 0x7FC00000, 0xFFC00001,
          f32(float("inf")), f32(float("-inf")), 0x00000801, f32(2.0**31), f32(2.0**32), f32(-2.0**31 - 256),
          f32(4294967040.0), f32(1e10)]
EDGE64 = [0, 1, 2**64 - 1, 2**63, 2**63 - 1, 2**32, 2**32 - 1, 0x123456789ABCDEF0, 7, 2**64 - 7,
          f64(0.0), f64(-0.0), f64(1.0), f64(-1.0), f64(0.5), f64(1.5), f64(-2.5), 0x7FF8000000000000,
          f64(float("inf")), f64(float("-inf")), 0x0000000000000801, f64(2.0**31), f64(2.0**63), f64(2.0**64),
          f64(-2.0**63), f64(4294967295.5), f64(-1e300), f64(1e-310), f64(3.0000000000000004),
          f64(1.0 + 2**-24), f64(16777217.0), f64(-0.49999999999999994)]


MASK64 = 2**64 - 1


def splitmix64(state: int):
    """An endless stream of 64-bit words (SplitMix64), the same on every machine."""
    while True:
        state = (state + 0x9E3779B97F4A7C15) & MASK64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        yield z ^ (z >> 31)
