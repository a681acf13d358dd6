"""What a result was computed from (`SimResult.provenance`): the resolved config and its hash, the
`--set` overrides, the code version, the toolchain that built the listing, the mode and the sampler's
settings, so that a what-if result can be told from its baseline and a result can be reproduced.
`config_differences` lists the fields in which two results' configs differ (`gpusim viz`)."""

from __future__ import annotations

import functools
import hashlib
import json
import platform
import subprocess

from gpusim import REPO_ROOT, __version__

PROVENANCE_VERSION = 1


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """`git describe --always --dirty` of the checkout, or the installed package's version."""
    if (REPO_ROOT / ".git").exists():
        try:
            out = subprocess.run(["git", "-C", str(REPO_ROOT), "describe", "--always", "--dirty", "--tags"],
                                 capture_output=True, text=True, timeout=10)
            if out.returncode == 0 and out.stdout.strip():
                return f"gpusim {__version__} git {out.stdout.strip()}"
        except (OSError, subprocess.SubprocessError):
            pass
    return f"gpusim {__version__}"


def _listing_header(path) -> list[str]:
    """The `//` comment lines at the top of a committed listing (workload, nvcc and nvdisasm versions)."""
    lines = []
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if not line.startswith("//"):
                    break
                lines.append(line[2:].strip())
    except OSError:
        pass
    return lines


@functools.lru_cache(maxsize=1)
def _library_versions() -> dict:
    import numpy
    import pydantic
    import simpy

    return {"python": platform.python_version(), "numpy": numpy.__version__, "simpy": simpy.__version__,
            "pydantic": pydantic.__version__}


def config_hash(config: dict) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:16]


def build(cfg, overrides: dict | None, mode: str, honour_control_codes, program, workload,
          sampled_ctas: list[int] | None) -> dict:
    """The provenance record of one run (plain JSON)."""
    from gpusim.timing import sampling
    from gpusim.timing.driver import MAX_SAMPLED_SMS, MULTI_SM_BUDGET
    from gpusim.toolchain.listings import listing_path

    config = cfg.model_dump(mode="json")
    listing = listing_path(workload.name, cfg.arch)
    if not listing.exists() and workload.spec_path is not None:
        listing = workload.spec_path.parent / f"{workload.name}_{cfg.arch}.sass"
    spec_text = workload.spec_path.read_bytes() if workload.spec_path else b""
    return {
        "version": PROVENANCE_VERSION,
        "code": code_version(),
        "config_hash": config_hash(config),
        "overrides": dict(overrides or {}),
        "config": config,
        "mode": mode,
        "control_codes": "honoured" if honour_control_codes else
                         ("scoreboard" if honour_control_codes is not None else "config default"),
        "sampler": None if mode != "sampled" else {
            "keep_head_iterations": sampling.KEEP_HEAD, "keep_tail_iterations": sampling.KEEP_TAIL,
            "max_sampled_sms": MAX_SAMPLED_SMS, "multi_sm_budget": MULTI_SM_BUDGET,
            "ctas_emulated": len(sampled_ctas or [])},
        "workload_spec_sha256": hashlib.sha256(spec_text).hexdigest()[:16],
        "listing": {"path": _short(listing), "program_fingerprint": program.fingerprint(),
                    "header": _listing_header(listing), "ptxas": program.toolchain},
        "libraries": _library_versions(),
    }


def _short(path) -> str:
    try:
        return str(path.resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


def _flatten(obj, prefix: str = "") -> dict:
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: obj}


def config_differences(results) -> list[dict]:
    """Fields whose value differs between the results' resolved configs (or mode / overrides / code):
    [{"field": dotted path, "values": [value per result, None where absent]}]."""
    flats = []
    for r in results:
        p = r.provenance or {}
        flat = _flatten(p.get("config") or {}, "config")
        flat["mode"] = p.get("mode", r.mode)
        flat["code"] = p.get("code")
        flat["overrides"] = json.dumps(p.get("overrides"), sort_keys=True) if p else None
        flats.append(flat)
    keys = sorted(set().union(*flats)) if flats else []
    return [{"field": k, "values": [f.get(k) for f in flats]} for k in keys
            if len({json.dumps(f.get(k), sort_keys=True) for f in flats}) > 1]
