"""Validation data parse; `gpusim validate` reports the figures it computes (tiny subset, fast)."""

from __future__ import annotations

import json
import math

import pytest

from gpusim import REPO_ROOT
from gpusim import validate as V
from gpusim.measure import compare as M
from gpusim.measure.record import REQUIRED

DATA = REPO_ROOT / "validation"
RECORDS = sorted(p for src in ("small", "timing", "ncu_large") for p in DATA.glob(f"*/{src}/*__n*.json"))


def test_validation_records_exist():
    assert RECORDS, "no validation records under validation/<card>/{small,timing}"
    assert any("/small/" in str(p) for p in RECORDS) and any("/timing/" in str(p) for p in RECORDS)


@pytest.mark.parametrize("path", RECORDS, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}/{p.stem}")
def test_record_has_required_fields(path):
    rec = json.loads(path.read_text())
    for key, typ in REQUIRED.items():
        assert key in rec, f"{path.name}: missing {key}"
        assert isinstance(rec[key], typ), f"{path.name}: {key} is {type(rec[key]).__name__}"
    if V.skip_reason(rec) is None:
        t = rec["timing"]
        assert t["median_ms"] > 0 and t["reps"] >= 1
        mhz, _ = V.measured_clock_mhz(rec)
        assert mhz > 0
    if path.parent.name in ("small", "ncu_large") and rec.get("ncu") and not rec["ncu"].get("error"):
        m = rec["ncu"]["metrics"]
        for name in ("gpc__cycles_elapsed.max", "smsp__inst_executed.sum", "dram__bytes_read.sum",
                     "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"):
            assert name in m and m[name]["value"] is not None, f"{path.name}: ncu {name}"
        fr = V.measured_stall_fractions(rec)
        assert fr and math.isclose(sum(fr.values()), 1.0, rel_tol=1e-9)


def test_csvs_parse():
    import csv

    for card_dir in DATA.iterdir():
        for name in ("instruction_counts.csv", "shared_bank_conflicts.csv"):
            p = card_dir / name
            if p.exists():
                rows = list(csv.DictReader(p.open()))
                assert rows and {"workload", "size"} <= set(rows[0])


def test_case_list_covers_measured_records():
    """Every usable record gives a row its event time or its Nsight counters; the rest are listed
    as skipped, with a reason."""
    cases = V.list_cases("h100")
    assert len(cases) >= 90
    assert all(c.mode == ("detailed" if c.size <= V.DETAILED_MAX_SIZE else "sampled") for c in cases)
    skipped = {s["record"] for s in V.skipped_records("h100")}
    used = {c.path for c in cases} | {c.ncu_path for c in cases if c.ncu_path}
    records = {str(p.relative_to(REPO_ROOT)) for src in V.SOURCES for p in (DATA / "h100" / src).glob("*__n*.json")}
    superseded = {r for r in records - used - skipped if "/ncu_large/" in r}  # ncu_large timing where timing/ has it
    assert not superseded, superseded  # (every usable ncu_large record still gives its counters)
    assert used | skipped == records and not used & skipped
    assert len({(c.workload, c.size) for c in cases}) == len(cases)


def test_cache_state_per_case():
    """Event times are compared with a warm-L2 simulation, Nsight counters with a cold one: a small
    case (both) is simulated twice, a timing-only case once (warm), a seed once (warm); the cache
    key tells the two apart."""
    cases = {(c.source, c.workload, c.size): c for c in V.list_cases("h100")}
    small = cases[("queued", "sgemm_maxas_64", 128)]  # event time from queued/, counters from small/
    assert "/queued/" in small.path and "/small/" in small.ncu_path
    assert V.cache_states(small) == {"time": "warm", "ncu": "cold"}
    sims = V.simulations([small])
    assert [s.l2 for s in sims] == ["warm", "cold"] and V.cache_key(sims[0]) != V.cache_key(sims[1])
    large = cases[("timing", "sgemm_maxas_64", 4096)]
    assert large.ncu_path is None and V.cache_states(large) == {"time": "warm", "ncu": None}
    assert [s.l2 for s in V.simulations([large])] == ["warm"]
    mid = cases[("timing", "dgemm_unroll", 1024)]  # event time from timing/, counters from ncu_large/
    assert "/timing/" in mid.path and "/ncu_large/" in mid.ncu_path
    assert [s.l2 for s in V.simulations([mid])] == ["warm", "cold"]
    seed = V.seed_cases("gtx970")[0]
    assert [s.l2 for s in V.simulations([seed])] == ["warm"]
    with pytest.raises(ValueError):
        V.cache_key(small)  # a row is not a simulation


def _fake_sim(cycles, dram, stalls, **mem):
    return {"cycles": cycles, "time_s": cycles / 1e9 + 1e-6, "clock_mhz": 1000.0, "warp_instructions": 100,
            "shared": {"bank_conflicts": 0, "wavefronts": 0}, "stalls": stalls,
            "memory": {"dram_bytes": dram, **mem}}


def test_build_row_uses_warm_for_time_and_cold_for_ncu():
    case = next(c for c in V.list_cases("h100") if (c.workload, c.size) == ("simpleMultiply", 64))
    assert case.source == "queued" and "/small/" in case.ncu_path
    queued = json.loads((REPO_ROOT / case.path).read_text())
    rec = json.loads((REPO_ROOT / case.ncu_path).read_text())  # host-paced event time and Nsight counters
    warm = _fake_sim(1000.0, 0, {"selected": 1.0, "wait": 1.0})
    cold = _fake_sim(3000.0, 1000, {"selected": 1.0, "lg_throttle": 3.0})
    # the card's launch model: + launch_overhead_us 1.6 (h100.yaml); launches timed queued behind a
    # blocking kernel have no floor
    row_q = V.build_row(case, warm, cold, queued, rec)
    assert queued["timing"]["queued"] and row_q["measured_time_ms"] == queued["timing"]["median_ms"]
    assert math.isclose(row_q["predicted_time_ms"], (1000.0 / (row_q["measured_mhz"] * 1e6) + 1.6e-6) * 1e3)
    # host-paced: never below event_floor_us 10.1
    row = V.build_row(case, warm, cold, rec, rec)
    mhz = row["measured_mhz"]
    assert row["time_cache_state"] == "warm" and row["ncu_cache_state"] == "cold"
    assert math.isclose(row["predicted_time_ms"], max(1000.0 / (mhz * 1e6) + 1.6e-6, 10.1e-6) * 1e3)
    ncu = rec["ncu"]["metrics"]
    assert math.isclose(row["cycles_error_pct_vs_ncu"],
                        100 * (3000 - ncu["gpc__cycles_elapsed.max"]["value"]) / ncu["gpc__cycles_elapsed.max"]["value"])
    rd = ncu["dram__bytes_read.sum"]["value"]
    assert row["predicted_dram_read_bytes"] == 1000 and math.isclose(row["dram_read_error_pct"], 100 * (1000 - rd) / rd)
    assert row["predicted_dram_write_bytes"] is None and row["dram_write_error_pct"] is None  # no write counter: n/a
    assert row["predicted_top_stalls"][0][0] == "lg_throttle"
    assert math.isclose(row["stall_distance"],
                        M.stall_distance({"selected": 0.25, "lg_throttle": 0.75}, V.measured_stall_fractions(rec)))
    # with the model's read and write counters
    cold2 = _fake_sim(3000.0, 5000, {"selected": 1.0}, dram_read_bytes=rd, dram_write_bytes=64)
    row2 = V.build_row(case, warm, cold2, rec, rec)
    assert row2["dram_read_error_pct"] == 0.0 and row2["predicted_dram_write_bytes"] == 64
    summ = V.summarize([row, row2])
    assert summ["dram_read_bytes"]["n"] == 2 and summ["dram_write_bytes"]["not_simulated"] == 1
    assert summ["per_family"]["seed003 C=AA^T"]["cases"] == 2
    # no ncu record: no ncu figures, time still compared
    row3 = V.build_row(V.replace(case, ncu_path=None), warm, None, rec)
    assert row3["ncu_cache_state"] is None and "stall_distance" not in row3 and row3["time_error_pct"] is not None


def test_stall_distance_hand_computed():
    """Half the L1 distance over the union of reasons; a reason only one side has counts as 0 on the other."""
    ncu = M.ncu_stall_fractions({M.STALL_PREFIX + r + M.STALL_SUFFIX: {"value": v}
                                 for r, v in (("selected", 1.0), ("long_scoreboard", 2.0), ("wait", 1.0),
                                              ("sleeping", 0.0))})
    assert ncu == {"selected": 0.25, "long_scoreboard": 0.5, "wait": 0.25, "sleeping": 0.0}
    sim = M.sim_stall_fractions({"selected": 2.0, "long_scoreboard": 6.0, "register_bank_conflict": 2.0})
    assert sim == {"selected": 0.2, "long_scoreboard": 0.6, "register_bank_conflict": 0.2}
    # |0.2-0.25| + |0.6-0.5| + |0.2-0| (gpusim only) + |0-0.25| (ncu only) = 0.6, halved
    assert math.isclose(M.stall_distance(sim, ncu), 0.3)
    assert M.stall_distance(ncu, ncu) == 0.0
    assert M.stall_distance({"wait": 1.0}, {"barrier": 1.0}) == 1.0
    assert M.stall_distance(sim, None) is None
    assert M.top_reason(sim) == "long_scoreboard"  # `selected` is not a stall


def test_validate_tiny_subset_reports_its_figures(tmp_path, monkeypatch, capsys):
    """`gpusim validate --json` on 2 small cases: per-case errors and the summary agree with the rows."""
    from gpusim import cli

    picked = [c for c in V.list_cases("h100") if (c.workload, c.size) in
              {("sgemm_maxas_64", 64), ("simpleMultiply", 64)}]
    assert len(picked) == 2
    monkeypatch.setattr(V, "list_cases", lambda gpu=None, quick=False: picked)
    monkeypatch.setattr(V, "seed_cases", lambda gpu=None, quick=False: [])
    monkeypatch.setattr(V, "CACHE_DIR", tmp_path / "cache")
    real = V.run_validation
    monkeypatch.setattr(V, "run_validation", lambda **kw: real(cache_dir=tmp_path / "cache", **kw))
    monkeypatch.setattr("sys.argv", ["gpusim", "validate", "--gpu", "h100", "--json", "--workers", "1"])
    cli.main()
    report = json.loads(capsys.readouterr().out)
    rows = report["rows"]
    assert len(rows) == 2 and report["run"]["computed"] == 4  # each: warm (event time) and cold (ncu)
    for r in rows:
        exp = 100 * (r["predicted_time_ms"] - r["measured_time_ms"]) / r["measured_time_ms"]
        assert math.isclose(r["time_error_pct"], exp, rel_tol=1e-12)
        # configs/gpus/h100.yaml: launch_overhead_us 1.6 added, never below event_floor_us 10.1 where
        # the host paced the timed launches (not where they were queued behind a blocking kernel)
        kernel_ms = r["predicted_cycles"] / (r["measured_mhz"] * 1e3)
        floor = 0.0 if r["source"] == "queued" else 10.1e-3
        assert math.isclose(r["predicted_time_ms"], max(kernel_ms + 1.6e-3, floor), rel_tol=1e-9)
        assert math.isclose(r["measured_cycles"], r["measured_time_ms"] * r["measured_mhz"] * 1e3, rel_tol=1e-12)
        assert r["measured_warp_instructions"] is not None and r["measured_shared_bank_conflicts"] is not None
        assert r["measured_top_stalls"] and r["predicted_top_stalls"]
        assert r["time_cache_state"] == "warm" and r["ncu_cache_state"] == "cold"
        assert 0 <= r["stall_distance"] <= 1 and r["cycles_error_pct_vs_ncu"] is not None
        assert r["dram_read_error_pct"] is not None  # (write: whatever the model counts, or None)
    mape = sum(abs(r["time_error_pct"]) for r in rows) / 2
    s = report["summary"]
    assert math.isclose(s["time"]["mape_pct"], mape, rel_tol=1e-12)
    worst = max(rows, key=lambda r: abs(r["time_error_pct"]))
    assert s["worst"]["workload"] == worst["workload"] and s["worst"]["time_error_pct"] == worst["time_error_pct"]
    # the printed lines carry the same numbers
    lines = "\n".join(report["summary_lines"])
    assert f"time MAPE {mape:.1f}% over 2 cases" in lines
    assert f"({worst['time_error_pct']:+.1f}%)" in lines
    assert "fitted parameters: none" in lines
    dist = sum(r["stall_distance"] for r in rows) / 2
    assert math.isclose(s["stall_distance"]["mean"], dist, rel_tol=1e-12)
    assert f"mean distance {dist:.3f} over 2 cases" in lines
    assert s["top_stall_match"]["n"] == 2 and "per family:" in lines
    assert set(s["per_family"]) == {"sgemm maxas (seed002)", "seed003 C=AA^T"}

    # second run: everything from the cache, same figures
    report2 = real(cases=picked, seeds=False, cache_dir=tmp_path / "cache", progress=False)
    assert report2["run"]["cached"] == 4 and report2["run"]["computed"] == 0
    assert [r["time_error_pct"] for r in report2["rows"]] == [r["time_error_pct"] for r in rows]


def test_rankings_and_kendall():
    rows = [{"card": "x", "size": 1, "workload": w, "measured_time_ms": m, "predicted_time_ms": p}
            for w, m, p in (("sgemm_maxas_64", 1.0, 2.0), ("sgemm_maxas_128", 2.0, 1.0))]
    rk = V.rankings(rows)
    assert len(rk) == 1 and rk[0]["match"] is False and rk[0]["kendall_tau"] == -1.0
    rows[1]["predicted_time_ms"] = 3.0
    assert V.rankings(rows)[0]["match"] is True


def test_stall_distance_does_not_depend_on_the_hash_seed():
    # summed over a set of reason names, the last bit moved with PYTHONHASHSEED: validate's rows did
    # not replay bit-identically from one process to the next
    import os
    import subprocess
    import sys

    code = ("from gpusim.measure.compare import stall_distance;"
            "sim = {f'r{i}': (i * 0.137) % 0.1 for i in range(19)};"
            "ncu = {f'r{i}': (i * 0.291) % 0.1 for i in range(5, 24)};"
            "print(repr(stall_distance(sim, ncu)))")
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout
            for seed in range(8)}
    assert len(outs) == 1, outs


def test_cache_key_covers_the_code_that_decides_sampled_results():
    # sampled mode's DRAM counters come from trace/footprint.py and its trace from trace/elide.py:
    # a change there must not let validate reuse cached rows (the key hashed timing/ only)
    from gpusim.validate import PACKAGE_DIR, model_files

    files = {p.resolve() for p in model_files()}
    for part in ("timing/mem/grid.py", "trace/footprint.py", "trace/elide.py", "timing/gpu.py"):
        assert (PACKAGE_DIR / part).resolve() in files, part


def test_dram_bytes_come_from_one_pass_profiles_where_there_are_some():
    # validation/h100/dram_1pass/: one-pass profiles (`--ncu-metrics dram`), several runs per case; the
    # repeat_all/ run profiled the same kernels with the full set, whose replay adds ~2 MiB of writes
    one = V.one_pass_dram("h100")
    d = one[("dgemm_unroll", 2048)]
    assert len(d["records"]) >= 3 and all("/dram_1pass/" in p and "/repeat_all/" not in p for p in d["records"])
    writes = [json.loads((REPO_ROOT / p).read_text())["ncu"]["metrics"]["dram__bytes_write.sum"]["value"]
              for p in d["records"]]
    assert math.isclose(d["write"], sum(writes) / len(writes)) and d["write"] < 17.5 * 2**20
    full = json.loads((DATA / "h100/dram_1pass/repeat_all/dgemm_unroll__n2048.json").read_text())
    assert full["ncu"]["metric_set"] == "all"
    assert full["ncu"]["metrics"]["dram__bytes_write.sum"]["value"] > d["write"] + 2**20
    case = next(c for c in V.list_cases("h100") if (c.workload, c.size) == ("dgemm_unroll", 2048))
    rec = json.loads((REPO_ROOT / case.ncu_path).read_text())
    cold = _fake_sim(3000.0, 5000, {"selected": 1.0}, dram_read_bytes=1, dram_write_bytes=d["write"])
    row = V.build_row(case, cold, cold, rec, rec, d)
    assert row["measured_dram_write_bytes"] == d["write"] and row["dram_write_error_pct"] == 0.0
    assert row["dram_records"] == d["records"]
    row = V.build_row(case, cold, cold, rec, rec)  # no one-pass data: the full-set record's
    assert row["measured_dram_write_bytes"] == rec["ncu"]["metrics"]["dram__bytes_write.sum"]["value"]
    assert row["dram_records"] == [case.ncu_path]


def test_dram_bytes_leave_out_nsights_first_profiled_launch():
    # the suite12 cases at 512 were each ncu child's first profiled launch (0.9-1.0 MiB more written back
    # by copies and transposes); the primed re-runs replace them, and a case with only such records keeps them
    assert V.first_kernel_of_process({"ncu": {"launch_index": 0}})
    assert not V.first_kernel_of_process({"ncu": {"launch_index": 0, "primed": True}})
    assert not V.first_kernel_of_process({"ncu": {"launch_index": 2}})
    one = V.one_pass_dram("h100")
    d = one[("copy_float4", 512)]
    assert len(d["records"]) == 3 and all("/dram_suite12_primed_r" in p for p in d["records"])
    assert d["first_kernel_left_out"] == 4 and d["write"] < 0.25 * 2**20  # suite12, its r2, r3, repeat_dram
    assert one[("copy_float4", 1024)]["first_kernel_left_out"] == 0
    assert one[("naiveMatMatMul", 64)]["first_kernel_left_out"] == 0 and len(one[("naiveMatMatMul", 64)]["records"]) == 1


def test_dram_error_above_the_noise_leaves_tiny_measurements_out():
    def row(meas, pred):
        return {"family": "f", "predicted_cycles_cold": 1.0, "measured_dram_write_bytes": meas,
                "predicted_dram_write_bytes": pred, "dram_write_error_pct": 100 * (pred - meas) / meas if meas else None}
    mib = 2**20
    s = V._bytes_stats([row(10 * mib, 11 * mib), row(4096, 0), row(0.2 * mib, 0.3 * mib), row(0, 0)], "write")
    assert s["n"] == 3 and math.isclose(s["mape_pct"], (10 + 100 + 50) / 3)
    assert s["above_noise"]["n"] == 1 and math.isclose(s["above_noise"]["mape_pct"], 10)
    assert s["below_noise"] == 3 and s["below_noise_predicted_below"] == 2  # 0.3 MiB predicted: above it
