"""The CLI's help renders for the program and for every subcommand (argparse %-formats help strings)."""

import pytest

from precomet.cli import COMMANDS, main


@pytest.mark.parametrize("argv", [["--help"], *[[name, "--help"] for name in COMMANDS]])
def test_help_renders(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 0
    assert "usage: precomet" in capsys.readouterr().out


def test_an_unknown_config_key_names_the_valid_keys_of_its_section(capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "--train", "t.jsonl", "-o", str(tmp_path / "o"), "--trainer.epochs", "3"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "trainer.epochs is not a configuration key" in err and "trainer.max_epochs" in err
    assert "model.encoder" not in err and not (tmp_path / "o").exists()


def test_other_unrecognized_arguments_keep_argparses_message(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["info", "--data", "x.jsonl", "--bogus"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip().endswith("unrecognized arguments: --bogus")


def test_a_reader_that_leaves_the_pipe_ends_the_command_quietly(tmp_path):
    """`precomet info ... | head -1`: the closed pipe is not an error to report (exit 141, as for SIGPIPE)."""
    import os
    import subprocess
    import sys

    (tmp_path / "s.txt").write_text("one\ntwo\n", encoding="utf-8")
    read, write = os.pipe()
    os.close(read)  # the reader has gone before the first line is printed
    try:
        done = subprocess.run(
            [sys.executable, "-m", "precomet", "info", "--data", str(tmp_path / "s.txt")],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
        )
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (141, "")


def test_a_closed_standard_output_is_refused_not_written_to_stderr(tmp_path):
    """`precomet convert ... -o - >&-` wrote the JSONL to standard error and exited 0."""
    import subprocess
    import sys

    (tmp_path / "s.txt").write_text("one\ntwo\n", encoding="utf-8")
    for argv in (["convert", "--data", "s.txt", "-o", "-"], ["info", "--data", "s.txt"]):
        done = subprocess.run(
            [sys.executable, "-m", "precomet", *argv],
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
            preexec_fn=lambda: __import__("os").close(1),
        )
        assert done.returncode == 2 and "standard output is closed" in done.stderr
        assert "one" not in done.stderr
