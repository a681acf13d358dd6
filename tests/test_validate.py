"""Validation data parse; `gpusim validate` reports the figures it computes (tiny subset, fast)."""

from __future__ import annotations

import json
import math

import pytest

from gpusim import REPO_ROOT
from gpusim import validate as V
from gpusim.measure.record import REQUIRED

DATA = REPO_ROOT / "validation"
RECORDS = sorted(p for src in ("small", "timing") for p in DATA.glob(f"*/{src}/*__n*.json"))


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
    if path.parent.name == "small" and rec.get("ncu") and not rec["ncu"].get("error"):
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
    cases = V.list_cases("h100")
    assert len(cases) >= 90
    assert all(c.mode == ("detailed" if c.size <= V.DETAILED_MAX_SIZE else "sampled") for c in cases)
    skipped = {s["record"] for s in V.skipped_records("h100")}
    records = [p for src in ("small", "timing") for p in (DATA / "h100" / src).glob("*__n*.json")]
    assert len(cases) + len(skipped) == len(records)


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
    assert len(rows) == 2 and report["run"]["computed"] == 2
    for r in rows:
        exp = 100 * (r["predicted_time_ms"] - r["measured_time_ms"]) / r["measured_time_ms"]
        assert math.isclose(r["time_error_pct"], exp, rel_tol=1e-12)
        launch_ms = 7.17e-3  # configs/gpus/h100.yaml launch_overhead_us
        assert math.isclose(r["predicted_time_ms"], r["predicted_cycles"] / (r["measured_mhz"] * 1e3) + launch_ms,
                            rel_tol=1e-9)
        assert math.isclose(r["measured_cycles"], r["measured_time_ms"] * r["measured_mhz"] * 1e3, rel_tol=1e-12)
        assert r["measured_warp_instructions"] is not None and r["measured_shared_bank_conflicts"] is not None
        assert r["measured_top_stalls"] and r["predicted_top_stalls"]
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

    # second run: everything from the cache, same figures
    report2 = real(cases=picked, seeds=False, cache_dir=tmp_path / "cache", progress=False)
    assert report2["run"]["cached"] == 2 and report2["run"]["computed"] == 0
    assert [r["time_error_pct"] for r in report2["rows"]] == [r["time_error_pct"] for r in rows]


def test_rankings_and_kendall():
    rows = [{"card": "x", "size": 1, "workload": w, "measured_time_ms": m, "predicted_time_ms": p}
            for w, m, p in (("sgemm_maxas_64", 1.0, 2.0), ("sgemm_maxas_128", 2.0, 1.0))]
    rk = V.rankings(rows)
    assert len(rk) == 1 and rk[0]["match"] is False and rk[0]["kendall_tau"] == -1.0
    rows[1]["predicted_time_ms"] = 3.0
    assert V.rankings(rows)[0]["match"] is True
