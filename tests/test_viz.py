"""gpusim viz: the Perfetto trace, the plots, the HTML report (rendered in headless Chromium), errors."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from gpusim.cli import app
from gpusim.timing.driver import run_workload
from gpusim.viz.load import ResultFileError, _address_of, load_result
from gpusim.viz.perfetto import WARP_TID_BASE, to_trace_events
from gpusim.viz.source import source_rows

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def result():
    """A small real run with a timeline of CTA 0 (sgemm_maxas_64, n=128, H100: under a second)."""
    return run_workload("sgemm_maxas_64", "h100", 128, window=(0, 1e9, [0]))


@pytest.fixture(scope="module")
def outdir(result, tmp_path_factory):
    """`gpusim viz` of the run and of a copy without a timeline (as a second variant)."""
    tmp = tmp_path_factory.mktemp("viz")
    first, second = tmp / "with_timeline.json", tmp / "no_timeline.json"
    first.write_text(result.model_dump_json())
    second.write_text(result.model_copy(update={"timeline": None, "cycles": result.cycles * 1.1}).model_dump_json())
    out = tmp / "out"
    run = CliRunner().invoke(app, ["viz", str(first), str(second), "-o", str(out), "--json"])
    assert run.exit_code == 0, run.output
    written = json.loads(run.output)
    assert written["report"] == str(out / "report.html")
    return out


def test_trace_events_are_valid_and_complete(result):
    trace = json.loads(json.dumps(to_trace_events(result)))
    events = trace["traceEvents"]
    assert events and trace["displayTimeUnit"] == "ns" and "cycle" in trace["otherData"]["time_unit"]
    slices = [e for e in events if e["ph"] == "X"]
    for e in slices:
        assert {"ts", "dur", "pid", "tid", "name"} <= e.keys() and e["dur"] > 0

    selected = result.timeline_reasons.index("selected")
    issued = [e for e in result.timeline if e[5] == selected]
    issue_slices = [e for e in slices if e["cat"] == "issue"]
    assert len(issue_slices) == len(issued)
    assert all(e["tid"] < WARP_TID_BASE for e in issue_slices)

    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    schedulers = {(sm, sp) for sm, sp, *_ in issued}
    warps = {(e[0], e[2]) for e in result.timeline}
    assert {(1 + sm, sp) for sm, sp in schedulers} <= names.keys()
    assert {(1 + sm, WARP_TID_BASE + w) for sm, w in warps} <= names.keys()
    assert len(names) == len(schedulers) + len(warps)
    assert {e["args"]["name"] for e in events if e["name"] == "process_name"} >= {"SM 0 · sgemm_maxas_64 · h100 · n=128"}


def test_issue_slices_name_the_issued_instruction(result):
    text = {p.address: p.text for p in result.stalls_per_pc}
    issue = [e for e in to_trace_events(result)["traceEvents"] if e.get("cat") == "issue"]
    assert all(e["name"] == text[int(e["args"]["pc"], 16)] for e in issue)
    opcodes = Counter(e["name"].split()[1 if e["name"].startswith("@") else 0] for e in issue)
    assert opcodes.most_common(1)[0][0] == "FFMA"


def test_warp_tracks_merge_runs_and_keep_time(result):
    events = [e for e in to_trace_events(result)["traceEvents"] if e["ph"] == "X" and e["tid"] >= WARP_TID_BASE]
    assert len(events) < len(result.timeline)  # merged
    for warp in {e[2] for e in result.timeline}:
        recorded = sum(e[4] for e in result.timeline if e[2] == warp)
        shown = sum(e["dur"] for e in events if e["tid"] == WARP_TID_BASE + warp)
        assert shown == pytest.approx(recorded, rel=1e-6)
        spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e["tid"] == WARP_TID_BASE + warp)
        assert all(b[0] >= a[1] - 1e-6 for a, b in zip(spans, spans[1:]))  # no overlaps on a track
    recorded = {result.timeline_reasons[e[5]] for e in result.timeline}
    shown = {e["name"] for e in events}
    assert {"issue" if r == "selected" else r for r in recorded} == shown  # every reason recorded is drawn
    assert len(shown) >= 4


def test_source_view_rows(result):
    rows = source_rows(result)
    assert [r["address"] for r in rows] == sorted(r["address"] for r in rows)
    stall_total = sum(v for k, v in result.stalls.items() if k != "selected")
    assert sum(r["stall_cycles"] for r in rows) == pytest.approx(stall_total, rel=1e-3)
    assert sum(r["share"] for r in rows) == pytest.approx(1.0)


@pytest.mark.parametrize("arch", ["sm_35", "sm_52", "sm_90"])
def test_address_layout_matches_listings(arch):
    from gpusim.toolchain.listings import load_program
    from gpusim.workloads import find_workload

    program = load_program(find_workload("sgemm_maxas_64"), arch)
    assert [i.address for i in program.instructions] == [_address_of(arch, i) for i in range(len(program))]


def test_outputs_written(outdir):
    assert (outdir / "timeline.json").stat().st_size > 1000
    for stem in ("stall_breakdown", "0_sgemm_maxas_64_h100_128_utilisation", "0_sgemm_maxas_64_h100_128_hot_instructions",
                 "1_sgemm_maxas_64_h100_128_hot_instructions"):
        for ext in ("png", "svg"):
            assert (outdir / "plots" / f"{stem}.{ext}").stat().st_size > 1000
    assert (outdir / "plots" / "0_sgemm_maxas_64_h100_128_timeline.png").exists()
    assert not (outdir / "plots" / "1_sgemm_maxas_64_h100_128_utilisation.png").exists()  # no timeline, no plot


def test_report_is_self_contained(outdir, result):
    html = (outdir / "report.html").read_text()
    assert html.count("<svg") >= 4 and "data:image/png;base64," in html
    assert 'src="http' not in html and "<link" not in html and "<script" not in html
    for needle in ("sgemm_maxas_64 · h100 · n=128 #2", f"{result.cycles:,.0f}", "long_scoreboard", "ui.perfetto.dev",
                   "timeline.json", "1 trace microsecond = 1 SM cycle", "Source view", result.stalls_per_pc[0].text,
                   f'{result.memory["dram_bytes"]:,}', "No timeline recorded"):
        assert needle in html, needle


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium); "
                                             "the report screenshot test needs it")
def test_report_renders_in_headless_chromium(outdir, tmp_path):
    from matplotlib.image import imread

    shot = tmp_path / "report.png"
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}", "--window-size=1280,2000",
                    (outdir / "report.html").resolve().as_uri()],
                   capture_output=True, timeout=120, check=False)
    assert shot.exists() and shot.stat().st_size > 50_000
    pixels = imread(shot)[..., :3]
    assert pixels.shape[:2] == (2000, 1280)
    colours = np.unique((pixels[::7, ::7] * 255).astype(np.uint8).reshape(-1, 3), axis=0)
    assert len(colours) > 50  # text, tables and coloured plots, not a blank page
    white = np.all(pixels > 0.97, axis=-1).mean()
    assert 0.3 < white < 0.98


def _gpusim(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpusim", *args], capture_output=True, text=True, timeout=120)


def test_unknown_schema_version_is_one_line_error(result, tmp_path):
    data = json.loads(result.model_dump_json())
    data["schema_version"] = 999
    bad = tmp_path / "future.json"
    bad.write_text(json.dumps(data))
    run = _gpusim("viz", str(bad), "-o", str(tmp_path / "out"))
    assert run.returncode != 0
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "schema_version 999" in lines[0] and str(bad) in lines[0], run.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("content, message", [(None, "no such result file"), ("{not json", "not a readable JSON"),
                                              ('{"cycles": 1}', "no schema_version"),
                                              ('{"schema_version": 1, "card": "h100"}', "field '")])
def test_bad_result_files(tmp_path, content, message):
    path = tmp_path / "r.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ResultFileError, match=message):
        load_result(path)
