"""CTAs resident per SM: the tightest of the thread, warp, CTA, register and shared-memory limits
(CUDA Occupancy Calculator rules: registers are allocated per warp in `register_alloc_unit` chunks,
shared memory in `shared_alloc_unit` chunks plus any per-CTA reserve)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Occupancy:
    ctas_per_sm: int
    limiter: str
    warps_per_cta: int

    @property
    def warps_per_sm(self) -> int:
        return self.ctas_per_sm * self.warps_per_cta


def occupancy(cfg, threads_per_cta: int, registers_per_thread: int, shared_per_cta: int) -> Occupancy:
    sm = cfg.sm
    warps = -(-threads_per_cta // 32)
    regs_per_warp = -(-registers_per_thread * 32 // sm.register_alloc_unit) * sm.register_alloc_unit
    shared = shared_per_cta + sm.reserved_shared_per_cta
    shared = -(-shared // sm.shared_alloc_unit) * sm.shared_alloc_unit if shared else 0
    limits = {
        "ctas": sm.max_ctas,
        "warps": sm.max_warps // warps,
        "threads": sm.max_threads // threads_per_cta,
        "registers": sm.registers // (regs_per_warp * warps) if regs_per_warp else sm.max_ctas,
        "shared_memory": sm.shared_bytes // shared if shared else sm.max_ctas,
    }
    limiter = min(limits, key=lambda k: limits[k])
    return Occupancy(limits[limiter], limiter, warps)
