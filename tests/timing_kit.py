"""Tiny programs for timing unit tests: a few SASS lines with chosen control information, run by a
given number of warps. These test one mechanism each (latency, issue rate, banks, barriers); kernel
traces themselves always come from real compiled SASS through the emulator."""

from dataclasses import replace

import numpy as np

from gpusim.isa.opcodes import load_opcode_table
from gpusim.isa.parser import _parse_instruction
from gpusim.isa.program import Control, Program
from gpusim.trace.format import RECORD_DTYPE, DynamicTrace


def program(arch: str, lines: list, registers: int = 64, shared_bytes: int = 0) -> Program:
    """`lines`: SASS text, or (text, control dict) pairs, e.g. ("FFMA R0, R1, R2, R0", {"stall": 4})."""
    table = load_opcode_table(arch)
    step = 16 if arch == "sm_90" else 8
    out = []
    for i, item in enumerate(lines):
        text, ctl = (item, {}) if isinstance(item, str) else item
        dual = ctl.pop("dual", False) if ctl else False
        ins = _parse_instruction(i, i * step, text, {}, table, arch)
        control = Control(stall=ctl.get("stall", 1), yield_flag=0, write_barrier=ctl.get("wbar"),
                          read_barrier=ctl.get("rbar"), wait_mask=ctl.get("wait", 0), raw=0) \
            if arch != "sm_35" else Control()
        out.append(replace(ins, control=control, dual_issue=dual))
    return Program(arch=arch, kernel="unit", instructions=out, registers=registers, shared_bytes=shared_bytes,
                   param_base=0, param_bytes=0)


def trace(prog: Program, warps: int = 1, warps_per_cta: int | None = None, smem_addresses=None,
          streams: list | None = None) -> DynamicTrace:
    """Every warp runs the program once, straight through (all lanes active), or warp w runs the
    instruction indices `streams[w]`. `smem_addresses`: (32,) byte offsets for every shared access."""
    wpc = warps_per_cta or warps
    streams = streams or [list(range(len(prog)))] * warps
    rec = np.zeros(sum(len(s) for s in streams), dtype=RECORD_DTYPE)
    rec["warp"] = np.concatenate([[w] * len(s) for w, s in enumerate(streams)])
    rec["seq"] = np.concatenate([np.arange(len(s)) for s in streams])
    rec["pc_index"] = np.concatenate(streams)
    rec["active_mask"] = rec["exec_mask"] = 0xFFFFFFFF
    mem = np.array([prog.instructions[pc].unit in ("smem", "lsu") for pc in rec["pc_index"]])
    rec["mem_row"] = np.where(mem, np.cumsum(mem) - 1, -1)
    addrs = np.tile(np.asarray(smem_addresses if smem_addresses is not None else np.arange(32) * 4,
                               dtype=np.uint64), (int(mem.sum()), 1))
    header = {"format": "gpusim-dynamic-trace", "version": 1, "arch": prog.arch, "kernel": prog.kernel,
              "fingerprint": prog.fingerprint(), "grid": [warps // wpc, 1, 1], "block": [32 * wpc, 1, 1],
              "dynamic_shared_bytes": 0, "warps_per_cta": wpc, "ctas": list(range(warps // wpc)),
              "registers": prog.registers, "static_shared_bytes": prog.shared_bytes, "workload": None,
              "size": None, "source": "unit-test", "exec_mask_exact": True, "active_mask_exact": True}
    return DynamicTrace(header, rec, addrs, np.full(len(addrs), 4, np.uint8))
