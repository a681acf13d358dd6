"""Compile a workload to a cubin and write its nvdisasm listing.

Toolchains:
- sm_35, sm_52: CUDA 11.8 from Debian non-free (scripts/install_toolchains.sh), under
  $GPUSIM_CUDA11_HOME (default /opt/gpusim-cuda11.8);
- sm_90: nvcc 13.x ($GPUSIM_NVCC13 or `nvcc` on PATH) and nvdisasm/cuobjdump 13.x from PyPI, found,
  in this order, under $GPUSIM_CUDA13_HOME/bin, /opt/gpusim-cuda13/bin (the install script's copy),
  in this Python's `nvidia-cuda-nvdisasm`/`nvidia-cuda-cuobjdump` packages (`pip install -e ".[cuda]"`)
  or on PATH.
The listing is nvdisasm's `-hex` output restricted to the workload's kernel, after a short header
naming the workload, tool versions and flags. It is deterministic, so a regenerated listing must equal
the committed one (tests/test_listings.py). A spec's `nvcc_flags`, `include_dirs`, `defines` and
`instantiate` add to the default flags; `-std=`/`-O` given there replace the defaults.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from gpusim.errors import ToolchainError
from gpusim.toolchain.listings import listing_path

NVCC_FLAGS = ["-cubin", "-O3", "-std=c++14"]


CUDA13_DEFAULT_HOME = "/opt/gpusim-cuda13"


def _pypi_tool(tool: str) -> Path | None:
    """`tool` from this Python's NVIDIA wheels (nvidia/cu13/bin/ in 13.x, nvidia/cuda_<tool>/bin/ in 12.x)."""
    spec = importlib.util.find_spec("nvidia")
    for base in (spec.submodule_search_locations or []) if spec else []:
        for sub in ("cu13", f"cuda_{tool}"):
            path = Path(base) / sub / "bin" / tool
            if path.is_file() and os.access(path, os.X_OK):
                return path
    return None


def cuda13_tool(tool: str) -> Path | None:
    """nvdisasm or cuobjdump for sm_75+: $GPUSIM_CUDA13_HOME (an override), the install script's
    /opt/gpusim-cuda13, the PyPI wheel in this environment, then PATH."""
    if os.environ.get("GPUSIM_CUDA13_HOME"):
        return Path(os.environ["GPUSIM_CUDA13_HOME"]) / "bin" / tool
    for path in (Path(CUDA13_DEFAULT_HOME) / "bin" / tool, _pypi_tool(tool),
                 Path(shutil.which(tool) or "/nonexistent")):
        if path and path.is_file():
            return path
    return None


def toolchain(arch: str) -> dict[str, str]:
    """Paths of nvcc, nvdisasm, cuobjdump and c++filt for `arch`; ToolchainError if one is missing."""
    if arch in ("sm_35", "sm_52"):
        home = Path(os.environ.get("GPUSIM_CUDA11_HOME", "/opt/gpusim-cuda11.8"))
        tools = {"nvcc": home / "bin" / "nvcc", "nvdisasm": home / "bin" / "nvdisasm"}
        hint = "the CUDA 11.8 toolchain with `sudo bash scripts/install_toolchains.sh`"
    elif arch == "sm_90":
        nvcc = os.environ.get("GPUSIM_NVCC13") or shutil.which("nvcc") or ""
        tools = {"nvcc": Path(nvcc), "nvdisasm": cuda13_tool("nvdisasm") or Path("")}
        hint = ("nvcc 13 (CUDA toolkit) on PATH and nvdisasm with `pip install -e \".[cuda]\"` "
                "(PyPI nvidia-cuda-nvdisasm)")
    else:
        raise ToolchainError(f"unsupported architecture '{arch}' (expected sm_35, sm_52 or sm_90)")
    # binutils' c++filt for every arch: one demangled spelling ("k<32>", not cu++filt's "k<(int)32>")
    tools["c++filt"] = Path(shutil.which("c++filt") or "")
    for name, path in tools.items():
        if not str(path) or not Path(path).is_file():
            raise ToolchainError(f"{name} for {arch} not found at '{path}'; install {hint}")
    return {k: str(v) for k, v in tools.items()}


def _run(cmd: list[str], what: str) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        msg = (proc.stderr or proc.stdout).strip().splitlines()
        raise ToolchainError(f"{what} failed: {msg[-1] if msg else 'exit ' + str(proc.returncode)}")
    return proc.stdout


@functools.lru_cache(maxsize=None)
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


def tool_versions(tools: dict[str, str]) -> str:
    return f"nvcc {_version(tools['nvcc'])}; nvdisasm {_version(tools['nvdisasm'])}"


def nvcc_flags(workload) -> list[str]:
    """The flags after -arch: gpusim's defaults, then the spec's include folders, defines and flags."""
    user = list(workload.nvcc_flags)
    base = [f for f in NVCC_FLAGS
            if not (f.startswith("-std") and any(u.startswith(("-std", "--std")) for u in user))
            and not (f.startswith("-O") and any(u.startswith(("-O", "--optimize")) for u in user))]
    defines = [f"-D{k}" if v is None else f"-D{k}={v}" for k, v in workload.defines.items()]
    return base + [f"-I{p}" for p in workload.include_paths] + defines + user


def instantiation_source(workload) -> str:
    """A wrapper translation unit: the source plus a reference to each `instantiate` entry, which makes
    nvcc emit that template instance (as a launch of it in the user's program would)."""
    lines = [f'#include "{workload.source_path}"']
    for i, inst in enumerate(workload.instantiate):
        lines.append(f"static void *const gpusim_instance_{i} __attribute__((used)) = (void *)&{inst};")
    return "\n".join(lines) + "\n"


def mangled_names(listing: str, cxxfilt: str) -> dict[str, str]:
    """Mangled name -> demangled short name of each kernel in an nvdisasm listing."""
    functions = re.findall(r"(?m)^//-+ \.text\.(\S+)\s+-+$", listing)
    return {m: _short_name(d) for m, d in (_demangle(functions, cxxfilt) if functions else {}).items()}


def find_kernel(names: dict[str, str], kernel: str, where: str) -> str:
    """The mangled name of `kernel` (a C++ name with template arguments, or a mangled name)."""
    wanted = re.sub(r"\s+", "", kernel)
    match = [m for m, d in names.items() if m == kernel or re.sub(r"\s+", "", d) == wanted]
    if not match:
        found = ", ".join(f"{d} ({m})" for m, d in names.items()) or "none (a template needs `instantiate:`)"
        raise ToolchainError(f"kernel '{kernel}' not in the cubin of {where} (found: {found})")
    return match[0]


_LISTINGS: dict[tuple, str] = {}  # what _disassemble made in this process


def _disassemble(tools: dict[str, str], arch: str, flags: list[str], src: Path, instantiate: tuple,
                 wrapper: str) -> str:
    """nvdisasm -hex of the whole cubin of `src` (or of the `wrapper` unit that instantiates templates)
    for `arch` and `flags`. One compile per (source text, flags, instances) and process: several
    workloads share a .cu file (traces/kernels/suite12.cu holds 17 kernels)."""
    key = (tools["nvcc"], tools["nvdisasm"], arch, tuple(flags), str(src), instantiate,
           hashlib.sha256(src.read_bytes()).hexdigest())
    if key not in _LISTINGS:
        with tempfile.TemporaryDirectory(prefix="gpusim-cc-") as tmp:
            cubin = Path(tmp) / "kernel.cubin"
            unit = src.name
            if wrapper:
                unit = str(Path(tmp) / f"gpusim_instances_{src.stem}.cu")
                Path(unit).write_text(wrapper)
            proc = subprocess.run([tools["nvcc"], f"-arch={arch}", *flags, "-o", str(cubin), unit],
                                  cwd=src.parent, capture_output=True, text=True)
            if proc.returncode != 0:
                out_lines = (proc.stderr or proc.stdout).strip().splitlines()
                err = [ln for ln in out_lines if "error" in ln or "fatal" in ln] or out_lines[-1:] or ["no message"]
                raise ToolchainError(f"nvcc failed for {src.name} on {arch}: {err[0].strip()}")
            _LISTINGS[key] = _run([tools["nvdisasm"], "-hex", str(cubin)], "nvdisasm")
    return _LISTINGS[key]


def compile_workload(workload, arch: str, out: Path | None = None, key_line: str = "") -> dict:
    """Compile `workload` for `arch`, write the listing, return a summary of what was written.
    `key_line` (the workspace cache's key) goes into the header when given."""
    from gpusim.isa.parser import parse_listing_text

    if arch not in workload.archs:
        raise ToolchainError(f"workload {workload.name} does not list {arch} in its archs")
    tools = toolchain(arch)
    out = Path(out) if out else listing_path(workload.name, arch)
    flags = nvcc_flags(workload)
    src = workload.source_path
    listing = _disassemble(tools, arch, flags, src, tuple(workload.instantiate),
                           instantiation_source(workload) if workload.instantiate else "")
    mangled = find_kernel(mangled_names(listing, tools["c++filt"]), workload.kernel, src.name)
    match = [mangled]
    header = (f"// gpusim SASS listing: workload {workload.name}, kernel {workload.kernel}, {arch}\n"
              f"// nvcc {_version(tools['nvcc'])} flags: -arch={arch} {' '.join(flags)}; "
              f"nvdisasm {_version(tools['nvdisasm'])} -hex\n")
    if workload.instantiate:
        header += f"// instantiate: {'; '.join(workload.instantiate)}\n"
    header += key_line
    text = header + _select_kernel(listing, match[0])
    program = parse_listing_text(text, str(out), match[0])
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(f"{out.name}.partial-{os.getpid()}")  # readers never see half a listing
    partial.write_text(text)
    os.replace(partial, out)
    return {"workload": workload.name, "arch": arch, "kernel": match[0], "listing": str(out),
            "instructions": len(program), "registers": program.registers, "toolchain": program.toolchain,
            "nvcc_flags": [f"-arch={arch}", *flags], "build": workload.build_info()}


def regenerate_text(workload, arch: str) -> str:
    """The listing text a fresh compile produces (for the regeneration test)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x.sass"
        compile_workload(workload, arch, path)
        return path.read_text()
