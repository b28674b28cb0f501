"""The CLI's help renders for the program and for every subcommand (argparse %-formats help strings)."""

import pytest

from precomet.cli import COMMANDS, main


@pytest.mark.parametrize("argv", [["--help"], *[[name, "--help"] for name in COMMANDS]])
def test_help_renders(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 0
    assert "usage: precomet" in capsys.readouterr().out
