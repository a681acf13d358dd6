"""Views of timing results: a Perfetto timeline (`perfetto`), matplotlib plots (`plots`), an
Nsight-Compute-like per-instruction source view (`source`) and a self-contained HTML report
(`report`). `gpusim viz RESULT... -o OUTDIR` writes them all."""

from gpusim.viz.load import load_result
from gpusim.viz.perfetto import to_trace_events, write_trace
from gpusim.viz.report import write_outputs, write_report

__all__ = ["load_result", "to_trace_events", "write_trace", "write_outputs", "write_report"]
