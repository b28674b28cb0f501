"""What importing precomet pulls in, checked in fresh interpreters: the layer rules (a lower layer never imports a
higher one)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent


def loaded_after(code: str) -> set[str]:
    """Names in ``sys.modules`` after running ``code`` in a fresh interpreter on this source tree."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    script = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env, cwd=REPO)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_utilities_do_not_import_pairwise_or_higher_layers():
    modules = loaded_after("import precomet.utilities")
    assert not [m for m in modules if m.startswith(("precomet.pairwise", "precomet.benchmark", "precomet.commands"))]


def test_library_modules_never_import_commands():
    modules = loaded_after(
        "import precomet.benchmark, precomet.crowd, precomet.metaeval, precomet.rank, precomet.select, precomet.oracle,"
        " precomet.io, precomet.utilities, precomet.pairwise.protocol, precomet.pairwise.ratings"
    )
    assert not [m for m in modules if m.startswith(("precomet.commands", "precomet.cli"))]
