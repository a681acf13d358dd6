"""Parameter studies: sweep GPU-config fields over workloads, in parallel, with a resumable cache.

    study = load_study("configs/studies/regbank.yaml")   # validates every point up front
    outcome = run_study(study, out_dir="out/studies/regbank", dask=None, workers=None)
    outcome.table          # pandas DataFrame, one row per point
    outcome.failures       # points that failed, with their error

`gpusim study FILE` is the command-line face (docs/studies.md).
"""

from gpusim.study.runner import StudyOutcome, code_fingerprint, default_out_dir, run_study
from gpusim.study.spec import Point, Study, StudySpec, load_study

__all__ = ["Point", "Study", "StudyOutcome", "StudySpec", "code_fingerprint", "default_out_dir", "load_study",
           "run_study"]
