"""One spelling per option (issue 21): every subcommand's --help describes the command and every option, the
main output is -o/--output everywhere, figures are --plot, a confidence level is --confidence, and the paper
references a user reads are written out. The old spellings were removed in 0.6.0."""

from __future__ import annotations

import argparse

import pytest

from precomet.cli import COMMANDS, build_parser

OLD = {"--out", "--json", "--figure"}


def _parsers() -> list[tuple[str, argparse.ArgumentParser]]:
    root = build_parser()
    found = []
    for action in root._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, parser in action.choices.items():
                found.append((name, parser))
                for inner in parser._actions:
                    if isinstance(inner, argparse._SubParsersAction):
                        found += [(f"{name} {sub}", p) for sub, p in inner.choices.items()]
    return found


PARSERS = _parsers()


def test_every_command_is_walked():
    assert {name.split()[0] for name, _ in PARSERS} == set(COMMANDS)


@pytest.mark.parametrize("name,parser", PARSERS, ids=[name for name, _ in PARSERS])
def test_help_describes_the_command_and_every_option(name, parser):
    assert parser.description, f"{name} has no description"
    undocumented = [
        action.option_strings[-1]
        for action in parser._actions
        if action.option_strings and action.help != argparse.SUPPRESS and not (action.help or "").strip()
    ]
    assert not undocumented, f"{name}: options without help: {undocumented}"
    text = parser.format_help()
    assert "seed 002" not in text  # the project's name for a paper: users read the authors and the year
    assert "%%" not in text  # a description is printed as written, help strings are %-formatted


@pytest.mark.parametrize("name,parser", PARSERS, ids=[name for name, _ in PARSERS])
def test_one_spelling_per_option(name, parser):
    shown = {flag for action in parser._actions if action.help != argparse.SUPPRESS for flag in action.option_strings}
    every = {flag for action in parser._actions for flag in action.option_strings}
    assert not every & OLD, f"{name} still parses old spellings {every & OLD}"
    for action in parser._actions:
        if action.dest == "output" and action.help != argparse.SUPPRESS:
            assert action.option_strings == ["-o", "--output"], f"{name}: main output spelled {action.option_strings}"
        if action.dest == "plot" and action.help != argparse.SUPPRESS:
            assert action.option_strings == ["--plot"], f"{name}: figure spelled {action.option_strings}"
    if name == "rank":
        assert "--confidence" in shown and "--level" not in shown


def test_utilities_help_lists_every_registered_method():
    from precomet.utilities import UTILITY_METHODS

    parser = dict(PARSERS)["utilities"]
    text = " ".join(parser.format_help().split())
    assert all(name in text for name in UTILITY_METHODS), [n for n in UTILITY_METHODS if n not in text]
