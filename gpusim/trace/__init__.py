"""Dynamic warp traces: the emulator's per-warp instruction streams, their file format, and
export/import of Accel-Sim's SASS trace format."""

from gpusim.trace.format import (  # noqa: F401
    TRACE_FORMAT_VERSION, DynamicTrace, run_traced,
)
