"""Committed listings: every workload has one per architecture, all parse, control info decoded;
regenerating them with the toolchains reproduces them byte for byte."""

import json
import os
import re
import subprocess
import sys

import pytest

from gpusim.errors import SpecError, ToolchainError
from gpusim.isa.parser import parse_listing
from gpusim.toolchain.compile import _version, compile_workload, regenerate_text, toolchain
from gpusim.toolchain.listings import listing_path
from gpusim.workloads import list_workloads, load_workload

WORKLOADS = list_workloads()
PAIRS = [(wl, arch) for wl in WORKLOADS for arch in wl.archs]
EXPECTED = {"simpleMatMatMul", "naiveMatMatMul", "simpleMultiply", "coalescedMultiply", "coalescedMultiply_padded",
            "dgemm_unroll", "dgemm_unroll_db", "dgemm_unroll_128b", "dgemm_unroll_128b_prefsmem",
            "dgemm_unroll_db_128b", "dgemm_unroll_db_128b_prefsmem", "sgemm_maxas_64", "sgemm_maxas_128"}
SUITE12 = {"sgemm_naive_rowmajor", "sgemm_naive_colmajor", "sgemm_naive_colmajor_coalesced", "sgemm_naive_coalesced",
           "sgemm_smem", "sgemm_smem_padded", "sgemm_regtile1d", "sgemm_regtile2d", "sgemm_vec4", "sgemm_vec4_dbuf",
           "sgemm_warptile", "dgemm_naive_coalesced", "dgemm_regtile", "transpose_naive", "transpose_smem",
           "transpose_smem_padded", "copy_float4"}  # issue 12's own suite: H100 only


def gpusim(*args):
    return subprocess.run([sys.executable, "-m", "gpusim", *args], capture_output=True, text=True)


def test_kernels_json_lists_the_suite():
    out = gpusim("kernels", "--json")
    assert out.returncode == 0, out.stderr
    rows = {r["name"]: r for r in json.loads(out.stdout)}
    assert EXPECTED | SUITE12 <= set(rows)
    for r in rows.values():
        assert r["archs"] and all(r["listings"].values())
    for name in EXPECTED:
        assert set(rows[name]["archs"]) == {"sm_35", "sm_52", "sm_90"}
    for name in SUITE12:
        assert rows[name]["archs"] == ["sm_90"]


@pytest.mark.parametrize("wl,arch", PAIRS, ids=[f"{w.name}-{a}" for w, a in PAIRS])
def test_listing_parses_with_control_info(wl, arch):
    p = parse_listing(listing_path(wl.name, arch))  # unknown opcodes raise
    assert len(p) > 0 and p.registers > 0
    if arch in ("sm_52", "sm_90"):
        assert p.control_decoded
    assert p.frame_bytes == 0  # no local memory in the suite


def test_parse_cli_json():
    out = gpusim("parse", str(listing_path("sgemm_maxas_64", "sm_52")), "--json")
    s = json.loads(out.stdout)
    assert s["control_info"] == "decoded" and s["opcodes"]["FFMA"] >= 512 and s["arch"] == "sm_52"


def _have(arch):
    try:
        toolchain(arch)
        return True
    except ToolchainError:
        return False


@pytest.mark.parametrize("wl,arch", PAIRS, ids=[f"{w.name}-{a}" for w, a in PAIRS])
def test_listing_regenerates_identically(wl, arch):
    if not _have(arch):
        pytest.skip(f"{arch} toolchain not installed (scripts/install_toolchains.sh); cannot regenerate")
    committed = listing_path(wl.name, arch).read_text()
    tools = toolchain(arch)
    for name in ("nvcc", "nvdisasm"):  # another version writes other text; that is not a regression
        made_with = re.search(rf"{name} (release [\d.]+, V[\d.]+)", committed).group(1)
        if _version(tools[name]) != made_with:
            pytest.skip(f"committed {arch} listings were made with {name} {made_with}, found {_version(tools[name])} "
                        f"at {tools[name]} (scripts/install_toolchains.sh and pip install -e '.[cuda]' "
                        "install the committed versions)")
    assert regenerate_text(wl, arch) == committed


def test_missing_toolchain_is_one_line(monkeypatch):
    monkeypatch.setenv("GPUSIM_CUDA11_HOME", "/nonexistent")
    with pytest.raises(ToolchainError, match="nvcc for sm_52 not found at '/nonexistent/bin/nvcc'"):
        compile_workload(WORKLOADS[0], "sm_52")
    env = dict(os.environ, GPUSIM_CUDA11_HOME="/nonexistent")
    out = subprocess.run([sys.executable, "-m", "gpusim", "compile", "dgemm_unroll", "--arch", "sm_35"],
                         capture_output=True, text=True, env=env)
    assert out.returncode != 0 and out.stderr.count("\n") == 1 and "Traceback" not in out.stderr


def test_spec_errors_name_the_field(tmp_path, data_dir):
    bad = tmp_path / "bad.yaml"
    bad.write_text((data_dir / "demo.yaml").read_text().replace("dtype: float32", "dtype: float16", 1)
                   .replace("source: demo_matmul.cu", f"source: {data_dir / 'demo_matmul.cu'}"))
    with pytest.raises(SpecError, match=r"bad\.yaml: field 'args\.0\.buffer\.dtype'"):
        load_workload(bad)
    bad.write_text("name: [unclosed\n")
    with pytest.raises(SpecError, match=r"bad\.yaml:\d+: invalid YAML"):
        load_workload(bad)
    out = gpusim("emulate", str(bad), "--arch", "sm_90", "--size", "64")
    assert out.returncode == 2 and out.stderr.startswith("gpusim: error:") and "Traceback" not in out.stderr


def test_kernel_not_in_cubin(tmp_path, data_dir):
    if not _have("sm_90"):
        pytest.skip("sm_90 toolchain not installed")
    spec = (data_dir / "demo.yaml").read_text().replace("kernel: k<32>", "kernel: k<16>")
    spec = spec.replace("source: demo_matmul.cu", f"source: {data_dir / 'demo_matmul.cu'}")
    (tmp_path / "w.yaml").write_text(spec)
    with pytest.raises(ToolchainError, match=r"kernel 'k<16>' not in the cubin of demo_matmul.cu "
                                             r"\(found: k<32> \(_Z1kILi32EEvPKfS1_Pfi\)\)"):
        compile_workload(load_workload(tmp_path / "w.yaml"), "sm_90", tmp_path / "x.sass")
