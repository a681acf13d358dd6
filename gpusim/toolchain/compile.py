"""Compile a workload to a cubin and write its nvdisasm listing.

Toolchains (installed by scripts/install_toolchains.sh):
- sm_35, sm_52: CUDA 11.8 from Debian non-free, under $GPUSIM_CUDA11_HOME (default /opt/gpusim-cuda11.8);
- sm_90: nvcc 13.0 ($GPUSIM_NVCC13 or `nvcc` on PATH) and nvdisasm 13.x from PyPI under
  $GPUSIM_CUDA13_HOME (default /opt/gpusim-cuda13).
The listing is nvdisasm's `-hex` output restricted to the workload's kernel, after a short header
naming the workload and tool versions. It is deterministic, so a regenerated listing must equal the
committed one (tests/test_listings_regenerate.py).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from gpusim.errors import ToolchainError
from gpusim.toolchain.listings import listing_path

NVCC_FLAGS = ["-cubin", "-O3", "-std=c++14"]


def toolchain(arch: str) -> dict[str, str]:
    """Paths of nvcc, nvdisasm and c++filt for `arch`; ToolchainError if missing."""
    if arch in ("sm_35", "sm_52"):
        home = Path(os.environ.get("GPUSIM_CUDA11_HOME", "/opt/gpusim-cuda11.8"))
        tools = {"nvcc": home / "bin" / "nvcc", "nvdisasm": home / "bin" / "nvdisasm"}
        hint = "CUDA 11.8"
    elif arch == "sm_90":
        home = Path(os.environ.get("GPUSIM_CUDA13_HOME", "/opt/gpusim-cuda13"))
        nvcc = os.environ.get("GPUSIM_NVCC13") or shutil.which("nvcc") or ""
        tools = {"nvcc": Path(nvcc), "nvdisasm": home / "bin" / "nvdisasm"}
        hint = "CUDA 13.0 nvcc and PyPI nvdisasm"
    else:
        raise ToolchainError(f"unsupported architecture '{arch}' (expected sm_35, sm_52 or sm_90)")
    # binutils' c++filt for every arch: one demangled spelling ("k<32>", not cu++filt's "k<(int)32>")
    tools["c++filt"] = Path(shutil.which("c++filt") or "")
    for name, path in tools.items():
        if not str(path) or not Path(path).is_file():
            raise ToolchainError(f"{name} for {arch} not found at '{path}'; install the {hint} toolchain with "
                                 "`sudo bash scripts/install_toolchains.sh`")
    return {k: str(v) for k, v in tools.items()}


def _run(cmd: list[str], what: str) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        msg = (proc.stderr or proc.stdout).strip().splitlines()
        raise ToolchainError(f"{what} failed: {msg[-1] if msg else 'exit ' + str(proc.returncode)}")
    return proc.stdout


def _version(tool: str) -> str:
    out = _run([tool, "--version"], f"{tool} --version")
    m = re.search(r"release [\d.]+, V[\d.]+", out)
    return m.group(0) if m else out.strip().splitlines()[-1]


def _demangle(names: list[str], cxxfilt: str) -> dict[str, str]:
    out = _run([cxxfilt] + names, "c++filt").splitlines()
    return dict(zip(names, out))


def _short_name(demangled: str) -> str:
    """'void simpleMatMatMul<32>(float const*, ...)' -> 'simpleMatMatMul<32>'."""
    head = demangled.split("(")[0].strip()
    return head.split(" ", 1)[1].strip() if head.startswith("void ") else head


def _select_kernel(listing: str, mangled: str) -> str:
    """Keep the listing's common sections and those of `mangled`; drop other kernels' sections."""
    parts = re.split(r"(?m)^(?=//-+ \S+\s+-+$)", listing)
    kept = []
    for part in parts:
        m = re.match(r"//-+ (\S+)", part)
        name = m.group(1) if m else ""
        owner = re.match(r"^\.(?:text|nv\.info|nv\.shared|nv\.constant\d|nv\.local)\.(.+)$", name)
        if owner and not owner.group(1).startswith("reserved") and owner.group(1) != mangled:
            continue
        kept.append(part)
    return "".join(kept)


_LISTINGS: dict[tuple, str] = {}  # (tools, arch, source path, source sha256) -> nvdisasm output


def _disassemble(tools: dict[str, str], arch: str, src: Path) -> str:
    """nvdisasm -hex of the whole cubin of `src` for `arch`. One compile per source text and process:
    several workloads share a .cu file (e.g. traces/kernels/suite12.cu holds 17 kernels)."""
    key = (tools["nvcc"], tools["nvdisasm"], arch, str(src), hashlib.sha256(src.read_bytes()).hexdigest())
    if key not in _LISTINGS:
        with tempfile.TemporaryDirectory(prefix="gpusim-cc-") as tmp:
            cubin = Path(tmp) / "kernel.cubin"
            proc = subprocess.run([tools["nvcc"], f"-arch={arch}", *NVCC_FLAGS, "-o", str(cubin), src.name],
                                  cwd=src.parent, capture_output=True, text=True)
            if proc.returncode != 0:
                err = [ln for ln in (proc.stderr or proc.stdout).splitlines() if "error" in ln] or ["exit code"]
                raise ToolchainError(f"nvcc failed for {src.name} on {arch}: {err[0].strip()}")
            _LISTINGS[key] = _run([tools["nvdisasm"], "-hex", str(cubin)], "nvdisasm")
    return _LISTINGS[key]


def compile_workload(workload, arch: str, out: Path | None = None) -> dict:
    """Compile `workload` for `arch`, write the listing, return a summary of what was written."""
    from gpusim.isa.parser import parse_listing_text

    if arch not in workload.archs:
        raise ToolchainError(f"workload {workload.name} does not list {arch} in its archs")
    tools = toolchain(arch)
    out = Path(out) if out else listing_path(workload.name, arch)
    src = workload.source_path
    listing = _disassemble(tools, arch, src)
    functions = re.findall(r"(?m)^//-+ \.text\.(\S+)\s+-+$", listing)
    names = _demangle(functions, tools["c++filt"]) if functions else {}
    wanted = re.sub(r"\s+", "", workload.kernel)
    match = [m for m, d in names.items() if re.sub(r"\s+", "", _short_name(d)) == wanted]
    if not match:
        found = ", ".join(_short_name(d) for d in names.values()) or "none"
        raise ToolchainError(f"kernel '{workload.kernel}' not in the cubin of {src.name} (found: {found})")
    header = (f"// gpusim SASS listing: workload {workload.name}, kernel {workload.kernel}, {arch}\n"
              f"// nvcc {_version(tools['nvcc'])} flags: -arch={arch} {' '.join(NVCC_FLAGS)}; "
              f"nvdisasm {_version(tools['nvdisasm'])} -hex\n")
    text = header + _select_kernel(listing, match[0])
    program = parse_listing_text(text, str(out), match[0])
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    return {"workload": workload.name, "arch": arch, "kernel": match[0], "listing": str(out),
            "instructions": len(program), "registers": program.registers, "toolchain": program.toolchain}


def regenerate_text(workload, arch: str) -> str:
    """The listing text a fresh compile produces (for the regeneration test)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x.sass"
        compile_workload(workload, arch, path)
        return path.read_text()
