"""Workload specs: which kernel, how it is launched, its arguments and its numpy reference."""

from gpusim.workloads.spec import Workload, load_workload, list_workloads, find_workload  # noqa: F401
