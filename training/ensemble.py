"""Average several estimators' predictions: each ``{"id", "utility"}`` file is z-scored, then the mean is
written (ids must match in order; a first signature line is skipped).

    .venv/bin/python training/ensemble.py OUT.jsonl A.scores.jsonl B.scores.jsonl [...]
"""

from __future__ import annotations

import json
import sys

import numpy as np


def main() -> None:
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    out, *files = sys.argv[1:]
    parts = []
    for f in files:
        with open(f, encoding="utf-8") as handle:
            parts.append([json.loads(line) for line in handle if '"utility"' in line])
    ids = [r["id"] for r in parts[0]]
    for f, part in zip(files, parts):
        if [r["id"] for r in part] != ids:
            sys.exit(f"{f}: ids differ from {files[0]}")
    values = [np.array([r["utility"] for r in part], dtype=float) for part in parts]
    mean = np.mean([(v - v.mean()) / v.std() for v in values], axis=0)
    with open(out, "w", encoding="utf-8") as handle:
        handle.writelines(json.dumps({"id": i, "utility": float(u)}) + "\n" for i, u in zip(ids, mean))


if __name__ == "__main__":
    main()
