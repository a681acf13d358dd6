"""Compile a workload's kernel to an sm_90 cubin (cached) and find its mangled symbol.

The cubin is built with exactly the nvcc flags of gpusim.toolchain.compile, the spec's include folders,
defines, flags and template instances included (`nvcc_flags`, `instantiation_source`), so the SASS that
runs on the GPU is the SASS the simulator replays. Kernel symbols are read from the cubin's ELF section names
(`.text.<mangled>`) with a few lines of Python, so no cuobjdump/nvdisasm is needed; they are
demangled with cu++filt (shipped next to nvcc) or c++filt, and, with neither, matched by a small
heuristic on the Itanium mangling of `name<args>`.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
from pathlib import Path

from gpusim.toolchain.compile import instantiation_source, nvcc_flags

ARCH = "sm_90"


class BuildError(RuntimeError):
    """nvcc failed, or the workload's kernel is not in the cubin."""


def find_tool(name: str, override: str | None = None, near: str | None = None) -> str | None:
    """Path of a CUDA tool: an explicit override, next to `near` (e.g. nvcc's real dir), PATH, usual homes."""
    if override:
        return override
    dirs = []
    if near:
        dirs += [os.path.dirname(near), os.path.dirname(os.path.realpath(near))]
    for d in dirs:
        p = os.path.join(d, name)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    found = shutil.which(name)
    if found:
        return found
    homes = [os.environ.get("CUDA_HOME", ""), os.environ.get("CUDA_PATH", ""), "/usr/local/cuda"]
    homes += sorted(glob.glob("/usr/local/cuda-*"), reverse=True)
    for home in homes:
        p = os.path.join(home, "bin", name) if home else ""
        if p and os.path.isfile(p):
            return p
    if name == "ncu":
        cands = sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu"), reverse=True)
        cands += sorted(glob.glob("/usr/local/cuda*/nsight-compute*/ncu"), reverse=True)
        if cands:
            return cands[0]
    return None


def nvcc_path(override: str | None = None) -> str:
    path = override or os.environ.get("GPUSIM_NVCC13") or find_tool("nvcc")
    if not path:
        raise BuildError("nvcc not found (PATH, $CUDA_HOME/bin, /usr/local/cuda*/bin); pass --nvcc")
    return path


def tool_version(tool: str | None) -> str | None:
    """The last non-empty line of `tool --version` (nvcc: 'Build cuda_13.0...', ncu: 'Version 2025.3...')."""
    if not tool:
        return None
    try:
        out = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unavailable ({type(exc).__name__})"
    lines = [ln.strip() for ln in out.splitlines() if ln.strip()]
    release = [ln for ln in lines if "release" in ln]
    return (release or lines or ["?"])[-1]


# ---- cubin symbols ----------------------------------------------------------------------------
def elf_section_names(data: bytes) -> list[str]:
    """Section names of a 64-bit little-endian ELF image (a cubin)."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise BuildError("not a 64-bit little-endian ELF file (cubin)")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    def header(i):  # (name offset, file offset of the section's bytes)
        base = shoff + i * shentsize
        return struct.unpack_from("<I", data, base)[0], struct.unpack_from("<Q", data, base + 0x18)[0]
    strtab = header(shstrndx)[1]
    names = []
    for i in range(shnum):
        off = strtab + header(i)[0]
        names.append(data[off:data.index(b"\0", off)].decode("ascii", "replace"))
    return names


def kernel_symbols(cubin: bytes) -> list[str]:
    """Mangled names of the functions in a cubin (from its `.text.<name>` sections)."""
    return [n[len(".text."):] for n in elf_section_names(cubin) if n.startswith(".text.")]


def short_name(demangled: str) -> str:
    """'void simpleMatMatMul<32>(float const*, ...)' -> 'simpleMatMatMul<32>'."""
    head = demangled.split("(")[0].strip()
    return head.split(" ", 1)[1].strip() if head.startswith("void ") else head


def base_name(kernel: str) -> str:
    """'ns::simpleMatMatMul<32>' -> 'simpleMatMatMul' (what ncu's --kernel-name-base function shows)."""
    return re.split(r"[<(]", kernel, maxsplit=1)[0].split("::")[-1].strip()


def demangle(names: list[str], cxxfilt: str | None) -> dict[str, str] | None:
    if not cxxfilt or not names:
        return None
    proc = subprocess.run([cxxfilt], input="\n".join(names) + "\n", capture_output=True, text=True)
    out = proc.stdout.splitlines()
    return dict(zip(names, out)) if proc.returncode == 0 and len(out) == len(names) else None


_TYPE_CODES = {"float": "f", "double": "d", "int": "i", "unsigned": "j", "unsigned int": "j", "bool": "b",
               "char": "c", "long": "l", "short": "s"}


def guess_mangled(kernel: str, names: list[str]) -> str | None:
    """Pick `kernel`'s symbol among mangled `names` without a demangler (unique match or None)."""
    base = base_name(kernel)
    cands = [m for m in names if re.search(rf"(?<![0-9]){len(base)}{re.escape(base)}", m)]
    targs = re.search(r"<(.*)>", kernel)
    if targs and len(cands) > 1:
        codes = []
        for a in (x.strip() for x in targs.group(1).split(",")):
            if re.fullmatch(r"-?\d+[uUlL]*", a):
                v = int(re.sub(r"[uUlL]", "", a))
                codes.append(f"L[a-z]{'n' if v < 0 else ''}{abs(v)}E")
            else:
                codes.append(re.escape(_TYPE_CODES.get(a, a)))
        pat = re.compile(rf"{len(base)}{re.escape(base)}I" + "".join(codes) + "E")
        cands = [m for m in cands if pat.search(m)]
    elif not targs:
        cands = [m for m in cands if f"{len(base)}{base}I" not in m] or cands
    return cands[0] if len(cands) == 1 else None


def match_kernel(kernel: str, names: list[str], demangled: dict[str, str] | None) -> tuple[str, str]:
    """(mangled, demangled-or-mangled) of `kernel` (e.g. 'simpleMatMatMul<32>') among cubin symbols."""
    wanted = re.sub(r"\s+", "", kernel)
    if demangled:
        hits = [m for m in names if re.sub(r"\s+", "", short_name(demangled[m])) == wanted]
        if hits:
            return hits[0], demangled[hits[0]]
    if kernel in names:  # extern "C" kernels are not mangled
        return kernel, kernel
    guess = guess_mangled(kernel, names)
    if guess:
        return guess, (demangled or {}).get(guess, guess)
    found = ", ".join(short_name(d) for d in demangled.values()) if demangled else ", ".join(names)
    raise BuildError(f"kernel '{kernel}' not in the cubin (found: {found or 'none'})")


# ---- compilation with a cache -----------------------------------------------------------------
class CubinCache:
    """Compiles each spec's source once per (source bytes, local headers, flags, template instances,
    nvcc) into `directory`."""

    def __init__(self, directory: Path, nvcc: str | None = None, cxxfilt: str | None = None):
        self.directory = Path(directory).resolve()  # nvcc runs in the source's folder
        self.nvcc = nvcc_path(nvcc)
        self.cxxfilt = cxxfilt or find_tool("cu++filt", near=self.nvcc) or shutil.which("c++filt")
        self._nvcc_version: str | None = None

    @property
    def nvcc_version(self) -> str:
        if self._nvcc_version is None:
            self._nvcc_version = tool_version(self.nvcc) or "?"
        return self._nvcc_version

    def key(self, src: Path, flags: list[str], instantiate: tuple[str, ...] = ()) -> str:
        """Hash of the source, the headers beside it, the flags, the template instances and nvcc."""
        h = hashlib.sha256()
        for p in [src] + sorted(q for q in src.parent.iterdir() if q.suffix in (".h", ".cuh", ".hpp", ".inc")):
            h.update(p.name.encode() + b"\0" + p.read_bytes())
        h.update(" ".join([ARCH, *flags, self.nvcc_version]).encode())
        h.update("\0".join(instantiate).encode())
        return h.hexdigest()[:16]

    def build(self, workload) -> dict:
        """{cubin, mangled, demangled, nvcc_cmd, cached}: compile (or reuse) and locate the kernel. A spec
        with `instantiate` is compiled through gpusim's wrapper unit (the source plus a reference to each
        instance, `instantiation_source`), as the simulator compiles it."""
        src = Path(workload.source_path)
        flags = nvcc_flags(workload)
        self.directory.mkdir(parents=True, exist_ok=True)
        key = self.key(src, flags, tuple(workload.instantiate))
        cubin = self.directory / f"{src.stem}-{key}.cubin"
        # a spec with template instances compiles the wrapper, which includes the source by its absolute path
        unit = self.directory / f"{src.stem}-{key}.instances.cu" if workload.instantiate else src
        command = (lambda out: [self.nvcc, f"-arch={ARCH}", *flags, "-o", str(out), str(unit)])
        cmd = command(cubin)
        cached = cubin.exists()
        if not cached:
            if workload.instantiate:
                unit.write_text(instantiation_source(workload))
            tmp = cubin.with_suffix(f".tmp{os.getpid()}.cubin")
            proc = subprocess.run(command(tmp), cwd=src.parent, capture_output=True, text=True)
            if proc.returncode != 0:
                err = [ln for ln in (proc.stderr or proc.stdout).splitlines() if "error" in ln]
                raise BuildError(f"nvcc failed for {src.name}: {(err or ['exit %d' % proc.returncode])[0].strip()}")
            os.replace(tmp, cubin)
        symbols_file = cubin.with_suffix(".symbols.json")
        if symbols_file.exists():
            table = json.loads(symbols_file.read_text())
        else:
            names = kernel_symbols(cubin.read_bytes())
            table = {"names": names, "demangled": demangle(names, self.cxxfilt)}
            symbols_file.write_text(json.dumps(table, indent=1))
        mangled, dem = match_kernel(workload.kernel, table["names"], table["demangled"])
        return {"cubin": str(cubin), "mangled": mangled, "demangled": dem, "cached": cached,
                "nvcc_cmd": f"cd {src.parent} && {' '.join(cmd)}"}
