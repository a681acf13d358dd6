"""Bad input to the CLI: one line on stderr, nonzero exit, no traceback."""

import subprocess
import sys

import pytest
import yaml


def gpusim(*args):
    return subprocess.run([sys.executable, "-m", "gpusim", *args], capture_output=True, text=True)


def one_line_error(out, code=2):
    assert out.returncode == code, (out.returncode, out.stderr)
    assert out.stderr.startswith("gpusim: error:") and out.stderr.count("\n") == 1
    assert "Traceback" not in out.stderr


def test_run_bad_options():
    one_line_error(gpusim("run", "sgemm_maxas_64", "--gpu", "h100", "--size", "64", "--set", "sm_count"))
    one_line_error(gpusim("run", "sgemm_maxas_64", "--gpu", "h100", "--size", "64", "--mode", "fast"))
    one_line_error(gpusim("run", "sgemm_maxas_64", "--gpu", "h100", "--size", "64", "--timeline-ctas", "x"))
    one_line_error(gpusim("run", "sgemm_maxas_64", "--gpu", "h100", "--size", "64", "--set", "sm.nosuch=1"))


def test_usage_errors_are_one_line():
    """Usage errors (an option without its value, an unknown option) come from click; typer >= 0.20
    vendors its own copy of click, whose exceptions are not click's."""
    r = gpusim("run", "sgemm_maxas_64", "--gpu", "h100", "--size", "64", "--json")
    one_line_error(r)
    assert "--json" in r.stderr and "requires an argument" in r.stderr
    r = gpusim("run", "sgemm_maxas_64", "--nosuch")
    one_line_error(r)
    assert "--nosuch" in r.stderr


def test_measure_without_a_gpu():
    pytest.importorskip("numpy")
    try:
        import cupy  # noqa: F401
        pytest.skip("cupy is installed here; the no-GPU message is for machines without it")
    except ImportError:
        pass
    one_line_error(gpusim("measure", "--out", "/tmp/gpusim-measure-test"))


def test_failed_check_exits_1(tmp_path):
    """`emulate --check` exits 1 when the outputs disagree with the reference (typer's return code
    must reach the shell). The spec is a committed workload's with a wrong reference."""
    from gpusim import TRACES_DIR

    spec = yaml.safe_load((TRACES_DIR / "workloads" / "sgemm_maxas_64.yaml").read_text())
    spec["source"] = str((TRACES_DIR / "workloads" / spec["source"]).resolve())
    spec["reference"] = {k: v + " + 1" for k, v in spec["reference"].items()}
    path = tmp_path / "wrong.yaml"
    path.write_text(yaml.safe_dump(spec))
    out = gpusim("emulate", str(path), "--arch", "sm_90", "--size", "64", "--check")
    assert out.returncode == 1 and "FAILED" in out.stdout
    ok = gpusim("emulate", "sgemm_maxas_64", "--arch", "sm_90", "--size", "64", "--check")
    assert ok.returncode == 0
