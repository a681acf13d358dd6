"""Offline tests of gpusim.measure (no GPU, no cupy, no ncu): ncu CSV parsing and retries, argument
marshalling through a numpy fake device, the correctness check, flop counts, size selection, the JSON
record and summary, and the cubin symbol lookup."""

from __future__ import annotations

import json
import math
import os
import struct
import types
from pathlib import Path

import numpy as np
import pytest

from gpusim.measure import build, clocks, marshal, ncu, record
from gpusim.measure.run import measure, ncu_sizes, parse_args
from gpusim.workloads.spec import load_workload

# ---- a captured-style ncu raw page (ncu 2025.3, --csv --page raw --print-units base) ---------------
RAW_CSV = '''==PROF== Connected to process 4242 (/usr/bin/python3.12)
single: launched _Z15simpleMatMatMulILi32EEvPKfS1_Pfi n=512
==PROF== Profiling "simpleMatMatMul" - 0: 0%....50%....100% - 9 passes
==PROF== Disconnected from process 4242
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","dram__bytes_read.sum","gpc__cycles_elapsed.max","l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum","sm__warps_active.avg.pct_of_peak_sustained_active","smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio","smsp__inst_executed.sum","launch__block_size"
"","","","","","","","","","","","byte","cycle","","%","","inst",""
"0","4242","python3.12","h100","simpleMatMatMul","1","7","(32, 32, 1)","(16, 16, 1)","0","9.0","3,194,880","1,234,567","0","93.71","12.345","4,456,448","1024"
'''

DETAILS_CSV = '''"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","1","python3","h","simpleMatMatMul","1","7","(32, 32, 1)","(16, 16, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","ns","2,848"
"0","1","python3","h","simpleMatMatMul","1","7","(32, 32, 1)","(16, 16, 1)","0","9.0","Command line profiler metrics","dram__bytes_read.sum","byte","n/a"
'''


def test_parse_value():
    assert ncu.parse_value("1,234,567") == 1234567
    assert ncu.parse_value("93.71") == pytest.approx(93.71)
    assert ncu.parse_value("1,234.5") == pytest.approx(1234.5)
    assert ncu.parse_value("2.5e+03") == pytest.approx(2500.0)
    assert ncu.parse_value("") is None and ncu.parse_value("n/a") is None
    assert ncu.parse_value("(32, 32, 1)") == "(32, 32, 1)"


def test_parse_raw_page():
    kernels = ncu.parse_csv(RAW_CSV)
    assert len(kernels) == 1
    k = kernels[0]
    assert k["info"]["Kernel Name"] == "simpleMatMatMul" and k["info"]["Block Size"] == "(32, 32, 1)"
    m = k["metrics"]
    assert m["gpc__cycles_elapsed.max"] == {"value": 1234567, "unit": "cycle"}
    assert m["dram__bytes_read.sum"]["value"] == 3194880 and m["dram__bytes_read.sum"]["unit"] == "byte"
    assert m["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"]["value"] == 0
    assert m["smsp__inst_executed.sum"]["value"] == 4456448
    assert m["sm__warps_active.avg.pct_of_peak_sustained_active"]["unit"] == "%"
    assert "Kernel Name" not in m


def test_parse_details_page_and_garbage():
    (k,) = ncu.parse_csv(DETAILS_CSV)
    assert k["metrics"]["gpu__time_duration.sum"] == {"value": 2848, "unit": "ns"}
    assert k["metrics"]["dram__bytes_read.sum"]["value"] is None
    assert ncu.parse_csv("==ERROR== The application returned an error code (1)\n") == []


def test_metric_list_is_valid_names():
    assert len(ncu.ALL_METRICS) == len(set(ncu.ALL_METRICS))
    for m in ncu.ALL_METRICS:
        assert "__" in m and " " not in m and "," not in m
    assert "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio" in ncu.ALL_METRICS
    assert "sm__maximum_warps_per_active_cycle_pct" not in ncu.ALL_METRICS  # invalid on H100 (interop.md)


def test_ncu_command_leaves_clocks_alone():
    cmd = ncu.command("ncu", ["a__b.sum"], "simpleMatMatMul", "/tmp/x.csv", ["python3", "-m", "x"])
    assert cmd[cmd.index("--clock-control") + 1] == "none"
    # the child's priming launch is profiled too (one more launch), so the kernel's is never Nsight's first
    assert cmd[cmd.index("-k") + 1] == "regex:simpleMatMatMul|^gpusim_prime$" and cmd[cmd.index("-c") + 1] == "2"
    assert cmd[cmd.index("--page") + 1] == "raw" and cmd[-3:] == ["python3", "-m", "x"]
    cmd = ncu.command("ncu", ["a__b.sum"], "k", "/tmp/x.csv", ["python3"], count=4)
    assert cmd[cmd.index("-c") + 1] == "5"


def test_named_metrics_from_error_line():
    out = "==PROF== Connected\n==ERROR== Failed to find metric regex:^lts__t_bytes\\.sum$\n"
    assert ncu.named_metrics(out, ["lts__t_bytes.sum", "smsp__inst_executed.sum"]) == ["lts__t_bytes.sum"]
    out = "==ERROR== Failed to find metric regex:^smsp__inst_executed_op_shared_ld\\.(sum|max)$"
    assert ncu.named_metrics(out, ["smsp__inst_executed.sum", "smsp__inst_executed_op_shared_ld.sum"]) == \
        ["smsp__inst_executed_op_shared_ld.sum"]


def _fake_ncu(bad: set[str], calls: list, fatal: bool = False):
    """A stand-in for running ncu: fails (naming nothing) if any requested metric is in `bad`."""
    def run(cmd, log_file):
        metrics = cmd[cmd.index("--metrics") + 1].split(",")
        calls.append(metrics)
        if fatal:
            return 1, "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission"
        if bad & set(metrics):
            return 1, "==ERROR== An error occurred while trying to profile."
        header = ",".join(f'"{h}"' for h in ncu.IDENTITY + tuple(metrics))
        units = ",".join('""' for _ in ncu.IDENTITY) + "," + ",".join('"x"' for _ in metrics)
        vals = '"0","1","p","h","k","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0",' + ",".join('"7"' for _ in metrics)
        return 0, "\n".join([header, units, vals])
    return run


def test_profiler_bisects_to_rejected_metric(tmp_path):
    calls = []
    bad = {"smsp__average_warps_issue_stalled_gmma_per_issue_active.ratio"}
    prof = ncu.NcuProfiler("ncu", tmp_path, runner=_fake_ncu(bad, calls))
    res = prof.profile("w__n512", "k", ["python3"])
    assert res["error"] is None and res["rejected"] == sorted(bad)
    assert len(res["kernels"]) == 1 and set(res["kernels"][0]["metrics"]) == set(ncu.ALL_METRICS) - bad
    assert len(calls) < 25  # full list, groups, then a bisection of the stalls group only
    assert json.loads((tmp_path / "ncu_rejected_metrics.json").read_text()) == sorted(bad)
    calls.clear()  # the next run of the session skips the rejected name at once
    res = ncu.NcuProfiler("ncu", tmp_path, runner=_fake_ncu(bad, calls)).profile("w__n1024", "k", ["python3"])
    assert len(calls) == 1 and res["error"] is None


def test_profiler_gives_up_on_fatal_error(tmp_path):
    calls = []
    prof = ncu.NcuProfiler("ncu", tmp_path, runner=_fake_ncu(set(), calls, fatal=True))
    res = prof.profile("w__n512", "k", ["python3"])
    assert res["error"] and "ERR_NVGPUCTRPERM" in res["error"] and len(calls) == 1
    assert prof.disabled and prof.profile("w__n1024", "k", ["python3"])["error"].startswith("ncu disabled")
    assert len(calls) == 1


# ---- workloads and the fake device -------------------------------------------------------------------
SPECS = {
    "mmC": """name: mmC
description: row-major SGEMM
source: k.cu
kernel: simpleMatMatMul<32>
sizes: [64, 512, 1024, 8192]
launch: {grid: ["n // 32", "n // 32"], block: [32, 32]}
args:
  - {name: A, kind: buffer, dtype: float32, shape: [n, n], const: true}
  - {name: B, kind: buffer, dtype: float32, shape: [n, n], const: true}
  - {name: C, kind: buffer, dtype: float32, shape: [n, n], output: true, init: {kind: poison}}
  - {name: n, kind: scalar, dtype: int32, value: n}
reference: {C: "A @ B"}
""",
    "dgemmF": """name: dgemmF
description: column-major DGEMM, C in/out
source: k.cu
kernel: dgemmF
sizes: [32]
launch: {grid: ["n // 16", "n // 16"], block: [16, 16]}
args:
  - {name: A, kind: buffer, dtype: float64, shape: [n, n], order: F, const: true}
  - {name: B, kind: buffer, dtype: float64, shape: [n, n], order: F, const: true}
  - {name: C, kind: buffer, dtype: float64, shape: [n, n], order: F, output: true}
  - {name: n, kind: scalar, dtype: int32, value: n}
  - {name: alpha, kind: scalar, dtype: float64, value: 1.5}
reference: {C: "alpha * (A @ B) + C"}
""",
    "simpleMultiply": """name: simpleMultiply
description: C = A A^T, A is n x 32
source: k.cu
kernel: simpleMultiply
sizes: [256, 1024, 2048, 4096]
launch: {grid: ["n // 32", "n // 32"], block: [32, 32]}
args:
  - {name: a, kind: buffer, dtype: float32, shape: [n, 32], const: true}
  - {name: c, kind: buffer, dtype: float32, shape: [n, n], output: true, init: {kind: poison}}
  - {name: n, kind: scalar, dtype: int32, value: n}
reference: {c: "a @ a.T"}
""",
}


@pytest.fixture
def specs(tmp_path):
    (tmp_path / "k.cu").write_text("// not compiled in these tests\n")
    out = {}
    for name, text in SPECS.items():
        (tmp_path / f"{name}.yaml").write_text(text)
        out[name] = load_workload(tmp_path / f"{name}.yaml")
    return out


class FakeDevice:
    """`Device` on numpy arrays; a 'kernel' is a Python function of the flat argument tuple."""

    name = "fake"

    def __init__(self, kernels):
        self.kernels, self.launches, self.released = kernels, [], 0

    def upload(self, host):
        return np.array(host, copy=True)

    def write(self, buf, host):
        buf[...] = host

    def download(self, buf):
        return buf.copy()

    def load_kernel(self, cubin, mangled, shared):
        return self.kernels[mangled]

    def launch(self, kernel, grid, block, shared, args):
        self.launches.append((grid, block, shared, args))
        kernel(*args)

    def synchronize(self):
        pass

    def time_launches(self, kernel, grid, block, shared, args, warmup, reps, queued=False):
        times = [0.5 + 0.01 * (i % 7) for i in range(reps)]
        return times, sum(times)

    def release(self):
        self.released += 1


def k_mm_rowmajor(A, B, C, n):
    n = int(n)
    C[:] = (A.reshape(n, n) @ B.reshape(n, n)).ravel()


def k_dgemm_colmajor(A, B, C, n, alpha):
    n = int(n)
    a, b, c = (x.reshape(n, n, order="F") for x in (A, B, C))
    C[:] = (alpha * (a @ b) + c).ravel(order="F")


def k_dgemm_wrong_order(A, B, C, n, alpha):  # reads column-major buffers as row-major
    n = int(n)
    C[:] = (alpha * (A.reshape(n, n) @ B.reshape(n, n)) + C.reshape(n, n)).ravel()


class FakeCache:
    def __init__(self, mangled):
        self.mangled = mangled

    def build(self, wl):
        return {"cubin": __file__, "mangled": self.mangled, "demangled": wl.kernel,
                "cached": True, "nvcc_cmd": "nvcc -arch=sm_90 -cubin -O3 -std=c++14 -o k.cubin k.cu"}


def _args(**kw):
    a = parse_args(["--out", "/tmp/unused", *kw.pop("argv", [])])
    for k, v in kw.items():
        setattr(a, k, v)
    return a


def test_host_arguments_flatten_by_order_and_type_scalars(specs):
    wl = specs["dgemmF"]
    inputs = wl.make_inputs(32, seed=1)
    host = marshal.host_arguments(wl, inputs)
    assert [name for name, _, _ in host] == ["A", "B", "C", "n", "alpha"]
    A = inputs["A"]
    assert np.array_equal(host[0][2][:32], A[:, 0])  # column-major: first column first
    assert host[0][2].flags["C_CONTIGUOUS"] and host[0][2].dtype == np.float64
    assert type(host[3][2]) is np.int32 and host[3][2] == 32
    assert type(host[4][2]) is np.float64 and host[4][2] == 1.5
    row = marshal.host_arguments(specs["mmC"], specs["mmC"].make_inputs(64))
    assert np.array_equal(row[0][2][:64], specs["mmC"].make_inputs(64)["A"][0, :])  # row-major
    assert np.isnan(row[2][2]).all()  # poisoned output
    x = np.arange(12.0).reshape(3, 4)
    for order in "CF":
        assert np.array_equal(marshal.unflat(marshal.flat(x, order, np.float64), (3, 4), order), x)


def test_reset_outputs_restores_poison_and_inout(specs):
    wl = specs["dgemmF"]
    dev = FakeDevice({})
    inputs = wl.make_inputs(32)
    L = marshal.Launchable(dev, wl, inputs)
    L.buffers["C"][:] = 7.0
    L.reset_outputs()
    assert np.array_equal(L.read_outputs(32)["C"], inputs["C"])  # in/out buffer: initial values back
    L2 = marshal.Launchable(dev, specs["mmC"], specs["mmC"].make_inputs(64))
    L2.buffers["C"][:] = 0.0
    L2.reset_outputs()
    assert np.isnan(L2.buffers["C"]).all()


@pytest.mark.parametrize("wl_name,kernel,n,passes", [
    ("mmC", k_mm_rowmajor, 64, True),
    ("dgemmF", k_dgemm_colmajor, 32, True),
    ("dgemmF", k_dgemm_wrong_order, 32, False),
])
def test_measure_end_to_end_with_fake_device(specs, wl_name, kernel, n, passes):
    wl = specs[wl_name]
    dev = FakeDevice({"_Zk": kernel})
    rec = measure(dev, FakeCache("_Zk"), wl, n, _args(reps=50, min_seconds=0.0), None, {"host": "test"})
    assert rec["error"] is None, rec.get("traceback")
    assert rec["check"]["passed"] is passes
    assert rec["check"]["tolerance"] == wl.default_tolerance()
    assert rec["timing"]["reps"] == 50 and len(rec["timing"]["all_ms"]) == 50
    assert rec["timing"]["min_ms"] == pytest.approx(0.5) and rec["timing"]["max_ms"] == pytest.approx(0.56)
    assert rec["timing"]["gflops"] == pytest.approx(2 * n ** 3 / (rec["timing"]["median_ms"] * 1e-3) / 1e9)
    assert rec["launch"] == {"grid": [n // wl.geometry(n)[1][0]] * 2 + [1], "block": list(wl.geometry(n)[1]),
                             "dynamic_shared_bytes": 0}
    assert dev.launches[0][3][-1].dtype == np.dtype(wl.args[-1].dtype)  # the checked launch got typed scalars
    assert dev.released == 1
    assert record.validate(rec) == []


def test_measure_records_a_failing_launch(specs):
    def crash(*args):
        raise RuntimeError("CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access")
    rec = measure(FakeDevice({"_Zk": crash}), FakeCache("_Zk"), specs["mmC"], 64, _args(), None, {})
    assert "ILLEGAL_ADDRESS" in rec["error"] and rec["timing"] is None
    assert rec["kernel"]["mangled"] == "_Zk"  # what was known before the failure is kept


def test_check_reports_nan_and_error():
    ref = {"C": np.ones((4, 4))}
    c = marshal.check({"C": np.ones((4, 4)) * (1 + 1e-7)}, ref, 1e-5)
    assert c["passed"] and c["max_rel_err"] == pytest.approx(1e-7)
    bad = np.ones((4, 4))
    bad[0, 0] = np.nan
    c = marshal.check({"C": bad}, ref, 1e-5)
    assert not c["passed"] and c["nonfinite"]["C"] == 1 and c["max_rel_err"] == "nan"


def test_flops_from_reference(specs):
    assert marshal.flops(specs["mmC"], 512) == (2.0 * 512 ** 3, "reference A@B: 2*|C|*k")
    assert marshal.flops(specs["dgemmF"], 32)[0] == 2.0 * 32 ** 3
    assert marshal.flops(specs["simpleMultiply"], 2048)[0] == 2.0 * 2048 * 2048 * 32
    spec_flops = types.SimpleNamespace(flops="2*n*n*n", size_env=lambda n: {"n": n}, name="x")
    assert marshal.flops(spec_flops, 10) == (2000.0, "spec")


def test_select_sizes(specs):
    assert marshal.select_sizes(specs["mmC"]) == [(512, None), (1024, None)]
    assert [n for n, _ in marshal.select_sizes(specs["simpleMultiply"])] == [2048, 4096]
    sel = dict(marshal.select_sizes(specs["mmC"], "8192,64", max_gib=0.5))
    assert sel[64] is None and "GiB" in sel[8192]
    assert ncu_sizes("largest", [512, 1024]) == [1024] and ncu_sizes("512", [512, 1024]) == [512]


# ---- records, summary, table ----------------------------------------------------------------------
def test_timing_stats_match_numpy():
    xs = [float(x) for x in np.random.default_rng(0).uniform(1, 2, 57)]
    t = record.timing_stats(xs, sum(xs), 5, 1e9)
    assert t["median_ms"] == pytest.approx(np.median(xs))
    assert t["p10_ms"] == pytest.approx(np.percentile(xs, 10)) and t["p90_ms"] == pytest.approx(np.percentile(xs, 90))
    assert t["gflops"] == pytest.approx(1e9 / (t["median_ms"] * 1e-3) / 1e9)
    assert t["span_mean_ms"] == pytest.approx(np.mean(xs))


def test_queued_timing_is_asked_for_recorded_and_passed_to_children(specs):
    # `--queued`: the timed launches wait behind a blocking kernel (backend.CupyDevice.time_launches),
    # the record says so (validate then applies no event floor), and each workload's child gets the flag
    class QueuedFake(FakeDevice):
        def time_launches(self, kernel, grid, block, shared, args, warmup, reps, queued=False):
            self.queued = getattr(self, "queued", []) + [queued]
            return super().time_launches(kernel, grid, block, shared, args, warmup, reps)

    for argv, want in (([], False), (["--queued"], True)):
        dev = QueuedFake({"_Zk": k_mm_rowmajor})
        a = _args(argv=argv, reps=20, min_seconds=0.0)
        rec = measure(dev, FakeCache("_Zk"), specs["mmC"], 64, a, None, {})
        assert rec["error"] is None and dev.queued[-1] is want
        assert rec["timing"]["queued"] is want and ("blocking kernel" in rec["timing"]["method"]) is want
        from gpusim.measure.run import child_command
        a.t_start = 0.0
        assert ("--queued" in child_command(a, "mmC")) is want


def test_record_validate_write_and_summary(tmp_path, specs):
    rec = measure(FakeDevice({"_Zk": k_mm_rowmajor}), FakeCache("_Zk"), specs["mmC"], 64,
                  _args(reps=50, min_seconds=0.0), None, {"host": "t"})
    rec["clocks"] = clocks.summarize([{"sm_mhz": 1980.0, "mem_mhz": 2619.0, "temp_c": 40.0, "power_w": None}])
    (k,) = ncu.parse_csv(RAW_CSV)
    rec["ncu"] = {"metrics": k["metrics"], "kernel": k["info"], "commands": ["ncu ..."], "rejected": [], "error": None}
    path = record.write_record(tmp_path, rec)
    assert path.name == "mmC__n64.json"
    back = json.loads(path.read_text())
    assert back["problems"] is None and back["ncu"]["metrics"]["gpc__cycles_elapsed.max"]["value"] == 1234567
    err = record.new_record("broken", 512, {})
    err["error"] = "nvcc failed"
    record.write_record(tmp_path, err)
    bad = dict(back, timing=dict(back["timing"], reps=3))
    assert any("reps" in p for p in record.validate(bad))
    assert any("missing 'env'" in p for p in record.validate({k: v for k, v in back.items() if k != "env"}))
    summary = record.write_summary(tmp_path, [back, err]).read_text().splitlines()
    assert summary[0].startswith("workload,size,status") and len(summary) == 3
    assert summary[1].split(",")[:4] == ["mmC", "64", "ok", "True"] and ",error," in summary[2]
    table = record.table([back, err])
    assert len(table.splitlines()) == 3 and "1234567" in table and "nvcc failed" in table


def test_clock_sample_parsing():
    assert clocks.parse_sample("1980, 2619, 41, 312.45\n") == {"sm_mhz": 1980.0, "mem_mhz": 2619.0,
                                                                "temp_c": 41.0, "power_w": 312.45}
    assert clocks.parse_sample("1980, 2619, 41, [N/A]")["power_w"] is None
    assert clocks.parse_sample("garbage") is None
    s = clocks.summarize([{"sm_mhz": v, "mem_mhz": 1.0, "temp_c": 1.0, "power_w": 1.0} for v in (1755, 1980, 1965)])
    assert s["sm_mhz"] == {"min": 1755, "median": 1965, "max": 1980} and s["samples"] == 3


# ---- cubin symbols --------------------------------------------------------------------------------
def _tiny_elf(section_names: list[str]) -> bytes:
    """A minimal 64-bit little-endian ELF with the given section names (plus null and .shstrtab)."""
    names = [""] + section_names + [".shstrtab"]
    strtab = b"".join(n.encode() + b"\0" for n in names)
    offsets = [sum(len(n) + 1 for n in names[:i]) for i in range(len(names))]
    shoff = 64 + len(strtab)
    hdr = bytearray(64)
    hdr[:6] = b"\x7fELF\x02\x01"
    struct.pack_into("<Q", hdr, 0x28, shoff)
    struct.pack_into("<HHH", hdr, 0x3A, 64, len(names), len(names) - 1)
    sections = b""
    for i, off in enumerate(offsets):
        sh = bytearray(64)
        struct.pack_into("<I", sh, 0, off)
        struct.pack_into("<Q", sh, 0x18, 64 if i == len(names) - 1 else 0)
        sections += bytes(sh)
    return bytes(hdr) + strtab + sections


def test_kernel_symbols_from_elf():
    data = _tiny_elf([".text._Z15simpleMatMatMulILi32EEvPKfS1_Pfi", ".nv.info", ".text._Z6dgemmFPKdS0_Pdid"])
    assert build.kernel_symbols(data) == ["_Z15simpleMatMatMulILi32EEvPKfS1_Pfi", "_Z6dgemmFPKdS0_Pdid"]
    with pytest.raises(build.BuildError):
        build.elf_section_names(b"not an elf" * 10)


def test_match_kernel_with_and_without_demangler():
    names = ["_Z6dgemmFPKdS0_Pdid", "_Z15simpleMatMatMulILi16EEvPKfS1_Pfi", "_Z15simpleMatMatMulILi32EEvPKfS1_Pfi"]
    dem = {names[0]: "dgemmF(double const*, double const*, double*, int, double)",
           names[1]: "void simpleMatMatMul<16>(float const*, float const*, float*, int)",
           names[2]: "void simpleMatMatMul<32>(float const*, float const*, float*, int)"}
    assert build.match_kernel("simpleMatMatMul<32>", names, dem) == (names[2], dem[names[2]])
    assert build.match_kernel("simpleMatMatMul < 16 >", names, dem)[0] == names[1]
    assert build.match_kernel("dgemmF", names, None)[0] == names[0]
    assert build.match_kernel("simpleMatMatMul<32>", names, None)[0] == names[2]
    assert build.match_kernel("ext_c_kernel", ["ext_c_kernel"], None)[0] == "ext_c_kernel"
    with pytest.raises(build.BuildError, match="not in the cubin"):
        build.match_kernel("nothere<1>", names, dem)
    assert build.base_name("simpleMatMatMul<32>") == "simpleMatMatMul"


@pytest.mark.skipif(build.find_tool("nvcc") is None, reason="no nvcc here")
def test_cubin_cache_compiles_once(specs, tmp_path):
    src = Path(specs["mmC"].source_path)
    src.write_text("template <int T> __global__ void simpleMatMatMul(const float* a, const float* b, float* c, int n)"
                   " { c[threadIdx.x] = a[threadIdx.x] * b[0] * T + n; }\n"
                   "template __global__ void simpleMatMatMul<32>(const float*, const float*, float*, int);\n")
    cache = build.CubinCache(tmp_path / "cubins")
    first = cache.build(specs["mmC"])
    assert first["mangled"] == "_Z15simpleMatMatMulILi32EEvPKfS1_Pfi" and not first["cached"]
    assert "-arch=sm_90 -cubin -O3 -std=c++14" in first["nvcc_cmd"]
    assert cache.build(specs["mmC"])["cached"]
    assert math.isfinite(len(Path(first["cubin"]).read_bytes()))


@pytest.mark.skipif(build.find_tool("nvcc") is None, reason="no nvcc here")
def test_cubin_cache_builds_with_the_specs_defines_and_instances(tmp_path):
    """The measured cubin is the simulated one: the spec's defines and template instances reach nvcc
    (before, a spec with `instantiate:` had no kernel in its cubin and one with `defines:` was built
    without them), and a different define is a different cubin."""
    (tmp_path / "t.cu").write_text("#ifndef SCALE\n#error build with -DSCALE\n#endif\n"
                                   "template <int T> __global__ void scaled(float* c) { c[threadIdx.x] *= T * SCALE; }\n")
    spec = ("name: t\ndescription: d\nsource: t.cu\nkernel: \"scaled<3>\"\ninstantiate: [\"scaled<3>\"]\n"
            "defines: {SCALE: %d}\nsizes: [1]\nlaunch: {grid: [1], block: [32]}\n"
            "args:\n  - {name: c, kind: buffer, dtype: float32, shape: [32], output: true}\n"
            "reference: {c: \"c\"}\n")
    cache = build.CubinCache(tmp_path / "cubins")
    built = {}
    for scale in (2, 5):
        (tmp_path / f"t{scale}.yaml").write_text(spec % scale)
        built[scale] = cache.build(load_workload(tmp_path / f"t{scale}.yaml"))
    assert built[2]["mangled"] == "_Z6scaledILi3EEvPf"
    assert "-DSCALE=2" in built[2]["nvcc_cmd"] and built[2]["nvcc_cmd"].endswith(".instances.cu")
    assert built[2]["cubin"] != built[5]["cubin"] and not built[5]["cached"]


def test_profiler_rejects_nothing_when_every_group_fails(tmp_path):
    calls = []
    prof = ncu.NcuProfiler("ncu", tmp_path, runner=_fake_ncu(set(ncu.ALL_METRICS), calls))
    res = prof.profile("w__n512", "k", ["python3"])
    assert res["error"] and res["rejected"] == [] and len(calls) == 3  # full list + two groups, then stop


# ---- the whole command line, end to end, on fake tools --------------------------------------------
# nvcc writes a tiny ELF naming the kernel, nvidia-smi prints clock samples, ncu runs its child and
# writes a raw-page CSV, and a fake `cupy` runs the "kernel" in numpy (C = A @ B, row-major).
FAKE_CUPY = '''
import numpy as np
__version__ = "0.0-fake"
class ndarray(np.ndarray):
    def set(self, host):
        self[...] = host
def asarray(a):
    return np.array(a, copy=True).view(ndarray)
def asnumpy(a):
    return np.array(a)
class _Pool:
    def free_all_blocks(self):
        pass
def get_default_memory_pool():
    return _Pool()
get_default_pinned_memory_pool = get_default_memory_pool
class _Function:
    def __init__(self, name):
        self.name = name
    def __call__(self, grid, block, args, shared_mem=0):
        if self.name == "gpusim_prime":
            return
        A, B, C, n = args
        C[:] = (A.reshape(int(n), int(n)) @ B.reshape(int(n), int(n))).ravel()
class _RawKernel:
    num_regs = 40
    def __init__(self, name):
        self.kernel = _Function(name)
    def __call__(self, grid, block, args, shared_mem=0):
        self.kernel(grid, block, args, shared_mem)
class RawModule:
    def __init__(self, path=None, code=None):
        assert open(path, "rb").read(4) == b"\\x7fELF" if code is None else "gpusim_prime" in code
    def get_function(self, name):
        return _RawKernel(name)
class _Event:
    t = 0.0
    def record(self):
        _Event.t += 0.25
        self.when = _Event.t
    def synchronize(self):
        pass
class _Device:
    pci_bus_id = "0000:01:00.0"
    def __init__(self, i=0):
        pass
    def use(self):
        pass
    def synchronize(self):
        pass
class _Runtime:
    @staticmethod
    def getDeviceProperties(i):
        return {"name": b"Fake H100"}
class cuda:
    Event = _Event
    Device = _Device
    runtime = _Runtime
    @staticmethod
    def get_elapsed_time(s, e):
        return e.when - s.when
'''

FAKE_NVCC = r'''#!PYTHON
import struct, sys
if "--version" in sys.argv:
    print("Cuda compilation tools, release 13.0, V13.0.88"); sys.exit(0)
names = ["", ".text._Z15simpleMatMatMulILi32EEvPKfS1_Pfi", ".shstrtab"]
strtab = b"".join(n.encode() + b"\0" for n in names)
offs = [sum(len(n) + 1 for n in names[:i]) for i in range(len(names))]
hdr = bytearray(64); hdr[:6] = b"\x7fELF\x02\x01"
struct.pack_into("<Q", hdr, 0x28, 64 + len(strtab)); struct.pack_into("<HHH", hdr, 0x3A, 64, 3, 2)
secs = b"".join(struct.pack("<I", o) + bytes(20) + struct.pack("<Q", 64 if i == 2 else 0) + bytes(32)
                for i, o in enumerate(offs))
open(sys.argv[sys.argv.index("-o") + 1], "wb").write(bytes(hdr) + strtab + secs)
'''

FAKE_SMI = r'''#!PYTHON
import sys, time
if any(a.startswith("--loop-ms") for a in sys.argv):
    while True:
        print("1980, 2619, 40, 300.5", flush=True); time.sleep(0.05)
print("Fake H100, 580.1, 1980, 2619")
'''

FAKE_NCU = r'''#!PYTHON
import subprocess, sys
a = sys.argv
if "--version" in a:
    print("NVIDIA (R) Nsight Compute Command Line Profiler\nVersion 2025.3.1.0 (build 1)"); sys.exit(0)
assert a[a.index("--clock-control") + 1] == "none"
metrics = a[a.index("--metrics") + 1].split(",")
log = a[a.index("--log-file") + 1]
child = a[a.index("--log-file") + 2:]
rc = subprocess.run(child).returncode
if "lts__t_bytes.sum" in metrics:
    print("==ERROR== Failed to find metric regex:^lts__t_bytes\\.sum$"); sys.exit(1)
ident = ["ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC"]
q = lambda cells: ",".join('"%s"' % c for c in cells)
rows = [q(ident + metrics), q([""] * 11 + ["x"] * len(metrics))]
assert "gpusim_prime" in a[a.index("-k") + 1]  # the child's priming launch comes first, profiled too
rows.append(q(["0", "1", "python3", "h", "gpusim_prime", "1", "7", "(1, 1, 1)", "(1, 1, 1)", "0", "9.0"]
              + ["1"] * len(metrics)))
for i, n in enumerate(child[child.index("--size") + 1].split(",")[:int(a[a.index("-c") + 1]) - 1]):
    g = int(n) // 32
    rows.append(q([str(i + 1), "1", "python3", "h", "simpleMatMatMul", "1", "7", "(32, 32, 1)", f"({g}, {g}, 1)",
                   "0", "9.0"] + [f"{n}000"] * len(metrics)))
open(log, "w").write("==PROF== Connected to process 1\n" + "\n".join(rows) + "\n")
sys.exit(rc)
'''


@pytest.fixture
def fake_tools(tmp_path):
    """(bin dir, environment) with fake nvcc, nvidia-smi, ncu on PATH and a fake cupy on PYTHONPATH."""
    import os
    import sys

    bin_dir, pkg = tmp_path / "bin", tmp_path / "pkgs" / "cupy"
    bin_dir.mkdir()
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(FAKE_CUPY)
    for name, text in (("nvcc", FAKE_NVCC), ("nvidia-smi", FAKE_SMI), ("ncu", FAKE_NCU)):
        (bin_dir / name).write_text(text.replace("#!PYTHON", "#!" + sys.executable))
        (bin_dir / name).chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
               PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[1]), str(pkg.parent)]))
    env.pop("GPUSIM_NVCC13", None)
    return bin_dir, env


def test_command_line_end_to_end_on_fake_tools(tmp_path, specs, fake_tools):
    import subprocess
    import sys

    bin_dir, env = fake_tools
    out = tmp_path / "out"
    spec = str(specs["mmC"].spec_path)
    proc = subprocess.run([sys.executable, "-m", "gpusim.measure.run", "--out", str(out), "--workloads", spec,
                           "--sizes-from", "64,96,128", "--reps", "50", "--min-seconds", "0", "--ncu", "--ncu-sizes", "64,128",
                           "--nvcc", str(bin_dir / "nvcc"), "--ncu-path", str(bin_dir / "ncu")],
                          env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rec = json.loads((out / "mmC__n64.json").read_text())
    assert rec["problems"] is None and rec["error"] is None, rec
    assert rec["check"]["passed"] and rec["kernel"]["mangled"] == "_Z15simpleMatMatMulILi32EEvPKfS1_Pfi"
    assert rec["timing"]["reps"] == 50 and rec["timing"]["median_ms"] == pytest.approx(0.25)
    assert rec["clocks"]["sm_mhz"]["median"] == 1980.0 and rec["env"]["cupy"] == "0.0-fake"
    assert rec["env"]["gpu"]["name"] == "Fake H100" and rec["env"]["ncu"].startswith("Version 2025.3")
    assert rec["ncu"]["error"] is None and rec["ncu"]["rejected"] == ["lts__t_bytes.sum"]
    assert rec["ncu"]["metrics"]["gpc__cycles_elapsed.max"]["value"] == 64000
    rec128 = json.loads((out / "mmC__n128.json").read_text())
    assert rec128["ncu"]["metrics"]["gpc__cycles_elapsed.max"]["value"] == 128000 and rec128["ncu"]["error"] is None
    assert len(rec["ncu"]["metrics"]) == len(ncu.ALL_METRICS) - 1
    assert "-arch=sm_90 -cubin -O3 -std=c++14" in rec["commands"]["nvcc"]
    assert any("--clock-control none" in c for c in rec["commands"]["ncu"])
    assert "n=96" not in proc.stdout or "SKIPPED" not in proc.stdout
    rec96 = json.loads((out / "mmC__n96.json").read_text())
    assert rec96["ncu"] is None and rec96["timing"]["reps"] == 50  # --ncu-sizes 64 only
    lines = (out / "summary.csv").read_text().splitlines()
    assert len(lines) == 4 and lines[1].startswith("mmC,64,ok,True")


def test_reference_matches_spec_and_einsum_flops(tmp_path):
    from gpusim.workloads import list_workloads
    specs = {wl.name: wl for wl in list_workloads()}
    if "simpleMatMatMul" not in specs:
        pytest.skip("traces/workloads/simpleMatMatMul.yaml not present")
    wl = specs["simpleMatMatMul"]
    inputs = wl.make_inputs(64, seed=3)
    ours, theirs = marshal.reference(wl, inputs, 64), wl.reference_outputs(inputs, 64)
    for k in theirs:
        np.testing.assert_allclose(ours[k], theirs[k], rtol=1e-12, atol=1e-12)
    if "einsum" in wl.reference[next(iter(wl.reference))]:
        assert marshal.flops(wl, 128)[0] == 2.0 * 128 ** 3


def test_deadline_skips_workloads_but_writes_summary(tmp_path, specs, fake_tools):
    import subprocess
    import sys

    bin_dir, env = fake_tools
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "gpusim.measure.run", "--out", str(out), "--workloads",
                           str(specs["mmC"].spec_path), "--sizes-from", "64", "--deadline", "0", "--ncu",
                           "--nvcc", str(bin_dir / "nvcc"), "--ncu-path", str(bin_dir / "ncu")],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rec = json.loads((out / "mmC__n64.json").read_text())
    assert "deadline" in rec["skipped"] and rec["timing"] is None and rec["ncu"] is None
    assert (out / "summary.csv").read_text().splitlines()[1].startswith("mmC,64,skipped")


def test_run_group_kills_on_timeout():
    import sys
    import time

    from gpusim.measure.procs import run_group
    t0 = time.monotonic()
    rc, _, err = run_group([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.5)
    assert rc == 124 and "timed out" in err and time.monotonic() - t0 < 10


def test_profiler_with_the_dram_set_asks_for_dram_bytes_and_cycles_only(tmp_path):
    calls = []
    res = ncu.NcuProfiler("ncu", tmp_path, runner=_fake_ncu(set(), calls), metric_set="dram").profile("w__n512", "k",
                                                                                                       ["python3"])
    assert res["error"] is None and len(calls) == 1
    assert set(calls[0]) == {"dram__bytes_read.sum", "dram__bytes_write.sum", "gpc__cycles_elapsed.max",
                             "gpu__time_duration.sum"}


def test_profiler_with_the_l1_set_asks_for_the_data_stage_wavefronts(tmp_path):
    """`--ncu-metrics l1`: one profile of the L1 data stage's wavefronts by memory space (global loads
    cost their lanes' bank conflicts there, bench/micro/README.md memory22), and the parser takes it."""
    from gpusim.measure import run

    calls = []
    res = ncu.NcuProfiler("ncu", tmp_path, runner=_fake_ncu(set(), calls), metric_set="l1").profile("w__n512", "k",
                                                                                                     ["python3"])
    assert res["error"] is None and len(calls) == 1
    assert {"l1tex__data_pipe_lsu_wavefronts_mem_lgds_cmd_read.sum", "l1tex__data_pipe_lsu_wavefronts_mem_shared_cmd_read.sum",
            "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"} <= set(calls[0])
    assert "dram__bytes_write.sum" not in calls[0]
    assert run.parse_args(["--out", "x", "--ncu-metrics", "l1"]).ncu_metrics == "l1"


def test_profiler_with_the_l2_set_asks_for_the_partitions_traffic(tmp_path):
    """`--ncu-metrics l2`: L2 sectors from the SMs and from the other partition (ltcfabric), with DRAM bytes."""
    from gpusim.measure import run

    calls = []
    res = ncu.NcuProfiler("ncu", tmp_path, runner=_fake_ncu(set(), calls), metric_set="l2").profile("w__n512", "k",
                                                                                                     ["python3"])
    assert res["error"] is None and len(calls) == 1
    assert {"lts__t_sectors_srcunit_ltcfabric.sum", "lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum",
            "dram__bytes_write.sum"} <= set(calls[0])
    assert run.parse_args(["--out", "x", "--ncu-metrics", "l2"]).ncu_metrics == "l2"


def test_profiler_drops_the_priming_launch(tmp_path):
    """The child's priming kernel is profiled first (Nsight's first profiled launch carries dirty data of
    its own) and its row never stands for the workload's launch."""
    def run(cmd, log_file):
        metrics = cmd[cmd.index("--metrics") + 1].split(",")
        header = ",".join(f'"{h}"' for h in ncu.IDENTITY + tuple(metrics))
        row = lambda i, name, v: f'"{i}","1","p","h","{name}","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0",' + \
            ",".join(f'"{v}"' for _ in metrics)  # noqa: E731
        return 0, "\n".join([header, row(0, "gpusim_prime", 1), row(1, "k", 7), row(2, "k", 8)])

    res = ncu.NcuProfiler("ncu", tmp_path, runner=run, metric_set="dram").profile("w__n512", "k", ["python3"], count=2)
    assert res["error"] is None and [k["info"]["Kernel Name"] for k in res["kernels"]] == ["k", "k"]
    assert [k["metrics"]["dram__bytes_write.sum"]["value"] for k in res["kernels"]] == [7, 8]


def test_bad_measure_option_is_one_line(capsys):
    from gpusim.measure import run

    with pytest.raises(SystemExit) as e:
        run.parse_args(["--out", "x", "--ncu-metrics", "bogus"])
    err = capsys.readouterr().err.strip()
    assert e.value.code == 2 and len(err.splitlines()) == 1 and "--ncu-metrics" in err and "dram" in err


def test_clock_window_waits_for_a_late_nvidia_smi(tmp_path, monkeypatch):
    """A timing window shorter than the sampling period takes the first sample after it started; when
    nvidia-smi starts late (a loaded host), window() waits for that sample instead of reporting none."""
    import sys
    import time

    from gpusim.measure.clocks import ClockSampler

    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!" + sys.executable + "\nimport time\ntime.sleep(0.6)\n"
                   "while True:\n    print('1755, 2619, 40, 300.5', flush=True); time.sleep(0.05)\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    sampler = ClockSampler()
    try:
        t0 = time.monotonic()
        clocks = sampler.window(t0, t0 + 0.001)
        assert clocks["sm_mhz"] == {"min": 1755.0, "median": 1755.0, "max": 1755.0}
        assert clocks["note"].startswith("no sample inside the window")
    finally:
        sampler.stop()


def test_cupy_device_opts_in_to_every_dynamic_shared_size():
    """A kernel with static shared memory and 48 KiB of dynamic shared memory needs the opt-in too
    (49,152 dynamic + 4,096 static bytes failed to launch on the H200 before: CUDA_ERROR_INVALID_VALUE)."""
    from gpusim.measure.backend import CupyDevice

    class Raw:
        max_dynamic_shared_size_bytes = 0

    class Module:
        def __init__(self, path):
            self.raw = Raw()

        def get_function(self, name):
            return self.raw

    dev = CupyDevice.__new__(CupyDevice)
    dev.cp, dev._modules = types.SimpleNamespace(RawModule=Module), {}
    for shared in (0, 49152, 102400):
        dev._modules.clear()
        _, raw = dev.load_kernel("k.cubin", "k", shared)
        assert raw.max_dynamic_shared_size_bytes == shared
