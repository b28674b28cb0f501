"""`pip install .` works without make or our venv recipe: the wheel builds without deprecation warnings,
declares the Apache-2.0 licence with its file, and installs a `precomet` command that runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent


@pytest.mark.slow
def test_pip_install_puts_a_working_precomet_on_path(tmp_path):
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", str(REPO), "-w", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stderr
    assert "Deprecat" not in build.stdout + build.stderr
    wheel = next(tmp_path.glob("precomet-*.whl"))
    target = tmp_path / "site"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(target), str(wheel)],
        capture_output=True,
        text=True,
    )
    assert install.returncode == 0, install.stderr
    metadata = next(target.glob("precomet-*.dist-info"))
    assert "License-Expression: Apache-2.0" in (metadata / "METADATA").read_text()
    assert any(p.name == "LICENSE" for p in metadata.rglob("LICENSE"))
    script = target / "bin" / "precomet"
    assert script.is_file()
    env = {**os.environ, "PYTHONPATH": str(target)}
    done = subprocess.run([sys.executable, str(script), "--version"], capture_output=True, text=True, env=env)
    assert done.returncode == 0 and done.stdout.startswith("precomet "), done.stderr
