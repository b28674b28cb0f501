"""``python -m precomet`` and the ``precomet`` command. Interrupts are handled from the first line on: one that
arrives while the command line is still being imported ends the run as any other does (one line, exit 130, nothing
written), and one swallowed meanwhile (printed as "Exception ignored" by a finaliser) still stops the command."""

import os
import sys

from precomet.signals import end_on_interrupt, ignore_during_teardown, interruptible


def run() -> None:
    """Import the command line under :func:`~precomet.signals.interruptible`, then run it; exits. An interrupt
    after the command (a second Ctrl-C, or one while the process ends) exits 130, never by SIGINT (-2); one during
    the interpreter's teardown, after every exit function, is ignored (the status stands)."""
    ignore_during_teardown()
    status = None
    try:
        with interruptible():
            from precomet.cli import main

            status = main()
    except KeyboardInterrupt:  # before main() could handle it (nothing had started), or after it returned
        end_on_interrupt(status)
        said = "while starting; no output was written" if status is None else f"after the command ended ({status})"
        sys.stderr.write(f"precomet: interrupted {said}\n")
        sys.stderr.flush()
        os._exit(130)  # not sys.exit: CPython would re-raise the interrupt it noted during the import (exit -2)
    end_on_interrupt(status)
    sys.exit(status)


if __name__ == "__main__":
    run()
