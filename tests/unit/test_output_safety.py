"""Issue 20: what is already there survives every command. Devices, FIFOs and standard output are written
through, links keep pointing where they did, names up to the file system's limit work, a commit killed between
its renames is finished by the next run, stale staging folders are cleaned, and an interrupt — even one swallowed
by a finaliser — never ends in success. The interrupt cases run in subprocesses."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from precomet import signals
from precomet.cli import main
from precomet.errors import OutputError
from precomet.outputs.atomic import atomic_write, clean_leftovers, output_set
from tests.bad_inputs import GOOD

REPO = Path(__file__).resolve().parent.parent.parent
TINY = str(REPO / "tests" / "fixtures" / "tiny.csv")


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".precomet-" in p.name)


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_dev_null_is_written_through_not_replaced(tmp_path, capsys):
    before = os.stat("/dev/null")
    assert main(["convert", "--data", TINY, "-o", "/dev/null"]) == 0
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)
    assert not any(".precomet-" in name for name in os.listdir("/dev"))


def test_dash_writes_the_output_to_stdout_and_messages_to_stderr(tmp_path, capfd):
    assert main(["convert", "--data", TINY, "-o", "-"]) == 0
    out, err = capfd.readouterr()
    rows = [json.loads(line) for line in out.splitlines()]
    assert rows and all("id" in row for row in rows)
    assert "wrote" in err and "wrote" not in out


def test_select_to_stdout_writes_no_manifest_anywhere(tmp_path, capfd, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "items.jsonl").write_text(GOOD)
    argv = ["select", "--data", "items.jsonl", "--method", "metric_var", "--metric", "m", "--budget", "2", "-o", "-"]
    assert main(argv) == 0
    out, err = capfd.readouterr()
    assert [json.loads(line)["id"] for line in out.splitlines()] and "selected 2" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["items.jsonl"]


def test_dev_stdout_is_written_through_and_stays_a_link(tmp_path):
    before = os.readlink("/dev/stdout")
    done = subprocess.run(
        [sys.executable, "-m", "precomet", "convert", "--data", TINY, "-o", "/dev/stdout"],
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.decode().splitlines()[0])["id"]
    assert os.path.islink("/dev/stdout") and os.readlink("/dev/stdout") == before


def test_dev_stdin_redirected_from_the_input_is_refused(tmp_path):
    (tmp_path / "items.jsonl").write_text(GOOD)
    with open(tmp_path / "items.jsonl") as stdin:
        done = subprocess.run(
            [sys.executable, "-m", "precomet", "convert", "--data", "items.jsonl", "-o", "/dev/stdin"],
            stdin=stdin,
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
    assert done.returncode == 2 and "is the input" in done.stderr
    assert (tmp_path / "items.jsonl").read_text() == GOOD


def test_dev_stdout_redirected_to_a_file_is_written_through(tmp_path):
    with open(tmp_path / "out.jsonl", "w") as stdout:
        done = subprocess.run(
            [sys.executable, "-m", "precomet", "convert", "--data", TINY, "-o", "/dev/stdout"],
            stdout=stdout,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "out.jsonl").read_text().splitlines()[0])["id"]
    assert _leftovers(tmp_path) == []


def test_a_write_that_fails_names_its_output(tmp_path):
    import errno

    from precomet.errors import OutputError

    target = tmp_path / "a.jsonl"
    with pytest.raises(OutputError, match=r"a\.jsonl: no space left on device"):
        with output_set(target) as out, out.open(target):
            raise OSError(errno.ENOSPC, "No space left on device")
    assert list(tmp_path.iterdir()) == []


def test_fifo_is_written_through(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    assert main(["convert", "--data", TINY, "-o", str(fifo)]) == 0
    reader.join(timeout=30)
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert json.loads(received[0].decode().splitlines()[0])["id"]


def test_a_link_output_replaces_its_target_and_stays_a_link(tmp_path):
    real, link = tmp_path / "real.jsonl", tmp_path / "link.jsonl"
    real.write_text("old\n")
    link.symlink_to(real)
    assert main(["convert", "--data", TINY, "-o", str(link)]) == 0
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert json.loads(real.read_text().splitlines()[0])["id"]
    assert _leftovers(tmp_path) == []


def test_names_up_to_the_file_system_limit_work(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "items.jsonl").write_text(GOOD)
    name = "s" * 245 + ".jsonl"  # 251 bytes; the manifest's stem is shortened to fit
    argv = ["select", "--data", "items.jsonl", "--method", "metric_var", "--metric", "m", "--budget", "2", "-o", name]
    assert main(argv) == 0
    manifest = [p.name for p in tmp_path.iterdir() if p.name.endswith(".manifest.json")]
    assert (tmp_path / name).is_file() and len(manifest) == 1 and len(manifest[0].encode()) == 255
    assert _leftovers(tmp_path) == []
    # rank finds the manifest beside the subset by the same rule
    from precomet.selection import subset_manifest_path

    assert subset_manifest_path(tmp_path / name).name == manifest[0]


_KILL_BETWEEN_RENAMES = """
import os, signal, sys
from pathlib import Path
import precomet.outputs.atomic as atomic

folders = [Path(folder) for folder in sys.argv[1:]]
real = atomic._place
calls = []

def place_then_die(*args, **kwargs):
    result = real(*args, **kwargs)
    calls.append(1)
    if len(calls) == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    return result

atomic._place = place_then_die
targets = [folders[0] / "a.jsonl", folders[-1] / "b.json"]
with atomic.output_set(*targets) as out:
    for target in targets:
        with out.open(target) as handle:
            handle.write("new " + target.stem)
"""


@pytest.mark.parametrize("finisher", ["first", "second"])
@pytest.mark.parametrize("layout", ["one folder", "two folders"])
def test_a_commit_killed_between_its_renames_is_finished_by_the_next_run(tmp_path, layout, finisher):
    """The next run writing into any folder of the killed commit finishes all of it."""
    folders = [tmp_path] if layout == "one folder" else [tmp_path / "x", tmp_path / "y"]
    for folder in folders:
        folder.mkdir(exist_ok=True)
    a, b = folders[0] / "a.jsonl", folders[-1] / "b.json"
    a.write_text("old a")
    b.write_text("old b")
    killed = subprocess.run([sys.executable, "-c", _KILL_BETWEEN_RENAMES, *map(str, folders)], cwd=REPO)
    assert killed.returncode == -signal.SIGKILL
    assert all(_leftovers(folder) for folder in folders)  # the state a kill leaves
    assert a.read_text() == "new a" and b.read_text() == "old b"
    later = folders[0 if finisher == "first" else -1] / "c.txt"
    with output_set(later) as out:  # any later run writing into one of the folders
        with out.open(later) as handle:
            handle.write("c")
    assert a.read_text() == "new a" and b.read_text() == "new b"
    assert all(_leftovers(folder) == [] for folder in folders)


def test_a_commit_killed_before_its_decision_leaves_the_old_outputs(tmp_path):
    """Killed while deciding (the first folder's ``commit`` file not yet written): nothing was placed, so the next
    run removes the staging folders and the old outputs stay."""
    import precomet.outputs.atomic as atomic

    folders = [tmp_path / "x", tmp_path / "y"]
    for folder in folders:
        folder.mkdir()
        (folder / "old.txt").write_text("old")
    dead = _dead_pid()
    roots = [folder / f".precomet-{dead}-0123abcd" for folder in folders]
    for root in roots:
        (root / "out").mkdir(parents=True)
        (root / "out" / "old.txt").write_text("new")
    record = {"roots": [os.path.relpath(root, folders[1]) for root in roots], "outputs": ["old.txt"]}
    (roots[1] / "commit").write_text(json.dumps(record))  # the second folder's only: not decided
    atomic.clean_leftovers(folders[1])
    atomic.clean_leftovers(folders[0])
    assert [(folder / "old.txt").read_text() for folder in folders] == ["old", "old"]
    assert all(_leftovers(folder) == [] for folder in folders)


def _dead_decided_root(folder: Path, outputs: dict[str, str]) -> Path:
    """A decided single-folder commit of a dead process, as a SIGKILL between its renames leaves it."""
    root = folder / f".precomet-{_dead_pid()}-0123abcd"
    (root / "out").mkdir(parents=True)
    (root / "old").mkdir()
    for name, text in outputs.items():
        (root / "out" / name).write_text(text)
    record = {"roots": [root.name], "outputs": list(outputs)}
    (root / "commit").write_text(json.dumps(record))
    return root


def test_a_decision_is_finished_from_wherever_the_tree_was_moved(tmp_path):
    """The decision names its staging folders relative to its own, so a renamed parent folder still finishes."""
    before = tmp_path / "before"
    before.mkdir()
    _dead_decided_root(before, {"a.json": "new a", "b.json": "new b"})
    after = before.rename(tmp_path / "after")
    clean_leftovers(after)
    assert sorted(os.listdir(after)) == ["a.json", "b.json"] and (after / "b.json").read_text() == "new b"


def test_a_decision_naming_something_else_is_left_for_a_person(tmp_path):
    """A forged or damaged decision that names a folder which is not a staging folder of the same run never moves
    or removes anything there."""
    victim = tmp_path / "victim"
    (victim / "out").mkdir(parents=True)
    (victim / "out" / "precious").write_text("keep")
    root = _dead_decided_root(tmp_path, {"x.json": "x"})
    (root / "commit").write_text(json.dumps({"roots": [root.name, "victim"], "outputs": ["x.json"]}))
    clean_leftovers(tmp_path)
    assert (victim / "out" / "precious").read_text() == "keep" and root.exists()
    assert not (tmp_path / "x.json").exists() and not (tmp_path / "precious").exists()


def test_a_half_removed_decided_staging_folder_does_not_block_the_next_run(tmp_path):
    """Killed while removing a finished commit's staging folder (``out/`` and ``old/`` already gone): the next run
    removes the rest instead of failing on it for ever."""
    root = _dead_decided_root(tmp_path, {"a.json": "new a"})
    (tmp_path / "a.json").write_text("new a")  # placed before the kill
    for part in ("out", "old"):
        shutil.rmtree(root / part)
    clean_leftovers(tmp_path)
    assert sorted(os.listdir(tmp_path)) == ["a.json"]


def test_only_the_outputs_asked_for_are_placed(tmp_path):
    """A writer that leaves files beside what it was given (``np.save`` adds ``.npy``) never places them, so a user's
    file of that name survives."""
    (tmp_path / "x.npy").write_text("the user's")
    with output_set(tmp_path / "x", tmp_path / "y.json") as out:
        np.save(out.path(tmp_path / "x"), np.zeros(3))
        with out.open(tmp_path / "y.json") as handle:
            handle.write("{}")
    assert (tmp_path / "x.npy").read_text() == "the user's"
    assert sorted(os.listdir(tmp_path)) == ["x", "x.npy", "y.json"]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make a folder owned by another user")
def test_staging_folders_of_other_users_are_left_alone(tmp_path):
    """A shared temporary folder holds other users' staging folders: never finished or removed by this user."""
    root = _dead_decided_root(tmp_path, {"a.json": "theirs"})
    os.chown(root, 54321, -1)
    clean_leftovers(tmp_path)
    assert root.exists() and not (tmp_path / "a.json").exists()


def test_stale_staging_folders_are_cleaned_and_live_ones_kept(tmp_path):
    dead, live = _dead_pid(), os.getppid()
    stale = tmp_path / f".precomet-{dead}-0123abcd"
    (stale / "out").mkdir(parents=True)
    (stale / "out" / "x.jsonl").write_text("half")
    kept = tmp_path / f".precomet-{live}-0123abcf"
    (kept / "out").mkdir(parents=True)
    (tmp_path / "precomet-1-0123abcd").mkdir()  # not ours: no leading dot
    assert main(["convert", "--data", TINY, "-o", str(tmp_path / "out.jsonl")]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [kept.name, "out.jsonl", "precomet-1-0123abcd"]
    assert (kept / "out").is_dir()


def test_clean_leftovers_leaves_a_damaged_decision_for_a_person(tmp_path):
    root = tmp_path / f".precomet-{_dead_pid()}-0123abcd"
    root.mkdir()
    (root / "commit").write_text("{not json")
    clean_leftovers(tmp_path)
    assert (root / "commit").exists()


def test_signals_during_a_commit_wait_for_its_end(tmp_path):
    with signals.interruptible(), pytest.raises(KeyboardInterrupt):
        with signals.deferred():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)
            reached = True  # the signal was held back
        pytest.fail("the held signal was not delivered when the block ended")
    assert reached


def test_a_swallowed_interrupt_never_ends_in_success(tmp_path, monkeypatch, capsys):
    """An interrupt caught and ignored somewhere (as a finaliser does: "Exception ignored in ...") must still
    stop the command: no output, exit 130."""
    import precomet.commands.convert as convert

    real = convert.load_campaign

    def load_and_swallow(args):
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)
        except KeyboardInterrupt:
            pass
        return real(args)

    monkeypatch.setattr(convert, "load_campaign", load_and_swallow)
    assert main(["convert", "--data", TINY, "-o", str(tmp_path / "out.jsonl")]) == 130
    assert "no output was written" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_an_interrupt_after_the_commit_says_what_was_written(tmp_path, monkeypatch, capsys):
    import precomet.commands.convert as convert

    def print_then_interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(convert, "print", print_then_interrupt, raising=False)
    out = tmp_path / "out.jsonl"
    assert main(["convert", "--data", TINY, "-o", str(out)]) == 130
    assert f"interrupted after writing {out}" in capsys.readouterr().err
    assert out.is_file()


def _interrupt(signum: int, delay: float) -> Any:
    """A case of the interrupt test; those waiting 1.5 s or more are left to ``make test`` (marked slow)."""
    return pytest.param(signum, delay, marks=[pytest.mark.slow] if delay >= 1.5 else [])


@pytest.mark.parametrize(
    "signum, delay",
    [_interrupt(sig, delay) for sig in (signal.SIGTERM, signal.SIGINT) for delay in (0.0, 0.3, 0.8, 1.5, 2.5, 4.0)]
    + [_interrupt(sig, delay) for sig in (signal.SIGHUP, signal.SIGQUIT) for delay in (0.8, 2.5)],
)
def test_an_interrupted_command_leaves_all_or_nothing(tmp_path, delay, signum):
    """Interrupted at any moment — start-up included — ``select`` leaves either nothing or its subset and
    manifest together, never a temporary, never an "Exception ignored" that ends in success."""
    (tmp_path / "items.jsonl").write_text(GOOD)
    argv = ["select", "--data", "items.jsonl", "--method", "metric_var", "--metric", "m", "--budget", "2"]
    child = subprocess.Popen(
        [sys.executable, "-m", "precomet", *argv, "-o", "s.jsonl"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    time.sleep(delay)
    child.send_signal(signum)
    out, err = child.communicate(timeout=120)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert b"Exception ignored" not in err or child.returncode != 0, err
    if child.returncode == 0:
        assert names == ["items.jsonl", "s.jsonl", "s.manifest.json"], (names, err)
    else:
        # interrupted in Python's own start-up, before precomet could install its handlers: no command code ran
        starting = child.returncode == 1 and b"KeyboardInterrupt" in err and b"precomet/cli.py" not in err
        assert child.returncode in (130, -signum) or starting, err
        assert names in (["items.jsonl"], ["items.jsonl", "s.jsonl", "s.manifest.json"]), (names, err)
        if child.returncode == 130 and len(names) == 1:
            assert b"no output was written" in err
    assert (tmp_path / "items.jsonl").read_text() == GOOD


def test_no_progress_turns_off_third_party_bars_for_the_command(monkeypatch):
    import precomet.commands.info as info

    seen = {}
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    monkeypatch.setattr(info, "run", lambda args: seen.update(tqdm=os.environ.get("TQDM_DISABLE")) or 0)
    assert main(["--no-progress", "info", "--data", TINY]) == 0
    assert seen == {"tqdm": "1"} and "TQDM_DISABLE" not in os.environ


def test_files_a_writer_made_owner_only_get_the_usual_permissions(tmp_path):
    previous = os.umask(0o022)
    try:
        with output_set() as out:
            folder = out.directory(tmp_path / "ckpt")
            head = folder / "head.safetensors"
            head.write_bytes(b"w")
            os.chmod(head, 0o600)  # what safetensors and tempfile do
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "ckpt" / "head.safetensors").stat().st_mode) == 0o644


def test_a_full_disk_inside_an_output_folder_names_the_output_not_its_temporary(tmp_path):
    """Issue 34: a write that fails inside a folder output's temporary (a checkpoint's Lightning files) names the
    file the user will see, under the output's own name, never the hidden temporary."""
    target = tmp_path / "est"
    with pytest.raises(OutputError) as caught, output_set(target) as out:
        folder = out.directory(target)
        raise OSError(errno.ENOSPC, "No space left on device", str(folder / "lightning" / "best.ckpt"))
    message = str(caught.value)
    assert f"cannot write {target / 'lightning' / 'best.ckpt'}: " in message and "precomet-" not in message
    assert list(tmp_path.iterdir()) == []


def test_an_output_that_became_a_folder_during_the_run_is_not_replaced(tmp_path):
    """Issue 34: the path was checked before the work; a folder made there meanwhile is kept, with its contents."""
    target = tmp_path / "out.jsonl"
    with pytest.raises(OutputError, match="became a folder while the command ran"), atomic_write(target) as handle:
        handle.write("x")
        target.mkdir()
        (target / "precious").write_text("keep me")
    assert (target / "precious").read_text() == "keep me"
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["out.jsonl", "precious"]


def test_file_names_that_are_not_utf8_are_read_written_and_recorded(tmp_path, monkeypatch, capsys):
    """Issue 34: a name of latin-1 bytes is a legal file name; results record it escaped (valid JSON text)."""
    monkeypatch.chdir(tmp_path)
    data, out = os.fsdecode(b"\xfe.jsonl"), os.fsdecode(b"\xff.jsonl")
    Path(data).write_text(GOOD)
    argv = ["select", "--data", data, "--method", "metric_var", "--metric", "m", "--budget", "2", "-o", out]
    assert main(argv) == 0
    assert main(["rank", "--data", data, "--subset", out, "--rounds", "20", "-o", "r.json"]) == 0
    assert json.loads(Path("r.json").read_text(encoding="utf-8"))["signature"]["data"] == "\\xfe.jsonl"
    assert sorted(os.listdir(b".")) == [b"r.json", b"\xfe.jsonl", b"\xff.jsonl", b"\xff.manifest.json"]
    capsys.readouterr()


def test_two_commits_into_one_folder_are_placed_one_after_the_other(tmp_path):
    """Issue 34: a commit holds the folder's lock, so two runs writing the same outputs at once never leave the
    subset of one beside the manifest of the other; here a held lock makes the commit wait, with nothing placed."""
    import fcntl

    first, second = tmp_path / "s.jsonl", tmp_path / "s.manifest.json"
    held = os.open(tmp_path, os.O_RDONLY)
    fcntl.flock(held, fcntl.LOCK_EX)
    finished = threading.Event()

    def commit() -> None:
        with output_set(first, second) as out:
            for target in (first, second):
                with out.open(target) as handle:
                    handle.write("mine")
        finished.set()

    writer = threading.Thread(target=commit)
    writer.start()
    try:
        assert not finished.wait(0.5) and not first.exists() and not second.exists()
    finally:
        os.close(held)
    writer.join(30)
    assert finished.is_set() and first.read_text() == second.read_text() == "mine"


def test_a_handled_interrupt_does_not_make_the_interpreter_die_by_sigint_at_exit(monkeypatch, capsys):
    """CPython notes a KeyboardInterrupt that left code it ran through its C API (an extension importing during
    start-up) and, at exit, kills the process with SIGINT: a SIGTERM at start-up then exited -2 instead of 130
    in about one run of 30. A command that handled its interrupt clears that note."""
    import ctypes

    import precomet.commands.info as info

    flag = ctypes.c_int.in_dll(ctypes.pythonapi, "_Py_UnhandledKeyboardInterrupt")

    def interrupted(args):
        flag.value = 1  # what CPython does when the interrupt leaves an extension's start-up code
        raise KeyboardInterrupt

    monkeypatch.setattr(info, "run", interrupted)
    try:
        assert main(["info", "--data", TINY]) == 130
        assert flag.value == 0
    finally:
        flag.value = 0
    assert "interrupted; no output was written" in capsys.readouterr().err


@pytest.mark.parametrize("where", ["import", "run"])
def test_an_interrupt_that_a_library_wrapped_in_another_error_still_exits_130(tmp_path, monkeypatch, capsys, where):
    """Found by benchmarks/stress_interrupts.py: Ctrl-C inside a class body's ``__set_name__`` reaches precomet as a
    RuntimeError. Once an interrupt was received, any failure is the interrupt's: exit 130, never an internal error."""
    import importlib

    import precomet.cli as cli
    import precomet.commands.convert as convert

    def interrupted_then(error: Exception):
        signals._RECEIVED.append(signal.SIGINT)  # what the handler records before raising
        raise error

    if where == "import":
        real = importlib.import_module
        wrapped = RuntimeError("Error calling __set_name__")
        monkeypatch.setattr(
            cli.importlib, "import_module", lambda name: interrupted_then(wrapped) if "convert" in name else real(name)
        )
    else:
        monkeypatch.setattr(convert, "run", lambda args: interrupted_then(RuntimeError("wrapped")))
    out = tmp_path / "out.jsonl"
    assert main(["convert", "--data", TINY, "-o", str(out)]) == 130
    err = capsys.readouterr().err
    assert "interrupted; no output was written" in err and "internal error" not in err
    assert not out.exists() and not signals.interrupted()


@pytest.mark.parametrize("kind", ["file", "folder"])
def test_an_interrupt_just_after_a_temporary_is_made_leaves_nothing(tmp_path, monkeypatch, kind):
    """Found by benchmarks/stress_interrupts.py (1 run in 800 left a temporary): a staging folder is registered before
    it is created, so an interrupt between the two still removes it, and whatever was made inside it."""
    import precomet.outputs.atomic as atomic

    real_open, real_mkdir = os.open, os.mkdir

    def open_then_interrupt(path, flags, mode=0o777, **kwargs):
        descriptor = real_open(path, flags, mode, **kwargs)
        if ".precomet-" in str(path) and flags & os.O_EXCL:  # the staged file, not a clean-up's reads
            os.close(descriptor)
            raise KeyboardInterrupt
        return descriptor

    def mkdir_then_interrupt(path, mode=0o777):
        real_mkdir(path, mode)
        if ".precomet-" in str(path):
            raise KeyboardInterrupt

    monkeypatch.setattr(atomic.os, "open", open_then_interrupt)
    monkeypatch.setattr(atomic.os, "mkdir", mkdir_then_interrupt)
    with pytest.raises(KeyboardInterrupt), output_set() as out:
        out.path(tmp_path / "a.jsonl") if kind == "file" else out.directory(tmp_path / "ckpt")
    assert list(tmp_path.iterdir()) == []


def test_a_kept_file_appears_whole_or_not_at_all(tmp_path):
    """The encoder cache and predict's resume chunks (``kept_file``): an error or interrupt inside the block leaves
    the previous file and no staging folder; success replaces it."""
    from precomet.outputs.atomic import kept_file

    path = tmp_path / "chunk.npz"
    path.write_bytes(b"old")
    for failure in (OSError("disk"), KeyboardInterrupt()):
        with pytest.raises(type(failure)), kept_file(path) as handle:
            handle.write(b"half")
            raise failure
        assert path.read_bytes() == b"old" and sorted(os.listdir(tmp_path)) == ["chunk.npz"]
    with kept_file(path) as handle:
        handle.write(b"new")
    assert path.read_bytes() == b"new" and sorted(os.listdir(tmp_path)) == ["chunk.npz"]


def test_a_decided_commit_whose_other_folder_is_already_done_is_still_finished(tmp_path):
    """Two folders; the second's staging folder is gone (its moves made, then the run killed): the first's
    outputs are still placed, never left old for good."""
    first, second = tmp_path / "a", tmp_path / "b"
    second.mkdir()
    root = _dead_decided_root_in(first, {"x.json": "new x"}, others=[second / f".precomet-{_dead_pid()}-0123abce"])
    clean_leftovers(first)
    assert (first / "x.json").read_text() == "new x" and not root.exists()


def _dead_decided_root_in(folder: Path, outputs: dict[str, str], others: list[Path]) -> Path:
    folder.mkdir(exist_ok=True)
    pid = others[0].name.split("-")[1]
    root = folder / f".precomet-{pid}-0123abcd"
    (root / "out").mkdir(parents=True)
    for name, text in outputs.items():
        (root / "out" / name).write_text(text)
    roots = [os.path.relpath(path, folder) for path in [root, *others]]
    (root / "commit").write_text(json.dumps({"roots": roots, "outputs": list(outputs)}))
    return root


def test_a_commit_finishes_an_older_dead_decision_before_placing_its_own(tmp_path):
    """A run that died after deciding, found only when this one commits: its outputs go first, so this newer set
    is what stays."""
    with output_set(tmp_path / "a.txt", tmp_path / "c.txt") as out:
        for name in ("a.txt", "c.txt"):
            with out.open(tmp_path / name) as handle:
                handle.write("run 2")
        _dead_decided_root(tmp_path, {"a.txt": "run 1", "b.txt": "run 1"})  # decided and killed meanwhile
    clean_leftovers(tmp_path)
    texts = {name: (tmp_path / name).read_text() for name in ("a.txt", "b.txt", "c.txt")}
    assert texts == {"a.txt": "run 2", "b.txt": "run 1", "c.txt": "run 2"} and _leftovers(tmp_path) == []


def test_a_commit_that_can_neither_finish_nor_go_back_is_completed_by_the_next_run(tmp_path, monkeypatch):
    """Placing the second output fails and so does putting the first back: the decision stays, so the next run
    completes the new set instead of leaving one old and one missing file."""
    import precomet.outputs.atomic as atomic

    (tmp_path / "a.txt").write_text("old a")
    (tmp_path / "b.txt").write_text("old b")
    real_place, real_replace, placed = atomic._place, os.replace, []

    def place_then_fail(*args, **kwargs):
        if placed:
            monkeypatch.setattr(atomic.os, "replace", lambda *a, **k: (_ for _ in ()).throw(OSError(errno.EIO, "I/O")))
            raise OSError(errno.EIO, "Input/output error")
        placed.append(real_place(*args, **kwargs))
        return placed[-1]

    monkeypatch.setattr(atomic, "_place", place_then_fail)
    with pytest.raises(OutputError), output_set(tmp_path / "a.txt", tmp_path / "b.txt") as out:
        for name in ("a.txt", "b.txt"):
            with out.open(tmp_path / name) as handle:
                handle.write("new")
    monkeypatch.setattr(atomic.os, "replace", real_replace)
    monkeypatch.setattr(atomic, "_place", real_place)
    clean_leftovers(tmp_path)
    assert [(tmp_path / name).read_text() for name in ("a.txt", "b.txt")] == ["new", "new"]
    assert _leftovers(tmp_path) == []


def test_a_staging_folder_with_this_process_id_but_not_of_this_process_is_dead(tmp_path):
    """In a container every run may get the same PID: a staging folder named with it that this process did not
    make is an earlier run's, and is cleaned."""
    stale = tmp_path / f".precomet-{os.getpid()}-0123abcd"
    (stale / "out").mkdir(parents=True)
    clean_leftovers(tmp_path)
    assert not stale.exists()


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
@pytest.mark.parametrize("full", ["-o", "--batch"])
def test_a_device_output_that_fails_leaves_no_other_output_placed(tmp_path, capsys, full):
    """Issue 51: ``select -o s.jsonl --batch /dev/full`` placed s.jsonl and its manifest before the device failed;
    devices are now written first, so all or nothing holds for every output."""
    outputs = {"-o": str(tmp_path / "s.jsonl"), "--batch": str(tmp_path / "b.csv")}
    outputs[full] = "/dev/full"
    argv = ["select", "--data", TINY, "--method", "length", "--budget", "1"]
    assert main([*argv, "-o", outputs["-o"], "--batch", outputs["--batch"]]) == 2
    assert "/dev/full" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_a_full_disk_under_a_writer_that_writes_atomically_itself_names_the_users_output(tmp_path):
    """Issue 51: ``utilities -o -`` handed its staged path to a writer that opened its own atomic write, so a full
    disk named the hidden temporary; every error now names the enclosing set's output."""
    target = tmp_path / "u.jsonl"
    with pytest.raises(OutputError) as caught, output_set(target) as out:
        with atomic_write(out.path(target)):
            raise OSError(errno.ENOSPC, "No space left on device")
    assert str(caught.value) == f"cannot write {target}: no space left on device"
    assert list(tmp_path.iterdir()) == []


def test_standard_output_that_cannot_be_buffered_says_where_it_is_buffered(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(OutputError) as caught, output_set("-") as out:
        with atomic_write(out.path("-")):
            raise OSError(errno.ENOSPC, "No space left on device")
    assert f"standard output (-), buffered first in the temporary folder {tmp_path} (TMPDIR)" in str(caught.value)
    assert "precomet-" not in str(caught.value) and list(tmp_path.iterdir()) == []


def test_a_removed_working_folder_is_said_not_no_such_file(tmp_path, monkeypatch, capsys):
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    assert main(["select", "--data", TINY, "--method", "length", "--budget", "1", "-o", "out.jsonl"]) == 2
    assert "the working folder was removed" in capsys.readouterr().err
