"""Raw instruction words -> (encoding, `Control`), per architecture.

- sm_35 (Kepler GK110): code is grouped as 8 words of 64 bits, the first a scheduling word holding
  one 8-bit field per following instruction (bits 2+8i .. 9+8i), whose meaning is not public
  [ENVY] (envytools "scheduling data"); kept raw.
- sm_52 (Maxwell): groups of 4 words, the first a control word with 21 bits per instruction
  (bits 21i .. 21i+20): stall[3:0] yield[4] write-barrier[7:5] read-barrier[10:8] wait-mask[16:11]
  reuse[20:17] [MAXAS-CC]; barrier value 7 means none.
- sm_90 (Hopper): each instruction is 128 bits; the control field is bits 105..125, i.e. bits
  41..61 of the second 64-bit word, with the same field order [JIA18], [DECODER].
"""

from __future__ import annotations

from gpusim.isa.program import Control

GROUPS = {"sm_35": (64, 8), "sm_52": (32, 8)}  # bytes per group, bytes per word


def instruction_bytes(arch: str) -> int:
    return 16 if arch_family(arch) >= 70 else 8


def arch_family(arch: str) -> int:
    return int(arch.split("_")[1])


def decode_fields(raw: int) -> Control:
    """The 21-bit control field shared by sm_5x/sm_6x and sm_70+ encodings."""
    wbar = (raw >> 5) & 7
    rbar = (raw >> 8) & 7
    return Control(stall=raw & 0xF, yield_flag=(raw >> 4) & 1, write_barrier=None if wbar == 7 else wbar,
                   read_barrier=None if rbar == 7 else rbar, wait_mask=(raw >> 11) & 0x3F,
                   reuse_bits=(raw >> 17) & 0xF, raw=raw)


def decode(arch: str, words: list[int], address: int) -> tuple[tuple[int, ...], Control]:
    """Encoding words of the instruction at `address` and its decoded control information."""
    family = arch_family(arch)
    if family >= 70:
        lo, hi = words[address // 8], words[address // 8 + 1]
        return (lo, hi), decode_fields((hi >> 41) & 0x1FFFFF)
    group_bytes, word_bytes = GROUPS["sm_35" if family < 50 else "sm_52"]
    group = address // group_bytes
    slot = (address % group_bytes) // word_bytes - 1
    if slot < 0:
        # nvdisasm leaves out the scheduling word of a lone trailing instruction (the unreachable
        # `BRA` self-loop after the last EXIT on sm_35): no control information for it.
        if family < 50:
            return (words[address // word_bytes],), Control()
        raise ValueError(f"address {address:#x} is a scheduling word, not an instruction")
    sched = words[group * group_bytes // word_bytes]
    word = words[address // word_bytes]
    if family < 50:
        return (word,), Control(raw=(sched >> (2 + 8 * slot)) & 0xFF)
    return (word,), decode_fields((sched >> (21 * slot)) & 0x1FFFFF)
