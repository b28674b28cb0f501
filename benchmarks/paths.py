"""Where the benchmark scripts find the repository, the real data and their outputs (one definition for all).

``PRECOMET_RAW_DATA`` overrides the real-data folder (default: ``../shared/data/raw`` beside the repository)."""

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RAW = Path(os.environ.get("PRECOMET_RAW_DATA", REPO.parent / "shared" / "data" / "raw"))
RESULTS = REPO / "benchmarks" / "results"
SCRATCH = REPO / "benchmarks" / "out"
