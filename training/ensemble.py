"""Average several estimators' predictions: each utility file (``precomet predict`` / ``training/heldout.py``
output, read with :func:`precomet.io.utility_files.read_utilities`) is z-scored, then the mean is written as a
utility file whose signature names the members; ids must match in order.

    .venv/bin/python training/ensemble.py OUT.jsonl A.scores.jsonl B.scores.jsonl [...]
"""

from __future__ import annotations

import argparse
import sys

import numpy as np


def main() -> None:
    from precomet.errors import PrecometError
    from precomet.estimator.leakage import SourceFingerprint, fingerprint_in
    from precomet.io.utility_files import read_utilities, write_utilities
    from precomet.signature import signature

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", help="the ensemble's utility file (JSONL)")
    parser.add_argument("files", nargs="+", help="the members' utility files (two or more)")
    args = parser.parse_args()
    out, files = args.out, args.files
    if len(files) < 2:
        parser.error("give two or more utility files to average")
    try:
        parts = [read_utilities(f) for f in files]
        prints = [fingerprint_in(signed, where=f) for f, (_, _, signed) in zip(files, parts)]
    except PrecometError as err:
        sys.exit(str(err))
    ids = parts[0][0]
    for f, (part_ids, values, _) in zip(files, parts):
        if part_ids != ids:
            sys.exit(f"{f}: ids differ from {files[0]}")
        if np.isnan(values).any():
            sys.exit(f"{f}: {int(np.isnan(values).sum())} utility value(s) are null")
    mean = np.mean([(v - v.mean()) / v.std() for _, v, _ in parts], axis=0)
    members = [
        {"file": f, "signature": {k: v for k, v in signed.items() if k != "training_sources"}}
        for f, (_, _, signed) in zip(files, parts)
    ]
    hashes = {signed.get("data_hash") for _, _, signed in parts}
    union = None  # a source seen in training by any member was seen by the ensemble
    known = [p for p in prints if p is not None]
    if len(known) == len(prints):
        union = SourceFingerprint(np.unique(np.concatenate([p.hashes for p in known]))).to_json()
    signed = signature(
        "training/ensemble.py",
        method="ensemble",
        data_hash=hashes.pop() if len(hashes) == 1 else None,
        n_items=len(ids),
        combination="mean of z-scored utilities",
        members=members,
        training_sources=union,
    )
    write_utilities(out, ids, mean, signed)


if __name__ == "__main__":
    main()
