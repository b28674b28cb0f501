"""The ``precomet`` command line: one entry point, one module per subcommand in
:mod:`precomet.commands`. Each module defines ``HELP``, ``add_arguments(parser)`` and ``run(args) -> int``
and stays a thin wrapper over library functions. Bad input exits 2 with a one-line message."""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import shlex
import sys
import traceback
import warnings
from collections.abc import Collection, Iterator
from contextlib import contextmanager, nullcontext, redirect_stdout, suppress

from precomet import __version__, signals
from precomet.encoders.disk import CacheUse, counting_cache_use, no_disk_cache
from precomet.environment import check_variables, unknown_variables
from precomet.errors import Interrupted, PrecometError
from precomet.outputs.atomic import command_outputs
from precomet.outputs.paths import STDOUT, check_not_inputs, is_stdout
from precomet.progress import progress_setting, third_party_bars
from precomet.quiet import secondary_process

COMMANDS = {
    "convert": "precomet.commands.convert",
    "info": "precomet.commands.info",
    "demo": "precomet.commands.demo",
    "select": "precomet.commands.select",
    "utilities": "precomet.commands.utilities",
    "build-targets": "precomet.commands.build_targets",
    "train": "precomet.commands.train",
    "predict": "precomet.commands.predict",
    "export": "precomet.commands.export",
    "benchmark": "precomet.commands.benchmark",
    "rank": "precomet.commands.rank",
    "diffuse": "precomet.commands.diffuse",
    "elo": "precomet.commands.elo",
    "waves": "precomet.commands.waves",
}


OPTIONS = {
    "accelerator": "--accelerator ",
    "allow_gap": "--allow-gap",
    "balance": "--balance domain",
    "batch": "--batch ",
    "budget": "--budget ",
    "campaign": "--campaign ",
    "cost_per": "--cost-per ",
    "complete": "--keep-incomplete",
    "confidence": "--confidence ",
    "device": "--device ",
    "dev": "--dev ",
    "dev_fraction": "--data.dev_fraction ",
    "devices": "--devices ",
    "exclude": "--exclude ",
    "external": "--utility-file NAME=FILE",
    "human": "--human ",
    "doc_level": "--level doc",
    "methods": "--methods ",
    "metric": "--metric ",
    "null_orderings": "--null-orderings ",
    "num_nodes": "--num-nodes ",
    "options": "--exclude-missing",
    "outputs_per_item": "--outputs-per-item ",
    "proportion": "--proportion ",
    "props": "--props ",
    "quotas": "--quotas",
    "resume_dir": "--resume-dir ",
    "seeds": "--seeds ",
    "strategy": "--strategy ",
    "table": "--table ",
    "target": "--target ",
    "target_kind": "--target-pairs ",
    "zone": "--zone ",
    "text": "--text",
    "time_limit": "--time-limit ",
}
"""How the CLI writes a parameter a library error names (:attr:`PrecometError.params`): the option that sets it."""

ENCODING = {"select", "utilities", "build-targets", "train", "predict", "benchmark", "diffuse", "demo", "waves"}
"""Commands that may encode texts: they take ``--no-cache`` and end by saying what the encoder cache did."""
NO_CACHE_HELP = (
    "neither read nor keep encoder vectors in the cache every command shares ($PRECOMET_CACHE, default"
    " ~/.cache/precomet)"
)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand. With ``only`` (a command name) only that command's module is imported and
    the others get empty parsers: ``precomet benchmark`` need not import what ``precomet train`` needs."""
    parser = argparse.ArgumentParser(prog="precomet", description="Select the test items worth human evaluation.")
    parser.add_argument("--version", action="version", version=f"precomet {__version__}")
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="log details of the work, and print the traceback of an error"
    )
    parser.add_argument(
        "--no-progress",
        dest="progress",
        action="store_const",
        const=False,
        help="no progress bars (default: shown when stderr is a terminal, unless PRECOMET_PROGRESS=0)",
    )
    parser.add_argument("--no-cache", action="store_true", help=NO_CACHE_HELP)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module_name in COMMANDS.items():
        if only is not None and name != only:
            sub.add_parser(name)
            continue
        module = importlib.import_module(module_name)
        # argparse %-formats action help strings (not descriptions): escape a literal "%" like "5-95%"
        command = sub.add_parser(name, help=module.HELP.replace("%", "%%"), description=module.HELP)
        module.add_arguments(command)
        if name in ENCODING:  # also after the command's name, where users type it
            command.add_argument("--no-cache", action="store_true", default=argparse.SUPPRESS, help=NO_CACHE_HELP)
        command.set_defaults(_run=module.run)
    return parser


RENAMED = {
    ("select", "--scores"): "--utility-file",
    ("benchmark", "--scores"): "--utility-file",
    ("waves", "--scores"): "--utility-file",
    ("benchmark", "--target"): "--score",
}
"""Options renamed in 0.18.0 so that a name means one thing (docs/names.md): ``(command, old) -> new``. The old
spellings worked, with a warning, until 0.19.0; since then they are refused with the new name."""


def retired_options(argv: list[str], current: Collection[str] = ()) -> list[str]:
    """One message per old spelling of a :data:`RENAMED` option in ``argv`` (for its command, before ``--``), written
    in full or abbreviated as argparse lets options be (``--scor`` for ``--scores``): argparse, which no longer knows
    the old option, would report another problem or read it as a current option it abbreviates too. ``current``:
    the command's option strings; one of them written in full is never refused, and those an abbreviation could
    also mean are named."""
    command, notes = _command_in(argv), []
    retired = {old: new for (name, old), new in RENAMED.items() if name == command}
    for token in argv:
        if token == "--":  # after "--", every token is an operand
            break
        option = token.partition("=")[0]
        if not option.startswith("--") or option in current:
            continue
        for old, new in retired.items():
            if option == old:
                note = f"{option} was renamed {new} in precomet 0.18.0 (docs/names.md)"
            elif len(option) >= 4 and old.startswith(option):  # "--sc": an abbreviation of the old option
                also = sorted(o for o in current if o.startswith(option))
                note = f"{option} (short for {old}, retired) was renamed {new} in precomet 0.18.0 (docs/names.md)"
                note += f"; for {', '.join(also)} write the option in full" if also else f"; use {new}"
            else:
                continue
            if note not in notes:
                notes.append(note)
    return notes


def _options_of(parser: argparse.ArgumentParser, command: str | None) -> set[str]:
    """The option strings of ``command``'s parser (none without a command)."""
    for action in parser._actions:  # argparse keeps its subparsers there and nowhere public
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            return set(action.choices[command]._option_string_actions)
    return set()


def _command_in(argv: list[str]) -> str | None:
    """The subcommand ``argv`` names (the global options take no value: the first other word), if any."""
    word = next((arg for arg in argv if not arg.startswith("-")), None)
    return word if word in COMMANDS else None


@contextmanager
def _command_settings(*, verbose: bool, progress: bool | None, cache: bool = True) -> Iterator[None]:
    """Logging to stderr, warning filters, the progress-bar and disk-cache settings for one command, all undone on
    exit, so that ``main`` called in-process (tests, notebooks) leaves the caller's logging and warnings as they
    were."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    try:
        with warnings.catch_warnings(), progress_setting(progress), third_party_bars(), no_disk_cache(not cache):
            if not verbose:  # third-party deprecation notices are for developers, not for users of the CLI
                warnings.filterwarnings("ignore", category=DeprecationWarning)
                warnings.filterwarnings("ignore", category=FutureWarning)
            yield
    finally:
        for handler in [h for h in root.handlers if h not in handlers]:
            root.removeHandler(handler)
            handler.close()
        root.setLevel(level)


def main(argv: list[str] | None = None) -> int:
    """Run one subcommand. Bad input (:class:`PrecometError`, an unreadable or unwritable path, an output that would
    overwrite an input) exits 2 with one line; Ctrl-C or SIGTERM, from start-up on, exits 130 saying whether any
    output was written; the traceback only with ``-v``."""
    status = None
    try:
        with signals.interruptible(), _printable_names():
            try:
                status = _main(sys.argv[1:] if argv is None else list(argv))
            except KeyboardInterrupt:  # during start-up (imports, parsing): nothing was written yet
                print("precomet: interrupted; no output was written", file=sys.stderr)
                status = 130
            except Exception:  # an interrupt that an import wrapped in another error (``__set_name__``: RuntimeError)
                if not signals.interrupted():
                    raise
                print("precomet: interrupted; no output was written", file=sys.stderr)
                status = 130
    except KeyboardInterrupt:  # while the handlers were being installed, or restored after the command
        done = "" if status is None else f" after the command ended (status {status}; its outputs are as it left them)"
        print(f"precomet: interrupted{done or '; no output was written'}", file=sys.stderr)
        status = 130
    if status == 130:  # handled: the process must end with 130, not die by SIGINT at exit
        signals.forget_unhandled_interrupt()
    return status


@contextmanager
def _printable_names() -> Iterator[None]:
    """Messages name the user's files; a file name of bytes that are not UTF-8 (held as lone surrogates) is printed
    with those bytes escaped (``\\xff.jsonl``) instead of failing the command after its work."""
    previous = []
    for stream in (sys.stdout, sys.stderr):
        errors = getattr(stream, "errors", None)
        if errors in ("strict", None) and hasattr(stream, "reconfigure"):
            try:
                stream.reconfigure(errors="backslashreplace")
            except (ValueError, OSError):  # a stream that cannot change now
                continue
            previous.append((stream, errors or "strict"))
    try:
        yield
    finally:
        for stream, errors in previous:
            with suppress(ValueError, OSError):
                stream.reconfigure(errors=errors)


def _main(argv: list[str]) -> int:
    command = _command_in(argv)
    parser = build_parser(only=command)
    retired = retired_options(argv, _options_of(parser, command))
    if retired:
        parser.error("; ".join(retired))
    args, unrecognized = parser.parse_known_args(argv)
    module = importlib.import_module(COMMANDS[args.command])
    if unrecognized:
        explain = getattr(module, "explain_unrecognized", None)
        hint = explain(unrecognized) if explain else None
        parser.error(f"unrecognized arguments: {' '.join(unrecognized)}" + (f"; {hint}" if hint else ""))
    prefix = f"precomet {args.command}"
    stdout = sys.stdout
    committed: list = []
    cache_use = None
    try:
        if sys.stdout is None:  # started with `>&-`: every print would vanish, `-o -` would go to stderr
            raise PrecometError(
                "standard output is closed; give it somewhere to go (> FILE, or > /dev/null to discard it)"
            )
        if not secondary_process():  # once per run, not per process of a launched run
            for line in unknown_variables(os.environ):
                print(f"{prefix}: warning: {line}", file=sys.stderr)
        check_variables(os.environ)  # a bad PRECOMET_* value is refused by name before any work
        if _working_folder_gone():
            raise PrecometError(_GONE)
        inputs, outputs = module.paths(args)
        to_stdout = any(o is not None and is_stdout(o) for o in outputs)
        with (
            _command_settings(verbose=args.verbose, progress=args.progress, cache=not args.no_cache),
            counting_cache_use() as cache_use,
            command_outputs(stdout) as committed,
            redirect_stdout(sys.stderr) if to_stdout else nullcontext(),  # messages must not mix with the output
        ):
            check_not_inputs(outputs, inputs)
            status = int(args._run(args) or 0)
        if cache_use.looked_up and not secondary_process():  # one line per run, not per process of a launched run
            print(f"{prefix}: {cache_use.summary()}", file=sys.stderr)
        if signals.interrupted():  # an interrupt swallowed somewhere (a finaliser) must not end in success
            raise KeyboardInterrupt
        return status
    except (Exception, KeyboardInterrupt) as err:  # noqa: BLE001 -- classified below; SystemExit passes
        failure = err
    if signals.interrupted() and not isinstance(failure, KeyboardInterrupt):  # a library wrapped the interrupt
        failure = KeyboardInterrupt()
    if isinstance(failure, BrokenPipeError) and failure.filename is None:  # `precomet ... | head`: the reader left
        with suppress(OSError):  # nothing more to say to it, and nothing to flush at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # as a shell reports a command ended by SIGPIPE
    if isinstance(failure, PrecometError):  # the library names parameters; the user typed options
        message, status = f"error: {failure.spelled(OPTIONS)}", 2
    elif isinstance(failure, OSError) and failure.filename is None and _working_folder_gone():
        message, status = f"error: {_GONE} while precomet ran", 2
    elif isinstance(failure, OSError):  # a file that cannot be read or written: bad input, not a bug
        where = f"{failure.filename}: " if failure.filename else ""
        message, status = f"error: {where}{failure.strerror or failure}", 2
    elif isinstance(failure, KeyboardInterrupt):
        kept = [
            str(p) for p in committed if str(p) == STDOUT or os.path.lexists(p)
        ]  # not files of a set that was then rolled back
        message = f"interrupted after writing {', '.join(kept)}" if kept else "interrupted; no output was written"
        message += _resume_note(failure, cache_use, argv)
        status = 130
    elif isinstance(failure, MemoryError):  # a request larger than the machine: bad input, say which resource
        message, status = "error: not enough memory for this input and these options (MemoryError)", 2
    elif isinstance(failure, RecursionError):  # input nested deeper than any reader handles: bad input
        message, status = f"error: input nested too deeply to read ({failure})", 2
    else:  # a bug: one line for the user, the traceback with -v
        message, status = f"internal error: {type(failure).__name__}: {failure} (run with -v for the traceback)", 1
    if args.verbose:
        traceback.print_exception(failure)
    print(f"{prefix}: {' '.join(message.splitlines())}", file=sys.stderr)  # one line, whatever a library said
    return status


_GONE = "the working folder was removed (paths relative to it mean nothing now); cd into a folder that exists"


def _working_folder_gone() -> bool:
    try:
        os.getcwd()
    except FileNotFoundError:
        return True
    return False


def _resume_note(interrupt: KeyboardInterrupt, cache_use: CacheUse | None, argv: list[str]) -> str:
    """What an interrupted command kept for the next run (predicted chunks, encoder vectors) and the exact command
    that resumes from it; empty when it kept nothing."""
    kept = [interrupt.kept] if isinstance(interrupt, Interrupted) else []
    if cache_use is not None and cache_use.saved:
        kept.append(f"the vectors of {cache_use.saved:,} text(s) encoded so far are kept in the encoder cache")
    if not kept:
        return ""
    return f"; {'; '.join(kept)}; to resume, run the same command: {shlex.join(['precomet', *argv])}"


if __name__ == "__main__":
    sys.exit(main())
