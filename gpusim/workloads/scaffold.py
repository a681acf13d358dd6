"""`gpusim spec init`: a workload spec skeleton from a kernel's parameter list.

The kernel's declaration is found in the .cu file (or a header it includes from its folder) by its
`__global__` signature; each parameter becomes an argument: pointers are buffers (const pointers
inputs, the others outputs), scalars keep their C type (64-bit integers included). What the source
cannot tell (launch geometry, buffer shapes, the reference, template arguments) is written as a
guess marked TODO for the user to fill in. The skeleton is a valid spec.
"""

from __future__ import annotations

import re
from pathlib import Path

from gpusim.errors import SpecError
from gpusim.workloads.spec import DTYPE_ALIASES, DTYPES

_QUALIFIERS = {"const", "volatile", "__restrict__", "__restrict", "restrict", "struct"}
_SIZE_NAMES = {"n", "N", "m", "M", "k", "K", "size", "len", "length", "count", "num", "lda", "ldb", "ldc"}


def _declarations(text: str, name: str):
    """(template parameter text or None, parameter list text) of each __global__ `name`."""
    pat = re.compile(r"(template\s*<(?P<tpl>[^{};]*?)>\s*)?__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?"
                     rf"void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?{re.escape(name)}\s*\(")
    for m in pat.finditer(text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        yield m.group("tpl"), text[m.end():i - 1]


def _strip_comments(text: str) -> str:
    return re.sub(r"//[^\n]*|/\*.*?\*/", " ", text, flags=re.S)


def _split(params: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in params:
        depth += {"<": 1, "(": 1, "[": 1, ">": -1, ")": -1, "]": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    return [p.strip() for p in out + [cur] if p.strip() and p.strip() != "void"]


def typedefs(text: str) -> dict[str, str]:
    """Simple type aliases (`typedef int index_t;`, `using index_t = long;`) -> the aliased type."""
    found = {name: base for base, name in re.findall(r"\btypedef\s+([\w\s:]+?)\s+(\w+)\s*;", text)}
    found.update(re.findall(r"\busing\s+(\w+)\s*=\s*([\w\s:]+?)\s*;", text))
    return {k: " ".join(v.replace("std::", "").split()) for k, v in found.items()}


def parse_parameters(params: str, aliases: dict[str, str] | None = None) -> list[dict]:
    """[{name, pointer, const, ctype, dtype or None}] of a C parameter list."""
    aliases = aliases or {}
    out = []
    for p in _split(params):
        p = p.split("=", 1)[0].strip()
        m = re.match(r"^(.*?)(\w+)\s*(\[\s*\])?$", p, re.S)
        if not m or not m.group(1).strip():
            raise SpecError(f"cannot read kernel parameter '{p}'")
        ctype, name = m.group(1).strip(), m.group(2)
        pointer = "*" in ctype or bool(m.group(3))
        words = [w for w in re.split(r"[\s*&]+", ctype) if w]
        const = "const" in words[: words.index(next((w for w in words if w not in _QUALIFIERS), words[-1])) + 1] \
            if pointer else "const" in words
        base = " ".join(w for w in words if w not in _QUALIFIERS)
        base = base.replace("std::", "")
        for _ in range(4):  # aliases of aliases
            base = aliases.get(base, base)
        dtype = base if base in DTYPES else DTYPE_ALIASES.get(base)
        out.append({"name": name, "pointer": pointer, "const": const, "ctype": ctype, "dtype": dtype})
    return out


def find_kernel(source: Path, kernel: str) -> tuple[str | None, list[dict], Path]:
    """(template parameters, parameters, file) of `kernel` declared in `source` or a header beside it."""
    files, texts = [source], {}
    while files:  # the source and the headers it includes from its folder
        f = files.pop(0)
        if f in texts or not f.is_file():
            continue
        texts[f] = _strip_comments(f.read_text(errors="replace"))
        files += [(f.parent / inc).resolve() for inc in re.findall(r'#\s*include\s*"([^"]+)"', texts[f])]
    aliases: dict[str, str] = {}
    for text in texts.values():
        aliases.update(typedefs(text))
    names: list[str] = []
    for f, text in texts.items():
        for tpl, params in _declarations(text, kernel):
            return tpl, parse_parameters(params, aliases), f
        names += re.findall(r"__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?void\s+(?:__launch_bounds__\s*"
                            r"\([^)]*\)\s*)?(\w+)\s*\(", text)
    found = ", ".join(dict.fromkeys(names)) or "none"
    raise SpecError(f"no __global__ kernel '{kernel}' in {source.name} or the headers it includes "
                    f"(kernels there: {found})", str(source))


def skeleton(source: Path, kernel: str, spec_dir: Path, archs: list[str]) -> str:
    """The text of a spec skeleton for `kernel` of `source`."""
    tpl, params, where = find_kernel(source, kernel)
    try:
        rel = source.resolve().relative_to(spec_dir.resolve())
    except ValueError:
        rel = source.resolve()
    name = re.sub(r"\W", "_", kernel)
    lines = [f"# gpusim workload spec for kernel {kernel} ({where.name}), written by `gpusim spec init`.",
             "# Fill in the TODOs: sizes, launch geometry, buffer shapes and the numpy reference.",
             f"name: {name}", f"description: \"TODO: what {kernel} computes\"", f"source: {rel}"]
    if tpl is not None:
        targs = ", ".join(f"TODO_{p.split()[-1]}" if p.split() else "TODO" for p in _split(tpl))
        lines += [f"kernel: \"{kernel}<{targs}>\"  # TODO: template arguments ({tpl.strip()})",
                  f"instantiate: [\"{kernel}<{targs}>\"]  # makes nvcc emit this instance"]
    else:
        lines.append(f"kernel: {kernel}")
    lines += [f"archs: [{', '.join(archs)}]",
              "constraints: [\"n % 128 == 0\"]  # TODO: the problem sizes n the kernel handles",
              "# nvcc_flags: [-std=c++17]   include_dirs: [include]   defines: {NAME: value}",
              "launch:", "  grid: [\"n // 128\"]  # TODO: grid as expressions of n", "  block: [128]  # TODO",
              "args:"]
    outputs = []
    for p in params:
        if p["pointer"]:
            dtype = p["dtype"] or "float32"
            todo = "" if p["dtype"] else f"  # TODO: dtype of '{p['ctype']}'"
            role = "const: true" if p["const"] else "output: true"
            if not p["const"]:
                outputs.append(p["name"])
            lines.append(f"  - {{name: {p['name']}, kind: buffer, dtype: {dtype}, shape: [n], {role}}}"
                         f"{todo or '  # TODO: shape'}")
        else:
            dtype = p["dtype"] or "int32"
            integer = dtype.startswith(("int", "uint"))
            value = "n" if integer and p["name"] in _SIZE_NAMES else "1" if integer else "1.0"
            todo = f"  # TODO: type '{p['ctype']}' is not a scalar gpusim knows" if not p["dtype"] else "  # TODO"
            lines.append(f"  - {{name: {p['name']}, kind: scalar, dtype: {dtype}, value: \"{value}\"}}{todo}")
    lines.append("reference:  # numpy expressions of the arguments (keywords as in_), n and np")
    for out in outputs or [params[0]["name"] if params else "out"]:
        lines.append(f"  {out}: \"TODO\"")
    return "\n".join(lines) + "\n"
