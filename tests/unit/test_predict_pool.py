"""Pool-scale prediction: chunked reading (precomet.io.chunks), chunk-by-chunk prediction with a resume folder
(precomet.estimator.pool) and ``precomet predict --chunk-size/--resume-dir``, on a tiny untrained checkpoint."""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import datasets
import numpy as np
import pytest
import torch

import precomet.encoders.tokens as tokens_module
import precomet.estimator.pool as pool_module
from precomet.cli import main
from precomet.errors import PrecometError
from precomet.estimator.checkpoint import load_estimator
from precomet.estimator.pool import check_resume_dir, predict_pool
from precomet.estimator.predict import predict_sources
from precomet.io import load
from precomet.io.chunks import iter_source_chunks

REPO = Path(__file__).resolve().parents[2]
WORDS = "the cat sat on a mat notwithstanding idiosyncratic jurisprudence people walk home after work".split()
SOURCES = [" ".join(WORDS[(7 * i + k) % len(WORDS)] for k in range(1 + i % 13)) + f" {i}" for i in range(60)]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    """An untrained tiny checkpoint (random encoder and head): meaningless but deterministic predictions."""
    from precomet.encoders.transformer import load_transformer
    from precomet.estimator.checkpoint import save_checkpoint
    from precomet.estimator.model import EstimatorNetwork
    from precomet.estimator.tiny import build_tiny_encoder

    work = tmp_path_factory.mktemp("pool")
    folder = build_tiny_encoder(work / "enc", texts=SOURCES, seed=0)
    torch.manual_seed(0)
    network = EstimatorNetwork(32, hidden_sizes=(16, 8), dropout=0.1).eval()
    meta = {
        "target": {"method": "neg_avg"},
        "direction": "higher_first",
        "standardisation": {"mean": 0.0, "std": 1.0},
        "pooling": "mean",
        "hidden_sizes": [16, 8],
        "max_length": 32,
    }
    return save_checkpoint(work / "ckpt", network=network, meta=meta, encoder=load_transformer(folder, name="tiny"))


def _inputs(folder: Path, sources=SOURCES) -> dict[str, Path]:
    """The same items as plain text, JSONL, Parquet and a saved dataset."""
    rows = [{"id": str(number), "src": source} for number, source in enumerate(sources, start=1)]
    text = folder / "pool.txt"
    text.write_text("".join(s + "\n" for s in sources), encoding="utf-8")
    jsonl = folder / "pool.jsonl"
    jsonl.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    dataset = datasets.Dataset.from_list(rows)
    dataset.to_parquet(str(folder / "pool.parquet"))
    dataset.save_to_disk(str(folder / "saved"))
    return {"text": text, "jsonl": jsonl, "parquet": folder / "pool.parquet", "hf-dataset": folder / "saved"}


@pytest.mark.parametrize("kind", ["text", "jsonl", "parquet", "hf-dataset"])
def test_chunks_hold_the_items_of_the_full_loader(kind, tmp_path):
    path = _inputs(tmp_path)[kind]
    chunks = list(iter_source_chunks(path, chunk_size=7))
    assert [len(ids) for ids, _ in chunks] == [7] * 8 + [4]
    loaded = load(path, complete=False)
    assert [i for ids, _ in chunks for i in ids] == [str(i) for i in loaded.ids]
    assert [s for _, sources in chunks for s in sources] == list(loaded.src) == SOURCES


@pytest.mark.parametrize("kind", ["jsonl", "parquet", "hf-dataset"])
def test_a_repeated_id_in_a_later_chunk_is_refused_as_by_the_full_loader(kind, tmp_path):
    rows = [{"id": str(i), "src": f"source {i}"} for i in range(20)]
    rows[17]["id"] = "3"
    path = {"jsonl": tmp_path / "a.jsonl", "parquet": tmp_path / "a.parquet", "hf-dataset": tmp_path / "saved"}[kind]
    if kind == "jsonl":
        path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    elif kind == "parquet":
        datasets.Dataset.from_list(rows).to_parquet(str(path))
    else:
        datasets.Dataset.from_list(rows).save_to_disk(str(path))
    with pytest.raises(PrecometError) as full:
        load(path, complete=False)
    with pytest.raises(PrecometError) as chunked:
        list(iter_source_chunks(path, chunk_size=5))
    assert str(chunked.value) == str(full.value) and "duplicate item id '3'" in str(full.value)


def test_items_with_and_without_ids_in_different_chunks_are_refused_as_by_the_full_loader(tmp_path):
    path = tmp_path / "mixed.jsonl"
    rows = [{"id": str(i), "src": f"source {i}"} for i in range(8)] + [{"src": "no id"}]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    with pytest.raises(PrecometError) as full:
        load(path, complete=False)
    with pytest.raises(PrecometError) as chunked:
        list(iter_source_chunks(path, chunk_size=3))
    assert str(chunked.value) == str(full.value) == f"{path}:9: item has no 'id' although {path}:1 and others have one"


def test_a_blank_source_is_refused_naming_its_line(tmp_path):
    path = tmp_path / "blank.txt"
    path.write_text("one\ntwo\n \nfour\n", encoding="utf-8")
    with pytest.raises(PrecometError, match=f"{path}:3: blank line"):
        next(iter_source_chunks(path, chunk_size=1))


def _predict(estimator, chunks, **options):
    ids, values = [], []

    def write(chunk_ids, chunk_values):
        ids.extend(chunk_ids)
        values.extend(chunk_values.tolist())

    run = predict_pool(estimator, chunks, write=write, **options)
    return ids, np.array(values), run


def test_chunked_predictions_match_one_call_and_tokenise_at_most_a_chunk(checkpoint, tmp_path, monkeypatch):
    estimator = load_estimator(checkpoint)
    reference = predict_sources(estimator, SOURCES, batch_size=4)
    tokenised: list[int] = []
    tokenize = tokens_module.token_ids

    def recording(tokenizer, sources, **options):
        tokenised.append(len(sources))
        return tokenize(tokenizer, sources, **options)

    monkeypatch.setattr(tokens_module, "token_ids", recording)
    path = _inputs(tmp_path)["jsonl"]
    ids, values, run = _predict(estimator, iter_source_chunks(path, chunk_size=9), batch_size=4)
    assert ids == [str(i) for i in range(1, 61)] and (run.predicted, run.reused) == (7, 0)
    assert max(tokenised) == 9 and sum(tokenised) == 60
    np.testing.assert_allclose(values, reference, rtol=0, atol=1e-6)  # other batches: the last digits may differ
    _, singles, _ = _predict(estimator, iter_source_chunks(path, chunk_size=1), batch_size=4)
    np.testing.assert_allclose(singles, reference, rtol=0, atol=1e-6)  # docs/estimator.md: "every chunk size"
    _, whole, _ = _predict(estimator, iter_source_chunks(path, chunk_size=100), batch_size=4)
    np.testing.assert_array_equal(whole, reference)  # one chunk: the unchunked numbers exactly


def _counting(monkeypatch) -> list[int]:
    calls: list[int] = []
    real = pool_module.predict_sources

    def counted(estimator, sources, **options):
        calls.append(len(sources))
        return real(estimator, sources, **options)

    monkeypatch.setattr(pool_module, "predict_sources", counted)
    return calls


def test_resume_reuses_only_chunks_of_the_same_sources_checkpoint_and_settings(checkpoint, tmp_path, monkeypatch):
    calls = _counting(monkeypatch)
    resume = tmp_path / "resume"
    estimator = load_estimator(checkpoint)

    def run(sources=SOURCES, estimator=estimator, **options):
        calls.clear()
        chunks = [
            ([str(i) for i in range(start, start + 10)], sources[start : start + 10]) for start in range(0, 60, 10)
        ]
        return _predict(estimator, chunks, resume_dir=resume, **{"batch_size": 4, **options})

    _, first, done = run()
    assert len(calls) == 6 and done.predicted == 6 and len(list(resume.glob("*.npz"))) == 6
    _, again, done = run()
    assert calls == [] and done.reused == 6
    np.testing.assert_array_equal(again, first)
    changed = list(SOURCES)
    changed[25] = "a changed source"
    _, values, _ = run(changed)
    assert calls == [10]  # only the chunk holding the changed source
    np.testing.assert_array_equal(np.delete(values, range(20, 30)), np.delete(first, range(20, 30)))
    run(batch_size=5)
    assert len(calls) == 6  # another batch size gives other last digits: nothing reused
    other = tmp_path / "other"  # the same checkpoint but another standardisation: other numbers
    shutil.copytree(checkpoint, other)
    meta = json.loads((other / "precomet.json").read_text())
    meta["standardisation"]["mean"] = 1.0
    (other / "precomet.json").write_text(json.dumps(meta))
    _, moved, _ = run(estimator=load_estimator(other))
    assert len(calls) == 6 and not np.allclose(moved, first)
    done.kept[2].write_bytes(b"\x93NUMPY half a file")  # a damaged chunk file is predicted again
    _, repaired, _ = run()
    assert calls == [10]
    np.testing.assert_array_equal(repaired, first)


def test_a_resume_folder_inside_an_input_is_refused(checkpoint, tmp_path):
    with pytest.raises(PrecometError, match="lies inside the input"):
        check_resume_dir(checkpoint / "chunks", inputs=[checkpoint])
    with pytest.raises(PrecometError, match="is not a folder"):
        check_resume_dir(checkpoint / "precomet.json", inputs=[])


def test_the_default_resume_folder_inside_an_input_names_the_output_not_an_option_never_given(
    checkpoint, tmp_path, capsys
):
    copy = Path(shutil.copytree(checkpoint, tmp_path / "ckc"))
    data = _inputs(tmp_path)["text"]
    assert main(_cli(copy, data, copy / "new.jsonl")) == 2
    error = capsys.readouterr().err
    assert f"-o {copy / 'new.jsonl'}: its resume folder {copy / 'new.jsonl.chunks'} is, holds or lies inside" in error
    assert "keep chunks elsewhere, with --resume-dir DIR" in error
    assert main(_cli(copy, data, tmp_path / "out.jsonl", "--resume-dir", str(copy / "kept"))) == 2
    assert f"error: --resume-dir {copy / 'kept'} is, holds or lies inside the input" in capsys.readouterr().err


def test_predict_refuses_options_it_would_ignore(checkpoint, tmp_path, capsys):
    data = _inputs(tmp_path)["text"]
    assert main(_cli(checkpoint, data, tmp_path / "out.jsonl", "--num-nodes", "4")) == 2
    assert "--num-nodes applies to a --shard-dir run" in capsys.readouterr().err
    shards = ["predict", "--checkpoint", str(checkpoint), "--data", str(data), "--shard-dir", str(tmp_path / "sh")]
    assert main([*shards, "--chunk-size", "10", "--resume-dir", str(tmp_path / "kept")]) == 2
    assert "--chunk-size and --resume-dir apply to -o" in capsys.readouterr().err
    assert not (tmp_path / "out.jsonl").exists() and not (tmp_path / "sh").exists()


def _cli(checkpoint, data, output, *extra):
    return ["predict", "--checkpoint", str(checkpoint), "--data", str(data), "-o", str(output), *extra]


def test_cli_output_signature_and_values_are_those_of_one_call(checkpoint, tmp_path, monkeypatch):
    path = _inputs(tmp_path)["text"]
    out = tmp_path / "scores.jsonl"
    assert main(_cli(checkpoint, path, out, "--chunk-size", "100", "--batch-size", "4")) == 0
    signature, *rows = [json.loads(line) for line in out.read_text().splitlines()]
    expected_hash = hashlib.sha256("\x1f".join(SOURCES).encode("utf-8")).hexdigest()[:16]
    assert signature["signature"]["data_hash"] == expected_hash and signature["signature"]["n_items"] == 60
    assert [row["id"] for row in rows] == [str(i) for i in range(1, 61)]
    reference = predict_sources(load_estimator(checkpoint), SOURCES, batch_size=4)
    np.testing.assert_array_equal([row["utility"] for row in rows], reference)
    assert not (tmp_path / "scores.jsonl.chunks").exists()  # the default resume folder goes once the output is written


@pytest.mark.slow  # a child process stopped half way: ~9 s
def test_sigterm_then_rerun_predicts_only_the_missing_chunks_and_writes_the_same_bytes(
    checkpoint, tmp_path, monkeypatch
):
    path = _inputs(tmp_path)["text"]
    options = ["--chunk-size", "6", "--batch-size", "4"]
    whole = tmp_path / "whole.jsonl"
    assert main(_cli(checkpoint, path, whole, *options)) == 0
    out, resume = tmp_path / "scores.jsonl", tmp_path / "resume"
    slow = (  # each chunk takes 0.3 s more, so that the test can stop the run half way
        "import sys, time; import precomet.estimator.pool as p; real = p.predict_sources;"
        "p.predict_sources = lambda *a, **k: (time.sleep(0.3), real(*a, **k))[1];"
        "from precomet.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "PRECOMET_PROGRESS": "0"}
    args = _cli(checkpoint, path, out, *options, "--resume-dir", str(resume))
    child = subprocess.Popen([sys.executable, "-c", slow, *args], env=env, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while len(list(resume.glob("*.npz"))) < 4 and time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.05)
    child.send_signal(signal.SIGTERM)
    _, err = child.communicate(timeout=60)
    kept = len(list(resume.glob("*.npz")))
    assert child.returncode == 130 and 4 <= kept < 10, err.decode()
    assert b"no output was written" in err  # kept chunks are a cache, not an output
    assert not out.exists()  # all or nothing
    calls = _counting(monkeypatch)
    assert main(args) == 0
    assert len(calls) == 10 - kept
    assert out.read_bytes() == whole.read_bytes()
    assert len(list(resume.glob("*.npz"))) == 10  # an explicit resume folder is kept


def test_an_error_keeps_no_chunk_of_the_failed_run(checkpoint, tmp_path, monkeypatch):
    real, calls = pool_module.predict_sources, []

    def failing(estimator, sources, **options):
        calls.append(1)
        if len(calls) == 2:
            raise PrecometError("checkpoint damaged")
        return real(estimator, sources, **options)

    monkeypatch.setattr(pool_module, "predict_sources", failing)
    resume = tmp_path / "new-folder"
    chunks = [(["1", "2"], SOURCES[:2]), (["3", "4"], SOURCES[2:4])]
    with pytest.raises(PrecometError, match="damaged"):
        _predict(load_estimator(checkpoint), chunks, resume_dir=resume)
    assert not resume.exists()  # the same input fails the same way again: nothing to resume from


def test_select_checkpoint_predicts_in_chunks(checkpoint, monkeypatch):
    from precomet.estimator.pool import predict_in_chunks

    estimator = load_estimator(checkpoint)
    reference = predict_sources(estimator, SOURCES)
    np.testing.assert_array_equal(predict_in_chunks(estimator, SOURCES), reference)
    calls = _counting(monkeypatch)
    np.testing.assert_allclose(predict_in_chunks(estimator, SOURCES, chunk_size=25), reference, rtol=0, atol=1e-6)
    assert calls == [25, 25, 10]


# ---------------------------------------------------------------------------------------------- issue 34
def test_a_damaged_or_replaced_chunk_is_predicted_again_never_used(checkpoint, tmp_path, monkeypatch, caplog):
    """A chunk whose numbers were zeroed, or swapped for another chunk's under its name, fails its checksum."""
    chunks = [([str(i) for i in range(s, s + 10)], SOURCES[s : s + 10]) for s in range(0, 30, 10)]
    resume = tmp_path / "resume"
    estimator = load_estimator(checkpoint)
    _, first, done = _predict(estimator, chunks, resume_dir=resume)
    zeroed = dict(np.load(done.kept[0]))
    zeroed["values"] = np.zeros(10)
    np.savez(done.kept[0], **zeroed)
    shutil.copyfile(done.kept[2], done.kept[1])  # a valid chunk file, but another chunk's
    calls = _counting(monkeypatch)
    _, again, _ = _predict(estimator, chunks, resume_dir=resume)
    assert calls == [10, 10] and caplog.text.count("checksum does not match") == 2
    np.testing.assert_array_equal(again, first)


def test_another_chunk_size_leaves_no_stale_chunk_of_the_pool(checkpoint, tmp_path):
    path = _inputs(tmp_path)["text"]
    resume, other_pool = tmp_path / "resume", tmp_path / "other.txt"
    other_pool.write_text("".join(s + " again\n" for s in SOURCES[:5]), encoding="utf-8")
    assert main(_cli(checkpoint, other_pool, tmp_path / "o.jsonl", "--resume-dir", str(resume))) == 0
    theirs = set(resume.glob("*.npz"))
    assert main(_cli(checkpoint, path, tmp_path / "a.jsonl", "--chunk-size", "7", "--resume-dir", str(resume))) == 0
    assert len(set(resume.glob("*.npz")) - theirs) == 9
    assert main(_cli(checkpoint, path, tmp_path / "b.jsonl", "--chunk-size", "20", "--resume-dir", str(resume))) == 0
    assert len(set(resume.glob("*.npz")) - theirs) == 3 and theirs <= set(resume.glob("*.npz"))  # others' stay
    out = tmp_path / "c.jsonl"  # the default folder of -o: every kept chunk in it goes, stale ones included
    (tmp_path / "c.jsonl.chunks").mkdir()
    shutil.copy(sorted(theirs)[0], tmp_path / "c.jsonl.chunks")
    assert main(_cli(checkpoint, path, out, "--chunk-size", "20")) == 0
    assert not (tmp_path / "c.jsonl.chunks").exists()


@pytest.mark.parametrize("default_folder", [True, False])
def test_files_that_only_look_like_chunks_are_never_removed(checkpoint, tmp_path, default_folder):
    path, out = _inputs(tmp_path)["text"], tmp_path / "o.jsonl"
    folder = tmp_path / ("o.jsonl.chunks" if default_folder else "mine")
    folder.mkdir()
    user = {
        folder / ("0" * 64 + ".npy"): None,  # a user's array (or a chunk of precomet 0.7, unverifiable)
        folder / ("1" * 64 + ".npz"): {"values": np.zeros(3)},  # a user's archive under a 64-digit name
        folder / ("2" * 64 + ".npz"): b"PK\x03\x04 truncated",
    }
    for file, arrays in user.items():
        if isinstance(arrays, bytes):
            file.write_bytes(arrays)
        elif arrays is None:
            np.save(file, np.arange(3.0))
        else:
            np.savez(file, **arrays)
    before = {file: file.read_bytes() for file in user}
    extra = [] if default_folder else ["--resume-dir", str(folder)]
    assert main(_cli(checkpoint, path, out, "--chunk-size", "20", *extra)) == 0
    assert main(_cli(checkpoint, path, out, "--chunk-size", "7", *extra)) == 0  # stale chunks of size 20 go
    assert {file: file.read_bytes() for file in user} == before
    chunks = [p for p in folder.glob("*.npz") if p not in user]
    assert len(chunks) == (0 if default_folder else 9)  # the default folder's chunks go once the output is written


@pytest.mark.parametrize("content", [b"PK\x03\x04 truncated", b"\x93NUMPY not really", b""])
def test_an_unreadable_chunk_under_a_chunk_name_is_predicted_again(checkpoint, tmp_path, content, caplog):
    path, folder = _inputs(tmp_path)["text"], tmp_path / "rd"
    assert main(_cli(checkpoint, path, tmp_path / "a.jsonl", "--resume-dir", str(folder))) == 0
    chunk = sorted(folder.glob("*.npz"))[0]
    chunk.write_bytes(content)
    assert main(_cli(checkpoint, path, tmp_path / "b.jsonl", "--resume-dir", str(folder))) == 0
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    assert "unreadable kept chunk" in caplog.text


def test_an_array_saved_under_a_chunk_name_is_predicted_again(checkpoint, tmp_path, caplog):
    path, folder = _inputs(tmp_path)["text"], tmp_path / "rd"
    assert main(_cli(checkpoint, path, tmp_path / "a.jsonl", "--resume-dir", str(folder))) == 0
    chunk = sorted(folder.glob("*.npz"))[0]
    with chunk.open("wb") as handle:
        np.save(handle, np.arange(3.0))
    assert main(_cli(checkpoint, path, tmp_path / "b.jsonl", "--resume-dir", str(folder))) == 0
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    assert "not an .npz archive" in caplog.text


def test_a_second_run_on_a_locked_resume_folder_is_refused_and_changes_nothing(checkpoint, tmp_path, capsys):
    from precomet.outputs.lock import folder_lock

    path = _inputs(tmp_path)["text"]
    for extra, folder in (([], tmp_path / "s.jsonl.chunks"), (["--resume-dir", str(tmp_path / "rd")], tmp_path / "rd")):
        folder.mkdir()
        with folder_lock(folder, what="x", remedy="y"):
            before = sorted(tmp_path.rglob("*"))
            assert main(_cli(checkpoint, path, tmp_path / "s.jsonl", *extra)) == 2
            assert sorted(tmp_path.rglob("*")) == before
        err = capsys.readouterr().err
        assert f"is in use by another precomet run (process {os.getpid()})" in err
        assert ("--resume-dir" if extra else "-o") in err.split("error:")[1]
        assert list(folder.iterdir()) == []  # the lock file goes with the lock


def test_a_resume_folder_removed_by_the_run_before_is_made_again_and_locked(tmp_path, monkeypatch):
    """Issue 51: two identical ``predict -o`` at once; the first to end removed the shared default resume folder
    while the second was locking it, which then failed naming its hidden lock file."""
    from precomet.outputs import lock

    folder, real_open, removed = tmp_path / "s.jsonl.chunks", os.open, []

    def open_after_the_other_run_ended(path, *args, **kwargs):
        if not removed:  # the other run ends between our mkdir and open: its empty folder goes
            removed.append(path)
            folder.rmdir()
        return real_open(path, *args, **kwargs)

    folder.mkdir()
    monkeypatch.setattr(lock.os, "open", open_after_the_other_run_ended)
    with lock.folder_lock(folder, what="-o s.jsonl", remedy="another -o") as made:
        assert made and (folder / lock.LOCK_NAME).is_file() and removed
    assert list(folder.iterdir()) == []


def test_an_interrupt_before_the_first_chunk_leaves_no_folder(checkpoint, tmp_path, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(pool_module, "predict_sources", interrupted)
    path = _inputs(tmp_path)["text"]
    for extra in ([], ["--resume-dir", str(tmp_path / "made" / "here")]):
        assert main(_cli(checkpoint, path, tmp_path / "s.jsonl", *extra)) == 130
        assert not (tmp_path / "s.jsonl.chunks").exists() and not (tmp_path / "made").exists()


def test_a_long_output_name_gets_a_default_resume_folder_that_fits(checkpoint, tmp_path):
    path = _inputs(tmp_path)["text"]
    out = tmp_path / ("p" * 246 + ".jsonl")  # 252 bytes: legal, but OUTPUT.chunks would not be
    from precomet.commands.predict import resume_dir

    folder = resume_dir(type("Args", (), {"resume_dir": None, "output": str(out)})())
    assert folder is not None and len(folder.name.encode()) <= 255 and folder.name.endswith(".chunks")
    assert main(_cli(checkpoint, path, out, "--chunk-size", "20")) == 0
    assert out.is_file() and not folder.exists()


def test_a_folder_the_user_made_under_the_default_resume_name_stays(checkpoint, tmp_path):
    path, out = _inputs(tmp_path)["text"], tmp_path / "o.jsonl"
    (tmp_path / "o.jsonl.chunks").mkdir()  # the user's, empty
    assert main(_cli(checkpoint, path, out, "--chunk-size", "20")) == 0
    assert (tmp_path / "o.jsonl.chunks").is_dir() and not list((tmp_path / "o.jsonl.chunks").iterdir())


def test_an_interrupt_after_kept_chunks_says_what_was_kept_and_the_command_that_resumes(
    checkpoint, tmp_path, monkeypatch, capsys
):
    """Issue 32: the interrupt message names the kept chunks, their folder and the exact command; running that
    command predicts only the rest."""
    calls = []

    def second_chunk_interrupted(estimator, sources, **options):
        calls.append(len(sources))
        if len(calls) == 2:
            raise KeyboardInterrupt
        return predict_sources(estimator, sources, **options)

    monkeypatch.setattr(pool_module, "predict_sources", second_chunk_interrupted)
    path = _inputs(tmp_path)["text"]
    argv = _cli(checkpoint, path, tmp_path / "s.jsonl", "--chunk-size", "20")
    assert main(argv) == 130
    err = capsys.readouterr().err
    folder = tmp_path / "s.jsonl.chunks"
    assert f"1 predicted chunk(s) (20 of 60 sources) are kept in {folder}" in err
    command = err.split("to resume, run the same command: ")[1].strip()
    import shlex

    assert shlex.split(command) == ["precomet", *argv]
    assert main(shlex.split(command)[1:]) == 0
    assert calls == [20, 20, 20, 20]  # the kept chunk was not predicted again
    assert "sources/s)" in capsys.readouterr().out


def test_the_progress_lines_of_a_pool_give_the_rate_and_the_time_left(checkpoint, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PRECOMET_PROGRESS_INTERVAL", "0.01")
    monkeypatch.delenv("PRECOMET_PROGRESS", raising=False)
    monkeypatch.delenv("TQDM_DISABLE", raising=False)  # lines mode: stderr is not a terminal here
    slow = predict_sources

    def slowly(*args, **kwargs):
        time.sleep(0.02)
        return slow(*args, **kwargs)

    monkeypatch.setattr(pool_module, "predict_sources", slowly)
    path = _inputs(tmp_path)["text"]
    chunks = iter_source_chunks(path, chunk_size=20)
    predict_pool(load_estimator(checkpoint), chunks, write=lambda *_: None, n_items=60)
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("[progress] predict:")]
    assert lines and "source/s" in lines[0] and "s left" in lines[0] and "/60 source" in lines[0]
    assert lines[-1].startswith("[progress] predict: 60/60 source (100 %)")


def test_a_pool_read_in_chunks_warns_once_about_truncated_sources_with_the_totals(tmp_path, caplog):
    from precomet.estimator.pool import predict_in_chunks
    from tests.bad_inputs.cases_models import tiny_hf_checkpoint

    estimator = load_estimator(tiny_hf_checkpoint(tmp_path))
    long = " ".join(["hello world another source"] * 60)  # far over the tiny checkpoint's 64 tokens
    sources = [long if i % 3 == 0 else f"source {i}" for i in range(10)]
    with caplog.at_level(logging.WARNING):
        predict_in_chunks(estimator, sources, chunk_size=3)
    truncated = [r.getMessage() for r in caplog.records if "were truncated" in r.getMessage()]
    assert truncated == ["4 of 10 sources are longer than max_length=64 tokens and were truncated"]


# ---------------------------------------------------------------------------------------------- issue 61
@pytest.mark.slow  # a child process interrupted twice: ~5 s
def test_a_second_ctrl_c_after_the_first_was_reported_still_exits_130(checkpoint, tmp_path):
    """The second Ctrl-C, 0.3 s after the first, landed in the interpreter's teardown (after the first had printed its
    line) and killed the process by SIGINT (exit -2); nothing was half-written then, and nothing is now."""
    path = _inputs(tmp_path)["text"]
    out, resume = tmp_path / "scores.jsonl", tmp_path / "resume"
    slow = (  # each chunk takes 0.3 s more; the real entry point, as the installed `precomet` runs it
        "import sys, time; import precomet.estimator.pool as p; real = p.predict_sources;"
        "p.predict_sources = lambda *a, **k: (time.sleep(0.3), real(*a, **k))[1];"
        "import precomet.__main__ as entry; entry.run()"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "PRECOMET_PROGRESS": "0"}
    args = _cli(checkpoint, path, out, "--chunk-size", "6", "--batch-size", "4", "--resume-dir", str(resume))
    child = subprocess.Popen([sys.executable, "-c", slow, *args], env=env, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while len(list(resume.glob("*.npz"))) < 2 and time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.02)
    child.send_signal(signal.SIGINT)
    time.sleep(0.3)
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 130, err.decode()
    assert b"interrupted; no output was written" in err and not out.exists()
    assert main(args) == 0 and len(out.read_text().splitlines()) == 61  # the kept chunks resume


def _full_disk(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # as a write reports it: no file name


@pytest.mark.parametrize("where", ["chunk", "lock"])
def test_a_full_disk_under_the_resume_folder_names_the_folder(checkpoint, tmp_path, monkeypatch, capsys, where):
    """``predict --resume-dir`` on a full disk said only "No space left on device": a chunk file, or the few bytes
    of the folder's lock, that do not fit now name the folder (and the file)."""
    import precomet.outputs.lock as lock_module

    if where == "chunk":
        monkeypatch.setattr(pool_module.np, "savez", _full_disk)
    else:
        monkeypatch.setattr(lock_module.os, "pwrite", _full_disk)
    path = _inputs(tmp_path)["text"]
    out, resume = tmp_path / "scores.jsonl", tmp_path / "resume"
    options = ["--chunk-size", "20", "--resume-dir", str(resume), "--no-cache"]  # the encoder cache: its own message
    assert main(_cli(checkpoint, path, out, *options)) == 2
    err = capsys.readouterr().err
    assert f"--resume-dir {resume}" in err and "No space left on device" in err and not out.exists()
    assert ("cannot keep the chunk" if where == "chunk" else f"cannot write its lock file {resume}") in err
