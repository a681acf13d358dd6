"""The external-check kernels (traces/external/) and their H200 records (validation/h200/external/)
stay consistent: every spec loads, every record is of a spec here, passed its check on the GPU, and has
the one-pass DRAM profile bench/external_check.py compares bytes with."""

import json
import sys
from pathlib import Path

from gpusim.workloads import load_workload

ROOT = Path(__file__).resolve().parents[1]
SPECS = ROOT / "traces" / "external"
RECORDS = ROOT / "validation" / "h200" / "external"


def test_every_spec_loads_and_names_a_kernel_of_its_source():
    specs = sorted(SPECS.glob("*.yaml"))
    assert len(specs) == 10
    for p in specs:
        wl = load_workload(p)
        assert f"__global__ void {wl.kernel}(" in (SPECS / wl.source).read_text(), p.name


def test_every_record_is_of_a_spec_here_and_passed():
    sys.path.insert(0, str(ROOT / "bench"))
    import external_check

    cases = external_check.cases()
    assert len(cases) == 20
    for spec, size, rec_path, dram_path in cases:
        assert Path(spec).exists(), spec
        assert dram_path is not None, rec_path.name
        rec = json.loads(rec_path.read_text())
        assert rec["workload"] == Path(spec).stem and rec["size"] == size
        assert rec["check"]["passed"] and rec["env"]["gpu"]["name"] == "NVIDIA H200"
        assert rec["ncu"]["metrics"]["gpc__cycles_elapsed.max"]["value"]
