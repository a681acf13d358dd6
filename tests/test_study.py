"""gpusim study: spec validation, local pool vs Dask, resume from the cache, failures, CLI exit codes.

A tiny study (sgemm_maxas_64, n=64, h100: one CTA, ~0.3 s a point) keeps the whole file well under a minute.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpusim.errors import GpusimError, SpecError
from gpusim.study import load_study, run_study

REPO = Path(__file__).resolve().parents[1]
# columns that depend on when/where a point ran, not on what it computed
VOLATILE = ("wall_s",)

TINY = """\
name: tiny
description: two points of the maxas SGEMM on H100
base: h100
workloads: [sgemm_maxas_64]
sizes: [64]
axes:
  {axis}
derived:
  gflops: 2 * size**3 / time_s / 1e9
"""


def _study(tmp_path: Path, axis: str = "sm.register_file.banks: [2, 4]", name: str = "tiny.yaml") -> Path:
    path = tmp_path / name
    path.write_text(TINY.format(axis=axis))
    return path


def _stable(df):
    return df[[c for c in df.columns if c not in VOLATILE]].reset_index(drop=True)


@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("study_local")
    outcome = run_study(load_study(_study(tmp)), out_dir=tmp / "out", workers=2, progress=False)
    return tmp, outcome


def test_local_run_writes_everything(local_run):
    tmp, outcome = local_run
    assert outcome.ok and len(outcome.computed) == 2 and not outcome.cached
    df = outcome.table
    assert list(df["sm.register_file.banks"]) == [2, 4]
    assert (df["status"] == "ok").all() and (df["cycles"] > 0).all()
    assert {"study", "workload", "size", "card", "cycles", "time_s", "ipc", "top_stall", "stall_wait",
            "shared_conflicts", "reg_conflict_cycles", "gflops", "error"} <= set(df.columns)
    stall_cols = [c for c in df.columns if c.startswith("stall_")]
    assert abs(df[stall_cols].sum(axis=1) - 1.0).max() < 1e-9
    # fewer banks can only add register-bank conflict cycles
    assert df["reg_conflict_cycles"][0] >= df["reg_conflict_cycles"][1]
    out = tmp / "out"
    for name in ("results.csv", "results.parquet", "summary.md", "failures.json", "study.json"):
        assert (out / name).is_file(), name
    assert list((out / "plots").glob("*.png"))
    assert len(list((out / "cache").glob("*.json"))) == 2
    assert len(list((out / "cache" / "traces").glob("*.npz"))) == 1  # one trace for both config points
    import pandas as pd

    back = pd.read_parquet(out / "results.parquet")
    assert list(back["cycles"]) == list(df["cycles"])


def test_dask_local_cluster_gives_the_same_table(local_run, tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    _, local = local_run
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        outcome = run_study(load_study(_study(tmp_path)), out_dir=tmp_path / "out", dask=cluster.scheduler_address,
                            progress=False)
    assert outcome.executor == "dask" and len(outcome.computed) == 2
    import pandas as pd

    pd.testing.assert_frame_equal(_stable(outcome.table), _stable(local.table))


def test_resume_recomputes_only_the_missing_point(tmp_path):
    spec = _study(tmp_path)
    out = tmp_path / "out"
    first = run_study(load_study(spec), out_dir=out, workers=1, progress=False)
    assert len(first.computed) == 2
    files = sorted((out / "cache").glob("*.json"))
    gone, kept = files[0], files[1]
    kept_mtime = kept.stat().st_mtime_ns
    gone.unlink()
    second = run_study(load_study(spec), out_dir=out, workers=1, progress=False)
    assert second.computed == [gone.stem]
    assert second.cached == [kept.stem]
    assert kept.stat().st_mtime_ns == kept_mtime
    assert gone.is_file()
    import pandas as pd

    pd.testing.assert_frame_equal(_stable(second.table), _stable(first.table))
    third = run_study(load_study(spec), out_dir=out, workers=1, progress=False)
    assert third.computed == [] and len(third.cached) == 2


@pytest.mark.parametrize("axis, needle", [
    ("sm.register_file.bankz: [2, 4]", "no field 'bankz'"),
    ("sm.register_file.banks: ['2', 4]", "valid integer"),
    ("sm.register_file.reuse_cache: [true, 3]", "valid boolean"),
    ("sm.scheduler.policy: [gto, fifo]", "fifo"),
])
def test_bad_axis_is_one_line_naming_the_axis(tmp_path, axis, needle):
    path = axis.split(":")[0]
    with pytest.raises(SpecError) as err:
        load_study(_study(tmp_path, axis))
    msg = str(err.value)
    assert f"axis '{path}'" in msg and needle in msg and "\n" not in msg


def test_bad_study_fields(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text(TINY.format(axis="sm.register_file.banks: [2]").replace("sgemm_maxas_64", "nope"))
    with pytest.raises(SpecError, match="unknown workload 'nope'"):
        load_study(p)
    p.write_text(TINY.format(axis="sm.register_file.banks: [2]") + "colour: blue\n")
    with pytest.raises(SpecError, match="colour"):
        load_study(p)
    p.write_text(TINY.format(axis="sm.register_file.banks: [2]").replace("[64]", "[96]"))
    with pytest.raises(SpecError, match="size"):
        load_study(p)
    p.write_text(TINY.format(axis="sm.register_file.banks: [2]") + "metric: speed\n")
    with pytest.raises(SpecError, match="metric 'speed'"):
        load_study(p)


def test_unreachable_dask_is_one_clear_error(tmp_path):
    with pytest.raises(GpusimError) as err:
        run_study(load_study(_study(tmp_path)), out_dir=tmp_path / "out", dask="tcp://127.0.0.1:9",
                  dask_timeout=1, progress=False)
    msg = str(err.value)
    assert "cannot reach the Dask scheduler" in msg and "tcp://127.0.0.1:9" in msg and "\n" not in msg
    assert not (tmp_path / "out" / "cache").exists()  # nothing ran


def test_a_failing_point_does_not_sink_the_others(tmp_path):
    # 256 registers per SM: valid config, but the kernel cannot fit -> a runtime failure of that point only
    spec = _study(tmp_path, "sm.registers: [65536, 256]")
    out = tmp_path / "out"
    outcome = run_study(load_study(spec), out_dir=out, workers=2, progress=False)
    assert not outcome.ok
    [fail] = outcome.failures
    assert fail["coords"] == {"sm.registers": 256} and "does not fit" in fail["error"]
    df = outcome.table
    assert list(df["status"]) == ["ok", "error"] and df["cycles"][0] > 0
    assert "does not fit" in df["error"][1]
    assert len(list((out / "cache").glob("*.json"))) == 1  # failures are not cached: a rerun retries them
    assert "does not fit" in (out / "summary.md").read_text()
    # the CLI: exit 1, everything still written
    env = dict(os.environ, PYTHONPATH=str(REPO))
    cli = subprocess.run([sys.executable, "-m", "gpusim", "study", str(spec), "--out", str(out), "--workers", "1",
                          "--json"], capture_output=True, text=True, cwd=REPO, env=env, timeout=120)
    assert cli.returncode == 1, cli.stderr
    assert '"failed": 1' in cli.stdout


def test_cli_bad_axis_exits_nonzero_with_one_line(tmp_path):
    spec = _study(tmp_path, "sm.register_file.banks: [two]")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    cli = subprocess.run([sys.executable, "-m", "gpusim", "study", str(spec), "--out", str(tmp_path / "out")],
                         capture_output=True, text=True, cwd=REPO, env=env, timeout=120)
    assert cli.returncode != 0
    lines = [ln for ln in cli.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "axis 'sm.register_file.banks'" in lines[0]
    assert not (tmp_path / "out").exists()


def test_shipped_studies_validate():
    files = sorted((REPO / "configs" / "studies").glob("*.yaml"))
    assert len(files) >= 4
    for f in files:
        study = load_study(f)
        assert study.points and study.spec.name == f.stem


def test_per_card_axis_values_and_baseline(tmp_path):
    p = tmp_path / "dual.yaml"
    p.write_text("""\
name: dual
base: [k40, gtx970]
workloads: [sgemm_maxas_64]
sizes: [64]
axes:
  sm.scheduler.dual_issue: {k40: [none, kepler], gtx970: [none, control_codes]}
  sm.scheduler.policy: {gtx970: [gto, lrr]}
baseline: {sm.scheduler.dual_issue: none}
""")
    study = load_study(p)
    coords = [(pt.card, pt.coords["sm.scheduler.dual_issue"], pt.coords["sm.scheduler.policy"]) for pt in study.points]
    # k40 is not on the policy axis: it keeps its own value (gto) and has 2 points; gtx970 has 2 x 2
    assert coords == [("k40", "none", "gto"), ("k40", "kepler", "gto"), ("gtx970", "none", "gto"),
                      ("gtx970", "none", "lrr"), ("gtx970", "control_codes", "gto"),
                      ("gtx970", "control_codes", "lrr")]
    assert study.points[0].overrides == {"sm.scheduler.dual_issue": "none"}
    outcome = run_study(study, out_dir=tmp_path / "out", workers=2, progress=False)
    df = outcome.table
    assert outcome.ok and list(df["cycles_rel"][[0, 2, 3]]) == [1.0, 1.0, 1.0]
    assert df["cycles_rel"][1] == df["cycles"][1] / df["cycles"][0]
    assert df["cycles_rel"][5] == df["cycles"][5] / df["cycles"][3]
    # a value for a card that is not in 'base' is an error naming the axis
    p.write_text(p.read_text().replace("{gtx970: [gto, lrr]}", "{h100: [gto, lrr]}"))
    with pytest.raises(SpecError, match="axis 'sm.scheduler.policy'.*h100"):
        load_study(p)
