"""`gpusim run ... --ncu FILE`: Nsight Compute's counters of the same launch beside the simulated ones,
in the terminal, the result JSON (`measured`) and the HTML report; bad CSVs are one-line errors."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from gpusim import REPO_ROOT
from gpusim.measure import compare as M
from gpusim.measure.ncu import parse_csv

CSV = REPO_ROOT / "validation" / "h100" / "small" / "ncu" / "coalescedMultiply.csv"


def test_base_name_and_pick_launch():
    assert M.base_name("_Z17coalescedMultiplyPfS_i") == "coalescedMultiply"
    assert M.base_name("_ZN2ns6kernelEPf") == "kernel"
    assert M.base_name("coalescedMultiply(float *, float *, int)") == "coalescedMultiply"
    assert M.base_name("void ns::k<float>(float *, int)") == "k"
    kernels = parse_csv(CSV.read_text())
    picked = M.pick_launch(kernels, "coalescedMultiply", (4, 4, 1), (32, 32, 1), str(CSV))
    assert picked["info"]["Grid Size"] == "(4, 4, 1)" and picked["info"]["ID"] == "1"
    with pytest.raises(M.NcuCsvError, match="no launch of kernel coalescedMultiply with grid"):
        M.pick_launch(kernels, "coalescedMultiply", (16, 16, 1), (32, 32, 1), str(CSV))
    with pytest.raises(M.NcuCsvError, match="no launch of kernel sgemm_maxas_64;"):
        M.pick_launch(kernels, "sgemm_maxas_64", (1, 1, 1), (64, 1, 1), str(CSV))


def test_run_ncu_merges_committed_csv(tmp_path, monkeypatch, capsys):
    """n=64 (grid 2x2): the CSV's first launch. The JSON's `measured` block holds that launch's
    counters; the terminal and the HTML report show them beside the simulated ones."""
    from gpusim import cli
    from gpusim.viz.load import load_result, load_with_measured

    out = tmp_path / "r.json"
    monkeypatch.setattr("sys.argv", ["gpusim", "run", "coalescedMultiply", "--gpu", "h100", "--size", "64",
                                     "--ncu", str(CSV), "--json", str(out)])
    cli.main()
    printed = capsys.readouterr().out
    assert "measured (Nsight Compute" in printed and "stall distance" in printed
    data = json.loads(out.read_text())
    m = data["measured"]
    row = parse_csv(CSV.read_text())[0]
    assert m["id"] == "0" and m["grid"] == "(2, 2, 1)" and m["source"] == str(CSV)
    ncu_cycles = row["metrics"]["gpc__cycles_elapsed.max"]["value"]
    assert m["metrics"]["gpc__cycles_elapsed.max"]["value"] == ncu_cycles
    assert math.isclose(sum(m["stall_fractions"].values()), 1.0)
    result, measured = load_with_measured(out)
    assert measured == m and load_result(out).cycles == data["cycles"]  # the result still validates
    c = M.compare(data, m)
    cyc = next(x for x in c["counters"] if x["name"] == "cycles")
    assert cyc["measured"] == ncu_cycles and cyc["simulated"] == data["cycles"]
    assert math.isclose(cyc["error_pct"], 100 * (data["cycles"] - ncu_cycles) / ncu_cycles)
    assert f"{ncu_cycles:,.0f}" in printed

    monkeypatch.setattr("sys.argv", ["gpusim", "viz", str(out), "-o", str(tmp_path / "viz")])
    cli.main()
    html = (tmp_path / "viz" / "report.html").read_text()
    assert "Measured (Nsight Compute) beside simulated" in html and "vs Nsight Compute" in html
    assert f'<td class="num">{ncu_cycles:,.0f}</td>' in html and "long_scoreboard" in html


def gpusim(*args):
    return subprocess.run([sys.executable, "-m", "gpusim", *args], capture_output=True, text=True, cwd=REPO_ROOT)


@pytest.mark.parametrize("kind", ["missing", "garbage", "no_row"])
def test_bad_ncu_csv_is_one_line(tmp_path, kind):
    if kind == "missing":
        path, size, expect = tmp_path / "nope.csv", "64", "no such Nsight Compute CSV file"
    elif kind == "garbage":
        path, size, expect = tmp_path / "garbage.csv", "64", "no profiled kernel in it"
        path.write_text('"ID","Kernel Name"\n"oops\nnot,a,csv\n')
    else:
        path, size, expect = CSV, "512", "no launch of kernel coalescedMultiply with grid (16, 16, 1)"
    out = gpusim("run", "coalescedMultiply", "--gpu", "h100", "--size", size, "--ncu", str(path))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.startswith(f"gpusim: error: {path}: ") and out.stderr.count("\n") == 1
    assert expect in out.stderr
