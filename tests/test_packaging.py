"""A plain (non-editable) install works away from the checkout: build the wheel, install it into a
fresh venv, and run `gpusim kernels` and `gpusim run` from another directory.

Offline where it can be (no build isolation when setuptools can build wheels here; --no-deps, the
venv sees this interpreter's dependencies). About 15 s."""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _can_build_offline() -> bool:
    if importlib.util.find_spec("wheel") is not None:
        return True
    import setuptools

    return tuple(int(x) for x in setuptools.__version__.split(".")[:2]) >= (70, 1)  # bdist_wheel built in


def _run(cmd, **kw):
    out = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert out.returncode == 0, f"{cmd}: {out.stderr[-2000:]}"
    return out


def test_every_subpackage_is_listed_in_pyproject():
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.relative_to(ROOT).parts) for p in (ROOT / "gpusim").rglob("*")
             if p.is_dir() and p.name != "__pycache__" and (any(p.glob("*.py")) or any(p.glob("*.yaml")))}
    assert found - listed == set()


def test_wheel_install_runs_from_another_directory(tmp_path):
    src = tmp_path / "src"  # build from a copy: the build leaves build/ and *.egg-info behind
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".git", "out", "build", "dist", "*.egg-info", "tests",
                                                             "__pycache__", ".pytest_cache", "bench", "docs"))
    isolation = ["--no-build-isolation", "--no-index"] if _can_build_offline() else []
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *isolation, str(src), "-w", str(tmp_path / "whl")])
    wheel = next((tmp_path / "whl").glob("gpusim-*.whl"))
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)])
    py = venv / "bin" / "python"
    _run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "GPUSIM_DATA", "GPUSIM_GPU_DIR")}
    where = _run([str(py), "-c", "import gpusim; print(gpusim.__file__); print(gpusim.DATA_ROOT)"],
                 cwd=elsewhere, env=env).stdout.split()
    assert where[0].startswith(str(venv)) and where[1].startswith(str(venv))  # the wheel, not the checkout
    kernels = json.loads(_run([str(venv / "bin" / "gpusim"), "kernels", "--json"], cwd=elsewhere, env=env).stdout)
    assert len(kernels) >= 10 and all(all(r["listings"].values()) for r in kernels)
    _run([str(venv / "bin" / "gpusim"), "run", "sgemm_maxas_64", "--gpu", "h100", "--size", "64", "--json",
          "r.json"], cwd=elsewhere, env=env)
    result = json.loads((elsewhere / "r.json").read_text())
    assert result["card"] == "h100" and result["cycles"] > 0
