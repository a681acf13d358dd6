"""Bring your own kernel: specs outside the checkout, listings cached by content (never by name),
build flags in the spec, 64-bit scalars, sizes by constraint, SASS imported from the user's binary,
spec skeletons. Tests that compile need nvcc 13 and nvdisasm (sm_90); they skip, saying so, without."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from gpusim.errors import SpecError, ToolchainError
from gpusim.isa.parser import parse_listing, parse_listing_text
from gpusim.toolchain.compile import toolchain
from gpusim.toolchain.importsass import compare, cuobjdump_listing, import_listing
from gpusim.workloads import load_workload

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).resolve().parent.parent

HEADER = """#pragma once
#ifndef SCALE
#error "build with -DSCALE=..."
#endif
template <typename T> __device__ inline T scaled(T x) { return x * (T)SCALE; }
"""
KERNEL = """#include "scale.h"
template <int BLOCK>
__global__ void axpy(const float* __restrict__ in, float* __restrict__ out, float a, size_t n, long shift) {
    size_t i = (size_t)blockIdx.x * BLOCK + threadIdx.x + (size_t)(shift - 4294967296L);
    if (i < n) out[i] = a * scaled(in[i]) + out[i];
}
"""
SPEC = {"name": "dgemm_unroll",  # the name of a suite workload on purpose: it must not pick up that listing
        "description": "scaled axpy from a two-file project", "source": "axpy.cu", "kernel": "axpy<64>",
        "instantiate": "axpy<64>", "defines": {"SCALE": 3}, "nvcc_flags": ["-std=c++17", "-DNDEBUG"],
        "archs": ["sm_90"], "constraints": ["n % 64 == 0"],
        "launch": {"grid": ["n // 64"], "block": [64]},
        "args": [{"name": "in", "kind": "buffer", "dtype": "float32", "shape": ["n"], "const": True},
                 {"name": "out", "kind": "buffer", "dtype": "float32", "shape": ["n"], "output": True},
                 {"name": "a", "kind": "scalar", "dtype": "float32", "value": 0.5},
                 {"name": "n", "kind": "scalar", "dtype": "size_t", "value": "n"},
                 {"name": "shift", "kind": "scalar", "dtype": "long", "value": 4294967296}],
        "reference": {"out": "a * 3 * in_ + out"}}


def _have_sm90() -> str | None:
    try:
        toolchain("sm_90")
        return None
    except ToolchainError as exc:
        return str(exc)


MISSING = _have_sm90()
needs_toolchain = pytest.mark.skipif(MISSING is not None, reason=f"no sm_90 toolchain: {MISSING}")


def make_project(folder: Path, scale: int = 3, **changes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "scale.h").write_text(HEADER)
    (folder / "axpy.cu").write_text(KERNEL)
    spec = json.loads(json.dumps(SPEC))
    spec["defines"]["SCALE"] = scale
    spec["reference"]["out"] = f"a * {scale} * in_ + out"
    spec.update(changes)
    (folder / "my.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return folder / "my.yaml"


def clean_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUSIM_")}
    env["PYTHONPATH"] = str(ROOT)  # this checkout's package (CI installs it editable anyway)
    env.update(extra)
    return env


def gpusim(*args, cwd, env=None):
    return subprocess.run([sys.executable, "-m", "gpusim", *args], capture_output=True, text=True, cwd=cwd,
                          env=env or clean_env(), timeout=300)


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A two-file project (header + templated kernel, -D flags), built once for the module."""
    if MISSING:
        pytest.skip(f"no sm_90 toolchain: {MISSING}")
    folder = tmp_path_factory.mktemp("byok") / "proj"
    spec = make_project(folder)
    out = gpusim("compile", "my.yaml", "--arch", "sm_90", "--json", cwd=folder)
    assert out.returncode == 0, out.stderr
    return spec, json.loads(out.stdout)


# ---- spec fields (no toolchain) -----------------------------------------------------------------
def test_constraints_accept_any_matching_size(tmp_path):
    wl = load_workload(make_project(tmp_path))
    wl.check_size(64 * 37)
    with pytest.raises(SpecError, match=r"my\.yaml: constraints: size 100 does not satisfy 'n % 64 == 0'"):
        wl.check_size(100)
    assert not wl.supports(-64)


def test_sizes_or_constraints_required(tmp_path):
    spec = make_project(tmp_path)
    data = yaml.safe_load(spec.read_text())
    del data["constraints"]
    spec.write_text(yaml.safe_dump(data))
    with pytest.raises(SpecError, match="give 'sizes'"):
        load_workload(spec)


def test_64bit_scalars_and_keyword_names(tmp_path):
    wl = load_workload(make_project(tmp_path))
    assert [a.dtype for a in wl.args if a.kind == "scalar"] == ["float32", "uint64", "int64"]
    inputs = wl.make_inputs(128)
    assert inputs["shift"].dtype == np.int64 and int(inputs["shift"]) == 2 ** 32
    ref = wl.reference_outputs(inputs, 128)["out"]  # 'in' is in_ in expressions
    assert np.allclose(ref, 0.5 * 3 * inputs["in"] + inputs["out"])


def test_64bit_scalar_out_of_range_is_one_line(tmp_path):
    spec = make_project(tmp_path)
    text = spec.read_text().replace("value: 4294967296", "value: 9223372036854775808")
    spec.write_text(text)
    with pytest.raises(SpecError, match=r"my\.yaml: field 'args\.4\.scalar': .*out of range for int64"):
        load_workload(spec)
    spec.write_text(text.replace("value: 9223372036854775808", "value: n * 2**62"))  # found at run time
    wl = load_workload(spec)
    with pytest.raises(SpecError, match=r"args\.shift\.value: value \d+ is out of range for int64"):
        wl.make_inputs(64)
    out = gpusim("emulate", "my.yaml", "--arch", "sm_90", "--size", "64", cwd=tmp_path)
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "out of range for int64" in out.stderr


def test_flags_gpusim_sets_are_refused(tmp_path):
    with pytest.raises(SpecError, match=r"field 'nvcc_flags'.*'-arch=sm_80' is set by gpusim"):
        load_workload(make_project(tmp_path, nvcc_flags=["-arch=sm_80"]))


def test_spec_init_writes_a_valid_skeleton(tmp_path):
    make_project(tmp_path)
    out = gpusim("spec", "init", "axpy.cu", "--kernel", "axpy", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    wl = load_workload(tmp_path / "axpy.yaml")
    assert wl.kernel == "axpy<TODO_BLOCK>" and wl.instantiate == ["axpy<TODO_BLOCK>"]
    assert [(a.name, a.kind, a.dtype) for a in wl.args] == [
        ("in", "buffer", "float32"), ("out", "buffer", "float32"), ("a", "scalar", "float32"),
        ("n", "scalar", "uint64"), ("shift", "scalar", "int64")]
    assert [a.name for a in wl.args if a.kind == "buffer" and a.output] == ["out"]
    bad = gpusim("spec", "init", "axpy.cu", "--kernel", "axpz", cwd=tmp_path)
    assert bad.returncode == 2 and "kernels there: axpy" in bad.stderr and "Traceback" not in bad.stderr


# ---- importing the user's SASS (committed sample; no toolchain) ---------------------------------
def test_import_cuobjdump_sample_is_byte_equal_to_the_binary():
    """tests/data/demo_sm_90.cuobjdump is `cuobjdump -sass -res-usage` of the cubin whose nvdisasm
    listing is tests/data/demo_sm_90.sass: the imported code must have the same bytes."""
    binary = parse_listing(DATA / "demo_sm_90.sass")
    text, summary = cuobjdump_listing((DATA / "demo_sm_90.cuobjdump").read_text(), "sm_90",
                                      (DATA / "demo_sm_90.sass").read_text(), "k<32>", "demo_sm_90.cuobjdump")
    imported = parse_listing_text("// gpusim SASS listing\n" + text, "imported")
    assert summary["registers_from"] == "binary" and imported.registers == binary.registers == 32
    assert [i.encoding for i in imported.instructions] == [i.encoding for i in binary.instructions]
    assert [i.control for i in imported.instructions] == [i.control for i in binary.instructions]
    # branch targets (addresses in cuobjdump) resolve to the same instructions as nvdisasm's labels
    assert [[s.value for s in i.srcs if s.kind == "label"] for i in imported.instructions] == \
           [[s.value for s in i.srcs if s.kind == "label"] for i in binary.instructions]
    assert compare(binary, imported, "sample")["identical"]


def test_import_names_the_arch_it_lacks():
    from gpusim.errors import ListingError

    with pytest.raises(ListingError, match=r"no sm_52 code in it \(it has: sm_90\)"):
        cuobjdump_listing((DATA / "demo_sm_90.cuobjdump").read_text(), "sm_52", "", "k<32>", "x.txt")


# ---- the workspace (compiles) --------------------------------------------------------------------
@needs_toolchain
def test_listing_is_cached_beside_the_spec_by_content(project):
    spec, result = project
    listing = Path(result["listing"])
    assert listing.parent == spec.parent / ".gpusim" / "sass" / "sm_90" and listing.name.startswith("dgemm_unroll-")
    assert result["build"]["defines"] == {"SCALE": 3} and "-DSCALE=3" in result["nvcc_flags"]
    assert listing.read_text() != (ROOT / "traces/sass/sm_90/dgemm_unroll.sass").read_text()
    head = listing.read_text().splitlines()[:4]
    assert "-std=c++17 -DNDEBUG" in head[1] and head[2] == "// instantiate: axpy<64>" and "gpusim key" in head[3]


@needs_toolchain
def test_run_from_a_folder_outside_the_checkout_without_env(project, tmp_path):
    spec, _ = project
    out = gpusim("run", str(spec), "--gpu", "h100", "--size", "256", "--json", str(tmp_path / "r.json"),
                 cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    r = json.loads((tmp_path / "r.json").read_text())
    assert r["workload"] == "dgemm_unroll" and r["cycles"] > 0
    assert r["build"]["nvcc_flags"] == ["-std=c++17", "-DNDEBUG"] and r["build"]["instantiate"] == ["axpy<64>"]
    chk = gpusim("emulate", "my.yaml", "--arch", "sm_90", "--size", "192", "--check", cwd=spec.parent)
    assert chk.returncode == 0 and "passed" in chk.stdout, chk.stdout + chk.stderr


@needs_toolchain
def test_same_name_in_two_folders_never_shares_a_listing(project, tmp_path):
    from gpusim.emu.run import check, emulate
    from gpusim.toolchain.listings import workload_listing
    from gpusim.toolchain.workspace import CACHE_ENV

    first = load_workload(project[0])
    second = load_workload(make_project(tmp_path / "other", scale=5))  # same name and file names, other -D
    a, b = workload_listing(first, "sm_90"), workload_listing(second, "sm_90")
    assert a != b and a.parent != b.parent
    emu, inputs = emulate(second, "sm_90", 128)
    assert check(second, emu, inputs, 128)["out"]["passed"]
    # one shared cache folder: still one listing each (the key is content, not the name)
    os.environ[CACHE_ENV] = str(tmp_path / "cache")
    try:
        c, d = workload_listing(first, "sm_90"), workload_listing(second, "sm_90")
    finally:
        del os.environ[CACHE_ENV]
    assert c.parent == d.parent == tmp_path / "cache" / "sass" / "sm_90" and c != d


@needs_toolchain
def test_edited_header_or_tampered_listing_is_never_used(project, tmp_path, capfd):
    from gpusim.toolchain.listings import workload_listing

    spec = make_project(tmp_path / "p")
    wl = load_workload(spec)
    before = workload_listing(wl, "sm_90")
    (spec.parent / "scale.h").write_text(HEADER.replace("x * (T)SCALE", "x * (T)SCALE + (T)1"))
    after = workload_listing(wl, "sm_90")
    assert after != before  # the header is part of the key
    text = after.read_text()
    after.write_text(text.replace("// gpusim key ", "// gpusim key 0", 1))
    assert workload_listing(wl, "sm_90") == after and after.read_text() == text  # rebuilt
    assert "does not match the spec; rebuilding it" in capfd.readouterr().err


@needs_toolchain
def test_unwritable_spec_folder_is_one_line_with_the_option(tmp_path):
    spec = make_project(tmp_path)
    (tmp_path / ".gpusim").write_text("in the way")  # as root, chmod cannot make a folder unwritable
    out = gpusim("emulate", "my.yaml", "--arch", "sm_90", "--size", "64", cwd=tmp_path)
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "--cache-dir" in out.stderr
    ok = gpusim("emulate", "my.yaml", "--arch", "sm_90", "--size", "64", "--cache-dir", str(tmp_path / "c"),
                cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert list((tmp_path / "c" / "sass" / "sm_90").glob("dgemm_unroll-*.sass"))


@needs_toolchain
def test_kernel_not_in_cubin_lists_mangled_names(tmp_path):
    spec = make_project(tmp_path, kernel="axpy<32>")
    out = gpusim("compile", "my.yaml", "--arch", "sm_90", cwd=tmp_path)
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert "kernel 'axpy<32>' not in the cubin" in out.stderr and "axpy<64> (_Z4axpyILi64EEvPKfPffml)" in out.stderr


@needs_toolchain
def test_binary_import_and_compare(project, tmp_path):
    """The user's own build: same flags -> same code; other flags -> the first differing instruction."""
    spec, _ = project
    tools = toolchain("sm_90")
    wl = load_workload(spec)
    for name, extra in (("same", []), ("fast", ["--use_fast_math"])):
        cubin = tmp_path / f"{name}.cubin"
        subprocess.run([tools["nvcc"], "-arch=sm_90", "-cubin", "-O3", "-std=c++17", "-DNDEBUG", "-DSCALE=3", f"-I{spec.parent}", *extra,
                        "-o", str(cubin), "-x", "cu", "-", ], input=KERNEL + "template __global__ void axpy<64>"
                       "(const float*, float*, float, size_t, long);\n", text=True, cwd=spec.parent, check=True)
        text, summary = import_listing(wl, "sm_90", cubin)
        assert summary["kind"] == "binary"
        out = gpusim("compile", "my.yaml", "--arch", "sm_90", "--compare", str(cubin), cwd=spec.parent)
        assert out.returncode == 0, out.stderr
        if name == "same":
            assert "same code as" in out.stderr
        else:
            assert "warning: gpusim's build differs from" in out.stderr and "`FMUL.FTZ R0, R4, 3`" in out.stderr


def test_integral_float_immediates_are_float_values():
    """nvdisasm prints 3.0f in FMUL/FFMA and 2.0 in DFMA as "3"/"2" (encodings 0x40400000, 0x40000000):
    the value is the float, not the integer's bit pattern (found with this module's SCALE=3 kernel)."""
    from gpusim.isa.opcodes import load_opcode_table
    from gpusim.isa.parser import _parse_instruction

    table = load_opcode_table("sm_90")
    ffma = _parse_instruction(0, 0, "FFMA R5, R0, 3, R5", {}, table, "sm_90")
    dfma = _parse_instruction(0, 0, "DFMA R4, R4, R8, 2", {}, table, "sm_90")
    iadd = _parse_instruction(0, 0, "IADD3 R0, R1, 3, RZ", {}, table, "sm_90")
    assert (ffma.srcs[1].kind, ffma.srcs[1].value) == ("fimm", 3.0)
    assert (dfma.srcs[2].kind, dfma.srcs[2].value) == ("fimm", 2.0)
    assert (iadd.srcs[1].kind, iadd.srcs[1].value) == ("imm", 3)


@needs_toolchain
def test_import_sass_command_and_sass_field(project, tmp_path):
    """`gpusim import-sass` writes the listing of the user's binary; `sass:` in the spec runs it."""
    from gpusim.toolchain.compile import cuda13_tool

    spec, result = project
    cuobjdump = cuda13_tool("cuobjdump")
    if cuobjdump is None:
        pytest.skip("cuobjdump not found (pip install -e '.[cuda]')")
    listing = tmp_path / "imported.sass"
    cubin = tmp_path / "k.cubin"
    tools = toolchain("sm_90")
    subprocess.run([tools["nvcc"], "-arch=sm_90", "-cubin", "-O3", "-std=c++17", "-DNDEBUG", "-DSCALE=3",
                    f"-I{spec.parent}", "-o", str(cubin), "-x", "cu", "-"], cwd=tmp_path, check=True, text=True,
                   input=KERNEL + "template __global__ void axpy<64>(const float*, float*, float, size_t, long);\n")
    text = subprocess.run([str(cuobjdump), "-sass", "-res-usage", str(cubin)], capture_output=True, text=True,
                          check=True).stdout
    (tmp_path / "k.sass").write_text(text)
    out = gpusim("import-sass", str(tmp_path / "k.sass"), str(spec), "-o", str(listing), "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["instructions"] == result["instructions"]
    ours, theirs = parse_listing(result["listing"]), parse_listing(listing)
    assert [i.encoding for i in theirs.instructions] == [i.encoding for i in ours.instructions]
    data = yaml.safe_load(spec.read_text())
    data["sass"] = str(tmp_path / "k.sass")
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump(data))
    (tmp_path / "axpy.cu").write_text(KERNEL)
    (tmp_path / "scale.h").write_text(HEADER)
    chk = gpusim("emulate", "mine.yaml", "--arch", "sm_90", "--size", "128", "--check", cwd=tmp_path)
    assert chk.returncode == 0 and "passed" in chk.stdout, chk.stdout + chk.stderr


@needs_toolchain
def test_include_dirs_are_searched_and_hashed(tmp_path):
    """A header found through include_dirs (<scale.h>) is part of the key like one beside the source."""
    from gpusim.toolchain.listings import workload_listing
    from gpusim.toolchain.workspace import dependencies

    spec = make_project(tmp_path, include_dirs=["include"])
    (tmp_path / "include").mkdir()
    (tmp_path / "scale.h").rename(tmp_path / "include" / "scale.h")
    (tmp_path / "axpy.cu").write_text(KERNEL.replace('#include "scale.h"', "#include <scale.h>"))
    wl = load_workload(spec)
    assert tmp_path / "include" / "scale.h" in dependencies(wl)
    first = workload_listing(wl, "sm_90")
    assert f"-I{tmp_path / 'include'}" in first.read_text().splitlines()[1]
    (tmp_path / "include" / "scale.h").write_text(HEADER + "// edited\n")
    assert workload_listing(wl, "sm_90") != first


SPIN_COUNT = r'''
extern "C" __global__ void spin_count(const float* in, float* out, float lo)
{
    __shared__ int hits;
    if (threadIdx.x == 0) hits = 0;
    __syncthreads();
    if ((threadIdx.x & 31) == 0) atomicAdd(&hits, 1);   // ptxas: ATOMS.POPC.INC.32 RZ, [UR]
    __syncthreads();
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.f;
    while (*(volatile const float*)&in[t] < lo) acc += 1.f;   // ptxas: YIELD in the loop (never runs here)
    out[t] = 3.f * in[t] + acc + hits;
}
'''


@needs_toolchain
def test_a_polling_loop_and_a_shared_counter_emulate(tmp_path):
    """A user's kernel with a loop that polls memory (YIELD in it) and atomicAdd(&shared, 1)
    whose result is unused (ATOMS.POPC.INC: each active lane adds 1) runs and checks against numpy: the
    4 warps' lane 0 add 4."""
    (tmp_path / "spin.cu").write_text(SPIN_COUNT)
    spec = {"name": "spin_count", "description": "clock spin and a shared counter", "source": "spin.cu", "kernel": "spin_count", "archs": ["sm_90"], "sizes": [256],
            "launch": {"grid": ["n // 128"], "block": [128]},
            "args": [{"name": "in", "kind": "buffer", "dtype": "float32", "shape": ["n"], "const": True},
                     {"name": "out", "kind": "buffer", "dtype": "float32", "shape": ["n"], "output": True},
                     {"name": "lo", "kind": "scalar", "dtype": "float32", "value": -1.0}],
            "reference": {"out": "3 * in_ + 4"}}
    (tmp_path / "spin.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    out = gpusim("run", "spin.yaml", "--gpu", "h100", "--size", "256", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "output check: passed" in out.stdout
    listing = next((tmp_path / ".gpusim" / "sass" / "sm_90").glob("spin_count-*.sass")).read_text()
    assert "YIELD" in listing and "ATOMS.POPC.INC" in listing
