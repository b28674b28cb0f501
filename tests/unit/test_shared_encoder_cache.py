"""Issue 32: one encoder cache for every command. On by default in the user's cache folder (``PRECOMET_CACHE`` moves
it, ``--no-cache`` skips it), keyed by encoder identity and text, safe when two processes write at once, and a
second ``predict`` of the same file encodes nothing and says so."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import pytest

from precomet.cli import main
from precomet.encoders import clear_embedding_cache, disk, encode_cached
from precomet.errors import PrecometError
from tests.bad_inputs import GOOD
from tests.conftest import Counting

SHIPPED = Path(__file__).resolve().parents[2] / "checkpoints" / "metric-avg-e5"


def _segments(root: Path) -> list[Path]:
    return sorted(root.glob("*/*.npz"))


def test_the_default_folder_is_the_users_cache_and_precomet_cache_moves_it(tmp_path, monkeypatch):
    monkeypatch.delenv(disk.ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert disk.shared_cache_dir() == tmp_path / "xdg" / "precomet"
    encode_cached(Counting(), ["aa", "b"])
    assert [p.parent.parent for p in _segments(tmp_path / "xdg" / "precomet")] == [tmp_path / "xdg" / "precomet"]
    monkeypatch.setenv(disk.ENV, str(tmp_path / "moved"))
    clear_embedding_cache()
    encode_cached(Counting(), ["aa"])
    assert len(_segments(tmp_path / "moved")) == 1


def test_a_new_process_reads_back_what_an_earlier_one_encoded(monkeypatch):
    encode_cached(Counting(), ["aa", "b"])
    clear_embedding_cache()  # a new process
    again = Counting()
    assert encode_cached(again, ["b", "aa", "c"]).tolist() == [[1, 0], [2, 2], [1, 0]]
    assert again.seen == ["c"]


def test_no_disk_cache_neither_reads_nor_writes():
    root = disk.shared_cache_dir()
    encode_cached(Counting(), ["aa"])
    clear_embedding_cache()
    with disk.no_disk_cache():
        assert disk.shared_cache_dir() is None
        encoder = Counting()
        encode_cached(encoder, ["aa", "new"])
    assert encoder.seen == ["aa", "new"] and len(_segments(root)) == 1


def test_another_encoder_identity_never_shares_vectors():
    class Other(Counting):
        def identity(self):
            return {"name": self.name, "weights": "retrained"}

    encode_cached(Counting(), ["aa"])
    clear_embedding_cache()
    other = Other()
    encode_cached(other, ["aa"])
    assert other.seen == ["aa"] and len({p.parent for p in _segments(disk.shared_cache_dir())}) == 2


def test_a_default_folder_that_is_a_file_is_skipped_with_a_warning(tmp_path, monkeypatch, caplog):
    monkeypatch.delenv(disk.ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    (tmp_path / "xdg").write_text("a file")
    assert encode_cached(Counting(), ["aa"]).tolist() == [[2, 2]]
    assert "running without it" in caplog.text


def _encode_in_child(root: str, texts: list[str], start) -> None:
    os.environ[disk.ENV] = root
    clear_embedding_cache()
    start.wait()
    encode_cached(Counting(), texts)


def test_two_processes_writing_at_once_keep_both_their_vectors(tmp_path, monkeypatch):
    monkeypatch.setattr("precomet.encoders.base.CHUNK", 3)
    context = multiprocessing.get_context("fork")
    start = context.Barrier(2)
    texts = [[f"first {i}" for i in range(30)], [f"second {i}" + "a" * i for i in range(30)]]
    children = [context.Process(target=_encode_in_child, args=(str(tmp_path), t, start)) for t in texts]
    for child in children:
        child.start()
    for child in children:
        child.join(60)
        assert child.exitcode == 0
    monkeypatch.setenv(disk.ENV, str(tmp_path))
    clear_embedding_cache()
    reader = Counting()
    vectors = encode_cached(reader, texts[0] + texts[1])
    assert reader.seen == [] and vectors.tolist() == Counting().encode(texts[0] + texts[1]).tolist()
    assert not [
        p for p in tmp_path.rglob("*") if p.is_file() and p.suffix != ".npz" and p.name != disk.META
    ]  # no temporary left


@pytest.mark.parametrize("spelling", ["after", "before"])
def test_cli_runs_share_the_cache_unless_no_cache(spelling, tmp_path, monkeypatch, capsys, stub_sentence_encoder):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "items.jsonl").write_text(GOOD)
    argv = "utilities --data items.jsonl --method kmeans --budget 2 -o {}".split()
    assert main([*argv[:-1], "one.jsonl"]) == 0
    assert "encoder cache: 4 text(s) encoded" in capsys.readouterr().err
    clear_embedding_cache()  # each CLI run is a new process
    assert main([*argv[:-1], "two.jsonl"]) == 0
    err = capsys.readouterr().err
    assert "encoder cache: 0 text(s) encoded" in err and "4 of 4 distinct text(s) read" in err
    assert len(stub_sentence_encoder) == 1
    clear_embedding_cache()
    skip = (
        ["--no-cache", *argv[:-1], "three.jsonl"] if spelling == "before" else [*argv[:-1], "three.jsonl", "--no-cache"]
    )
    assert main(skip) == 0
    assert "4 text(s) encoded" in capsys.readouterr().err and len(stub_sentence_encoder) == 2
    assert len(_segments(disk.shared_cache_dir())) == 1  # --no-cache wrote nothing


@pytest.mark.skipif(not SHIPPED.is_dir(), reason="the shipped checkpoint is not in this checkout")
def test_a_second_predict_of_the_same_file_encodes_nothing(tmp_path, capsys):
    sources = tmp_path / "sources.txt"
    sources.write_text("Der Hund bellt.\n这是一个测试。\nThe cat sat on the mat.\n", encoding="utf-8")
    argv = ["predict", "--checkpoint", str(SHIPPED), "--data", str(sources), "-o"]
    assert main([*argv, str(tmp_path / "one.jsonl")]) == 0
    assert "encoder cache: 3 text(s) encoded with e5-small" in capsys.readouterr().err
    clear_embedding_cache()
    assert main([*argv, str(tmp_path / "two.jsonl")]) == 0
    assert "encoder cache: 0 text(s) encoded with e5-small, 3 of 3" in capsys.readouterr().err
    first, second = ((tmp_path / f"{n}.jsonl").read_text().splitlines() for n in ("one", "two"))
    assert [line for line in first if "signature" not in line] == [line for line in second if "signature" not in line]


def test_the_single_file_of_precomet_0_8_is_read_as_one_more_segment(tmp_path):
    """A cache written by 0.8 (``ROOT/<encoder key>.npz``, same arrays and checksum) needs no re-encoding."""
    encode_cached(Counting(), ["aa", "b"], cache_dir=tmp_path)
    (segment,) = tmp_path.glob("counting-*/*.npz")
    legacy = segment.parent.with_name(segment.parent.name + ".npz")
    segment.rename(legacy)
    (segment.parent / disk.META).unlink()  # a 0.8 cache has no metadata
    segment.parent.rmdir()
    clear_embedding_cache()
    again = Counting()
    assert encode_cached(again, ["b", "aa"], cache_dir=tmp_path).tolist() == [[1, 0], [2, 2]] and again.seen == []


def test_a_default_folder_that_cannot_be_written_is_a_warning_and_an_explicit_one_an_error(
    tmp_path, monkeypatch, caplog
):
    import errno

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(disk.os, "replace", full)
    monkeypatch.delenv(disk.ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert encode_cached(Counting(), ["aa"]).tolist() == [[2, 2]]
    assert "going on without keeping them" in caplog.text and "No space left" in caplog.text
    clear_embedding_cache()
    monkeypatch.setenv(disk.ENV, str(tmp_path / "chosen"))
    with pytest.raises(PrecometError, match="cannot keep encoder vectors in .*chosen.*--no-cache"):
        encode_cached(Counting(), ["aa"])
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]  # no temporary left behind


def test_a_later_call_opens_only_the_segments_that_may_hold_its_texts(tmp_path, monkeypatch):
    """The next chunk of a pool does not re-read every segment: those known to hold none of its texts are skipped
    (a segment changed since is read again)."""
    monkeypatch.setattr("precomet.encoders.base.CHUNK", 2)
    encode_cached(Counting(), [f"text {i}" for i in range(10)], cache_dir=tmp_path)  # five segments
    clear_embedding_cache()
    monkeypatch.setattr(disk, "_KNOWN", {})  # a new process
    opened = []
    real_load = disk.np.load
    monkeypatch.setattr(disk.np, "load", lambda path, **kw: opened.append(path) or real_load(path, **kw))
    encode_cached(Counting(), ["new"], cache_dir=tmp_path)  # in none: every segment is read once, "new" saved
    first = len(opened)
    clear_embedding_cache()
    opened.clear()
    again = Counting()
    assert encode_cached(again, ["text 9"], cache_dir=tmp_path).tolist() == [[6, 0]] and again.seen == []
    assert first == 5 and len(opened) == 1  # then only the segment holding "text 9" is opened
