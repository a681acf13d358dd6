"""The SASS of the user's own binary: import it, and compare it with what gpusim compiled.

The code of a kernel depends on its whole translation unit (other kernels, headers, flags), so the
code gpusim compiles from a spec can differ from the binary the user timed. A spec's `sass: FILE`
(or `gpusim import-sass`) takes the code from the user's build instead:
- a .cubin, object or executable (ELF): its cubins (`cuobjdump -xelf all` for fat binaries) are
  disassembled with `nvdisasm -hex`; code and metadata are the binary's, exactly;
- `cuobjdump -sass` text (with `-res-usage` if wanted): the instructions and their encodings are
  the binary's; the metadata cuobjdump does not print (parameter offsets, shared and constant
  sizes) comes from gpusim's build of the same spec, and the register count from the text's
  resource usage when given (else from gpusim's build, and the listing says so). Branch targets,
  printed as addresses, become labels.
`compare` names the first instruction whose text or encoding differs.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from gpusim.errors import ListingError, SpecError, ToolchainError
from gpusim.isa.parser import SIZE_DIRECTIVE

_CODE_FOR = re.compile(r"^\s*code for (sm_\d+)")
_FUNCTION = re.compile(r"^\s*Function\s*:\s*(\S+)")
_RES_FUNC = re.compile(r"^\s*Function\s+(\S+):\s*$")
_RES_REG = re.compile(r"\bREG:(\d+)")
_RES_SHARED = re.compile(r"\bSHARED:(\d+)")
_INSTR_LINE = re.compile(r"^(\s*/\*([0-9a-f]{4,})\*/\s+)(.*?)(\s*;.*)$")
_BRANCHES = {"BRA", "BRX", "SSY", "PBK", "PCNT", "CAL", "JCAL", "BSSY", "CALL", "JMP", "PRET", "JMX"}
EM_CUDA = 190


def tool(name: str, arch: str) -> str:
    """nvdisasm/cuobjdump for `arch` (no nvcc needed)."""
    from gpusim.toolchain.compile import cuda13_tool

    if arch in ("sm_35", "sm_52"):
        path = Path(os.environ.get("GPUSIM_CUDA11_HOME", "/opt/gpusim-cuda11.8")) / "bin" / name
    else:
        path = cuda13_tool(name) or Path("")
    if not str(path) or not path.is_file():
        raise ToolchainError(f"{name} for {arch} not found at '{path}'; `pip install -e \".[cuda]\"` brings it "
                             "for sm_75+, scripts/install_toolchains.sh for sm_35/sm_52")
    return str(path)


def _cxxfilt() -> str:
    path = shutil.which("c++filt")
    if not path:
        raise ToolchainError("c++filt (binutils) not found on PATH")
    return path


def _run(cmd: list[str], what: str, cwd=None) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
    if proc.returncode != 0:
        msg = (proc.stderr or proc.stdout).strip().splitlines()
        raise ToolchainError(f"{what} failed: {msg[-1] if msg else 'exit ' + str(proc.returncode)}")
    return proc.stdout


def is_elf(path: Path) -> bool:
    with path.open("rb") as f:
        return f.read(4) == b"\x7fELF"


# ---- binaries ------------------------------------------------------------------------------------
def binary_listing(path: Path, arch: str, kernel: str) -> tuple[str, str]:
    """(nvdisasm -hex listing of the cubin in `path` that holds `kernel` for `arch`, its mangled name)."""
    from gpusim.toolchain.compile import _select_kernel, find_kernel, mangled_names

    nvdisasm = tool("nvdisasm", arch)
    with tempfile.TemporaryDirectory(prefix="gpusim-import-") as tmp:
        if int.from_bytes(path.read_bytes()[18:20], "little") == EM_CUDA:
            cubins = [path]
        else:  # executable, object or library: pull its cubins out
            _run([tool("cuobjdump", arch), "-xelf", "all", str(path.resolve())], "cuobjdump -xelf", cwd=tmp)
            cubins = sorted(Path(tmp).glob("*.cubin"))
        names: dict[str, str] = {}
        archs = set()
        for cubin in cubins:
            listing = _run([nvdisasm, "-hex", str(cubin)], f"nvdisasm {cubin.name}")
            m = re.search(r"\.target\s+(sm_\d+)|EF_CUDA_SM(\d+)\b", listing)
            cubin_arch = (m.group(1) or f"sm_{m.group(2)}") if m else "?"
            archs.add(cubin_arch)
            if cubin_arch != arch:
                continue
            found = mangled_names(listing, _cxxfilt())
            names.update(found)
            try:
                mangled = find_kernel(found, kernel, path.name)
            except ToolchainError:
                continue
            return _select_kernel(listing, mangled), mangled
    if arch not in archs:
        raise ListingError(f"no {arch} code in it (it has: {', '.join(sorted(archs)) or 'no cubins'})", str(path))
    from gpusim.toolchain.compile import find_kernel

    find_kernel(names, kernel, path.name)  # raises, listing the names found
    raise AssertionError("unreachable")


# ---- cuobjdump -sass text ------------------------------------------------------------------------
def parse_cuobjdump(text: str, source: str = "<cuobjdump>") -> dict[tuple[str, str], dict]:
    """(arch, mangled name) -> {"lines": code lines, "registers": REG and "shared": SHARED bytes from
    -res-usage, or None}."""
    out: dict[tuple[str, str], dict] = {}
    regs: dict[str, int] = {}
    shared: dict[str, int] = {}
    arch, current, res_func = None, None, None
    for ln in text.splitlines():
        if (m := _CODE_FOR.match(ln)):
            arch, current = m.group(1), None
        elif (m := _FUNCTION.match(ln)):
            if arch is None:
                raise ListingError("'Function :' before any 'code for sm_XX' line; is this `cuobjdump -sass` "
                                   "output?", source)
            current = out.setdefault((arch, m.group(1)), {"lines": [], "registers": None})
        elif (m := _RES_FUNC.match(ln)):
            res_func, current = m.group(1), None
        elif res_func and (m := _RES_REG.search(ln)):
            regs[res_func] = int(m.group(1))
            if (sm := _RES_SHARED.search(ln)):
                shared[res_func] = int(sm.group(1))
            res_func = None
        elif current is not None and re.match(r"^\s*/\*", ln):
            current["lines"].append(ln)
        elif current is not None and ln.strip().startswith(".."):
            current = None
    for (a, name), f in out.items():
        f["registers"] = regs.get(name)
        f["shared"] = shared.get(name)
    if not out:
        raise ListingError("no 'code for sm_XX' / 'Function :' sections; expected `cuobjdump -sass` output "
                           "or an ELF binary (.cubin, executable)", source)
    return out


def labelled(lines: list[str]) -> list[str]:
    """cuobjdump's code lines with branch targets (absolute addresses) turned into nvdisasm labels."""
    addrs = {int(m.group(2), 16) for ln in lines if (m := _INSTR_LINE.match(ln))}
    targets: set[int] = set()
    out = []
    for ln in lines:
        m = _INSTR_LINE.match(ln)
        if m:
            body = m.group(3)
            opcode = re.sub(r"^@!?U?P\w+\s+", "", body).split(" ", 1)[0].split(".")[0]
            t = re.search(r"(0x[0-9a-f]+)\s*$", body)
            if opcode in _BRANCHES and t and int(t.group(1), 16) in addrs:
                target = int(t.group(1), 16)
                targets.add(target)
                ln = m.group(1) + body[:t.start(1)] + f"`(.L_gs_{target:x})" + m.group(4)
        out.append(ln)
    result = []
    for ln in out:
        m = _INSTR_LINE.match(ln)
        if m and int(m.group(2), 16) in targets:
            result.append(f".L_gs_{int(m.group(2), 16):x}:")
        result.append(ln)
    return result


def splice(meta_listing: str, mangled: str, code_lines: list[str], registers: int | None,
           shared: int | None = None) -> str:
    """`meta_listing` with the code of its `.text.<mangled>` section replaced by `code_lines` (and its
    static shared size by `shared`, when the user's resource usage gives it)."""
    lines = meta_listing.splitlines()
    if shared is not None:
        lines = _with_shared(lines, mangled, shared)
    head = re.compile(rf"^//-+ \.text\.{re.escape(mangled)}\s+-+$")
    start = next((i for i, ln in enumerate(lines) if head.match(ln)), None)
    if start is None:
        raise ListingError(f"no .text.{mangled} section in gpusim's build of the kernel")
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("//--")), len(lines))
    keep = []
    for ln in lines[start + 1:end]:
        s = ln.strip()
        if s.startswith("/*") or re.match(r"^\.L_\w+:$", s):
            continue  # gpusim's own instructions and labels
        if registers is not None:
            ln = re.sub(r"SHI_REGISTERS=\d+", f"SHI_REGISTERS={registers}", ln)
        keep.append(ln)
    # the kernel's symbol line ("name:") starts the code in nvdisasm listings: code goes after it,
    # closed by the end label the section's `.size` directive names (the parser checks it is there)
    at = next((i + 1 for i, ln in enumerate(keep) if ln.strip() == f"{mangled}:"), len(keep))
    end_label = next((m.group(2) for ln in keep if (m := SIZE_DIRECTIVE.match(ln)) and m.group(1) == mangled), None)
    body = keep[:at] + code_lines + ([f"{end_label}:"] if end_label else []) + keep[at:]
    return "\n".join(lines[:start + 1] + body + lines[end:]) + "\n"


def _with_shared(lines: list[str], mangled: str, shared: int) -> list[str]:
    """The `.nv.shared.<mangled>` section's size set to `shared` bytes (added if gpusim's build has none)."""
    head = re.compile(rf"^//-+ \.nv\.shared\.{re.escape(mangled)}\s+-+$")
    start = next((i for i, ln in enumerate(lines) if head.match(ln)), None)
    if start is None:
        if shared == 0:
            return lines
        return lines + [f"//--------------------- .nv.shared.{mangled} --------------------------",
                        f"\t.zero\t\t{shared}"]
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("//--")), len(lines))
    body = [ln for ln in lines[start + 1:end] if not re.match(r"^\s*\.zero\s+\d+", ln)]
    return lines[:start + 1] + body + [f"\t.zero\t\t{shared}"] + lines[end:]


# ---- the workload's imported listing -------------------------------------------------------------
def import_listing(workload, arch: str, sass_file: Path) -> tuple[str, dict]:
    """(listing text gpusim runs, summary) for `workload`'s kernel taken from `sass_file`."""
    from gpusim.toolchain.workspace import cached_listing

    sass_file = Path(sass_file)
    if not sass_file.is_file():
        raise SpecError(f"field 'sass': no such file {sass_file}", str(workload.spec_path))
    digest = hashlib.sha256(sass_file.read_bytes()).hexdigest()
    head = f"// gpusim SASS listing: workload {workload.name}, kernel {workload.kernel}, {arch}\n"
    if is_elf(sass_file):
        listing, mangled = binary_listing(sass_file, arch, workload.kernel)
        header = head + f"// code and metadata imported from {sass_file} (sha256 {digest[:16]}) with nvdisasm -hex\n"
        return header + listing, {"kind": "binary", "kernel": mangled, "registers_from": "binary"}
    try:
        text = sass_file.read_text()
    except UnicodeDecodeError:
        raise ListingError("neither an ELF binary nor cuobjdump -sass text", str(sass_file)) from None
    if not _has_arch(text, arch):
        meta_path = None
    elif workload.is_suite:
        from gpusim.toolchain.listings import listing_path

        meta_path = listing_path(workload.name, arch)
    else:
        meta_path = cached_listing(workload, arch)
    listing, summary = cuobjdump_listing(text, arch, meta_path.read_text() if meta_path else "", workload.kernel,
                                         str(sass_file), digest)
    return head + listing, {**summary, "metadata_from": str(meta_path)}


def _has_arch(text: str, arch: str) -> bool:
    return any(m.group(1) == arch for ln in text.splitlines() if (m := _CODE_FOR.match(ln)))


def cuobjdump_listing(text: str, arch: str, meta: str, kernel: str, source: str, digest: str = "") -> tuple[str, dict]:
    """A listing (after gpusim's first header line) whose code is `kernel`'s from the cuobjdump -sass
    `text` and whose other sections are from `meta`, gpusim's listing of the same kernel."""
    from gpusim.toolchain.compile import find_kernel, mangled_names

    functions = parse_cuobjdump(text, source)
    here = {name: f for (a, name), f in functions.items() if a == arch}
    if not here:
        have = sorted({a for a, _ in functions})
        raise ListingError(f"no {arch} code in it (it has: {', '.join(have)})", source)
    mangled = re.search(r"(?m)^//-+ \.text\.(\S+)\s+-+$", meta).group(1)
    if mangled not in here:
        names = mangled_names("\n".join(f"//----- .text.{n} -----" for n in here), _cxxfilt())
        mangled_here = find_kernel(names, kernel, Path(source).name)  # raises, naming what is there
        raise ListingError(f"kernel {kernel} is {mangled_here} in it but {mangled} in gpusim's build "
                           "(different template arguments or signature?)", source)
    func = here[mangled]
    regs, shared = func["registers"], func["shared"]
    meta_lines = meta.splitlines()
    n_head = next(i for i, ln in enumerate(meta_lines) if not ln.startswith("// "))
    header = (f"// code imported from {source} (cuobjdump -sass{', sha256 ' + digest[:16] if digest else ''}); "
              f"parameters{', shared' if shared is None else ''}, constant sizes{'' if regs is not None else ', registers'} from gpusim's "
              "build:\n" + "".join(ln + "\n" for ln in meta_lines[1:n_head] if not ln.startswith("// gpusim key")))
    listing = header + splice("\n".join(meta_lines[n_head:]), mangled, labelled(func["lines"]), regs, shared)
    if regs is None:
        sys.stderr.write(f"gpusim: note: {Path(source).name} has no resource usage; the register count is "
                         "gpusim's build's (run cuobjdump -sass -res-usage to take it from your binary)\n")
    return listing, {"kind": "cuobjdump", "kernel": mangled,
                     "registers_from": "binary" if regs is not None else "gpusim build"}


def imported_listing(workload, arch: str, sass_file: Path | None = None) -> Path:
    """Write the listing imported from the spec's `sass:` file into the workspace cache; its path."""
    from gpusim.toolchain.workspace import _ensure_writable, cache_root

    sass_file = Path(sass_file) if sass_file else workload.sass_path
    text, _ = import_listing(workload, arch, sass_file)
    key = hashlib.sha256(text.encode()).hexdigest()[:16]
    folder = cache_root(workload) / "sass" / arch
    path = folder / f"{workload.name}-imported-{key}.sass"
    if not path.exists():
        _ensure_writable(folder, workload)
        partial = path.with_name(f"{path.name}.partial-{os.getpid()}")
        partial.write_text(text)
        os.replace(partial, path)
    return path


def compare(program, other, other_source: str) -> dict:
    """Where `program` (gpusim's build) and `other` (the user's binary) first differ, if anywhere."""
    a, b = program.instructions, other.instructions
    # the bytes decide (the text differs in label names: nvdisasm's .L_x_N, imported .L_gs_<address>)
    first = next((i for i in range(min(len(a), len(b)))
                  if (a[i].encoding, a[i].control) != (b[i].encoding, b[i].control)), None)
    if first is None and len(a) != len(b):
        first = min(len(a), len(b))
    out = {"identical": first is None and program.registers == other.registers, "against": other_source,
           "instructions": [len(a), len(b)], "registers": [program.registers, other.registers]}
    if first is not None:
        def show(ins, i):
            return None if i >= len(ins) else {"address": f"{ins[i].address:#06x}", "text": ins[i].text,
                                               "encoding": [f"{w:#018x}" for w in ins[i].encoding]}
        out["first_difference"] = {"index": first, "gpusim": show(a, first), "binary": show(b, first)}
    return out


def compare_line(result: dict) -> str:
    """One line saying whether and where gpusim's build differs from the user's binary."""
    n_a, n_b = result["instructions"]
    r_a, r_b = result["registers"]
    if result["identical"]:
        return f"same code as {result['against']}: {n_a} instructions, {r_a} registers"
    d = result.get("first_difference")
    if d is None:
        return f"same instructions as {result['against']} but {r_a} registers in gpusim's build vs {r_b} in yours"
    g, b = d["gpusim"], d["binary"]
    what = (f"gpusim `{g['text']}` vs yours `{b['text']}`" if g and b and g["text"] != b["text"] else
            f"same text `{g['text']}`, encodings {g['encoding']} vs {b['encoding']}" if g and b else
            f"{'gpusim' if g else 'your binary'} has more instructions")
    where = (g or b)["address"]
    return (f"gpusim's build differs from {result['against']} at instruction {d['index']} ({where}): {what}; "
            f"{n_a} vs {n_b} instructions, {r_a} vs {r_b} registers")
