"""An interrupt after the command has ended (Ctrl-C while the process exits, or a second one while the first is being
reported) ends ``precomet`` with 130 and a line, never by SIGINT (exit -2)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

LATE = textwrap.dedent(
    """
    import os, signal, sys
    import precomet.__main__ as entry
    import precomet.cli as cli

    cli.main = lambda: {status}
    real_exit = sys.exit

    def exit_interrupted(status):  # the interrupt lands while the process ends
        os.kill(os.getpid(), signal.{signal})
        real_exit(status)

    sys.exit = exit_interrupted
    entry.run()
    """
)

TWICE = textwrap.dedent(
    """
    import os, signal, sys
    import precomet.__main__ as entry
    import precomet.cli as cli

    def interrupted():
        raise KeyboardInterrupt

    class Stderr:  # a second Ctrl-C while the first is being reported
        def __init__(self, stream):
            self.stream, self.sent = stream, False

        def write(self, text):
            if not self.sent:
                self.sent = True
                os.kill(os.getpid(), signal.SIGINT)
            return self.stream.write(text)

        def flush(self):
            self.stream.flush()

    cli.main = interrupted
    sys.stderr = Stderr(sys.stderr)
    entry.run()
    """
)


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("status", [0, 2])
@pytest.mark.parametrize("signal", ["SIGINT", "SIGTERM"])
def test_an_interrupt_while_the_process_ends_exits_130_and_says_the_command_had_ended(status, signal):
    done = _run(LATE.format(status=status, signal=signal))
    assert done.returncode == 130, done
    assert f"interrupted after the command ended (status {status})" in done.stderr


def test_a_second_interrupt_while_the_first_is_reported_exits_130():
    done = _run(TWICE)
    assert done.returncode == 130, done
    assert "interrupted" in done.stderr and "Traceback" not in done.stderr


TEARDOWN = textwrap.dedent(
    """
    import atexit, os, signal, sys
    import precomet.__main__ as entry
    import precomet.cli as cli

    def probe():  # registered before run(): runs after precomet's exit functions, where the teardown begins
        ignored = all(signal.getsignal(number) == signal.SIG_IGN for number in (signal.SIGINT, signal.SIGTERM))
        os.kill(os.getpid(), signal.SIGINT)  # a Ctrl-C during the interpreter's teardown
        os.write(2, f"teardown: interrupts ignored {{ignored}}\\n".encode())

    atexit.register(probe)
    cli.main = lambda: {status}
    entry.run()
    """
)


@pytest.mark.parametrize("status", [0, 130])
def test_an_interrupt_during_the_interpreters_teardown_is_ignored_and_the_status_stands(status):
    """Issue 61: after the exit functions CPython resets Python's signal handlers and tears down its modules (seconds
    with torch loaded); a second Ctrl-C then killed ``predict --resume-dir`` by SIGINT (exit -2) after the first had
    been reported. The interrupts are ignored from there on, and the process ends with its status."""
    done = _run(TEARDOWN.format(status=status))
    assert done.returncode == status, done
    assert "teardown: interrupts ignored True" in done.stderr and "Traceback" not in done.stderr
