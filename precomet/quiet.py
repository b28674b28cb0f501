"""Scoped silencing of third-party chatter (transformers load reports and weight-loading bars, Lightning's
hardware banner, deprecation warnings), used around model loading and training, the previous settings restored on
exit (run with ``precomet -v`` to keep everything); and :func:`secondary_process`, which tells a command that
another process of its run does the reporting."""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

_LOGGERS = (
    "pytorch_lightning",
    "lightning",
    "lightning.pytorch",
    "lightning_fabric",
    "transformers",
    "sentence_transformers",
)


@contextmanager
def quiet_third_party() -> Iterator[None]:
    """Raise third-party loggers to WARNING/ERROR and turn off transformers' progress bars, unless precomet's
    own logger is at INFO (``precomet -v``)."""
    if logging.getLogger("precomet").isEnabledFor(logging.INFO):
        yield
        return
    from transformers.utils import logging as hf_logging

    levels = {name: logging.getLogger(name).level for name in _LOGGERS}
    hf_verbosity = hf_logging.get_verbosity()
    bars = hf_logging.is_progress_bar_enabled()
    for name in _LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.simplefilter("ignore", FutureWarning)
            yield
    finally:
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)
        hf_logging.set_verbosity(hf_verbosity)
        if bars:
            hf_logging.enable_progress_bar()


def secondary_process() -> bool:
    """Whether this process is one of the others of a launched multi-process run (torch's ``RANK``, SLURM's
    ``SLURM_PROCID``, or Lightning's ``NODE_RANK``/``LOCAL_RANK`` for the processes it starts itself is not 0):
    their messages would repeat the main process's, so commands leave the reporting to it."""
    for name in ("RANK", "SLURM_PROCID", "NODE_RANK", "LOCAL_RANK"):
        value = os.environ.get(name, "").strip()
        if value.isdigit() and int(value) > 0:
            return True
    return False
