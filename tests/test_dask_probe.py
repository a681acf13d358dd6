"""`gpusim study --dask ADDRESS` where ADDRESS accepts connections but is not a Dask scheduler (or
answers with something else): one line, nonzero exit, no traceback, within the timeout."""

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
STUDY = """\
name: tiny
description: one point
base: h100
workloads: [sgemm_maxas_64]
sizes: [64]
axes:
  sm.register_file.banks: [2]
"""


@pytest.fixture
def port(request):
    """A local port that accepts connections; it stays silent, or answers HTTP ('http' param)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    answer = getattr(request, "param", "silent") == "http"
    conns = []

    def serve():
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            conns.append(conn)
            if answer:
                try:
                    conn.recv(4096)
                    conn.sendall(b"HTTP/1.0 400 Bad Request\r\n\r\nnot dask")
                except OSError:
                    pass

    threading.Thread(target=serve, daemon=True).start()
    yield srv.getsockname()[1]
    srv.close()
    for c in conns:
        c.close()


@pytest.mark.parametrize("port", ["silent", "http"], indirect=True)
def test_non_dask_port_is_one_line(tmp_path, port):
    (tmp_path / "tiny.yaml").write_text(STUDY)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "gpusim", "study", str(tmp_path / "tiny.yaml"), "--out",
                          str(tmp_path / "out"), "--dask", f"tcp://127.0.0.1:{port}", "--dask-timeout", "2"],
                         capture_output=True, text=True, env=env, timeout=60)
    assert time.perf_counter() - t0 < 30
    assert out.returncode == 2, out.stderr
    assert out.stderr.startswith(f"gpusim: error: cannot reach the Dask scheduler at 'tcp://127.0.0.1:{port}'")
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr, out.stderr
    assert not (tmp_path / "out" / "cache").exists()


def test_probe_accepts_a_real_scheduler():
    distributed = pytest.importorskip("distributed")
    from gpusim.study.runner import probe_scheduler

    with distributed.LocalCluster(n_workers=1, processes=False, dashboard_address=None) as cluster:
        probe_scheduler(cluster.scheduler_address, 5)
