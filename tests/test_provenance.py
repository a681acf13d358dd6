"""Every result records what it was computed from; `gpusim viz` lists where two results' configs differ."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def gpusim(*args):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-m", "gpusim", *args], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    return out


def test_set_run_names_its_overrides_and_viz_lists_differences(tmp_path):
    base, what_if = tmp_path / "base.json", tmp_path / "banks8.json"
    gpusim("run", "sgemm_maxas_64", "--gpu", "h100", "--size", "64", "--json", str(base))
    gpusim("run", "sgemm_maxas_64", "--gpu", "h100", "--size", "64", "--set", "sm.register_file.banks=8",
           "--json", str(what_if))
    p0, p1 = (json.loads(p.read_text())["provenance"] for p in (base, what_if))
    assert p0["overrides"] == {} and p1["overrides"] == {"sm.register_file.banks": 8}
    assert p1["config"]["sm"]["register_file"]["banks"] == 8
    assert p0["config"]["sm"]["register_file"]["banks"] != 8
    assert p0["config_hash"] != p1["config_hash"]
    for p in (p0, p1):
        assert p["mode"] == "detailed" and p["code"].startswith("gpusim ")
        assert "nvcc release" in " ".join(p["listing"]["header"]) and p["listing"]["program_fingerprint"]
        assert p["libraries"]["numpy"]
    out = gpusim("viz", str(base), str(what_if), "-o", str(tmp_path / "viz"), "--json")
    diffs = {d["field"]: d["values"] for d in json.loads(out.stdout)["config_differences"]}
    assert diffs["config.sm.register_file.banks"] == [p0["config"]["sm"]["register_file"]["banks"], 8]
    assert "overrides" in diffs and len(diffs) == 2
    assert "Config differences" in (tmp_path / "viz" / "report.html").read_text()


def test_sampled_run_records_the_sampler():
    from gpusim.timing.driver import run_workload

    r = run_workload("sgemm_maxas_64", "h100", 64, mode="sampled")
    assert r.provenance["mode"] == "sampled" and r.provenance["sampler"]["keep_head_iterations"] > 0
