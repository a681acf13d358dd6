"""GPU configurations: pydantic schema (models) and YAML loading with inheritance (loader)."""

from gpusim.config.loader import deep_merge, list_gpus, load_all, load_gpu
from gpusim.config.models import (
    UNIT_CLASSES,
    DramConfig,
    GpuConfig,
    L1Config,
    L2Config,
    MemoryConfig,
    RegisterFileConfig,
    SchedulerConfig,
    SharedMemoryConfig,
    SmConfig,
    UnitConfig,
    apply_overrides,
)

__all__ = [
    "UNIT_CLASSES", "DramConfig", "GpuConfig", "L1Config", "L2Config", "MemoryConfig", "RegisterFileConfig",
    "SchedulerConfig", "SharedMemoryConfig", "SmConfig", "UnitConfig", "apply_overrides", "deep_merge",
    "list_gpus", "load_all", "load_gpu",
]
