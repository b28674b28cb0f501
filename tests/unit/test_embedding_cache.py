"""Issue 24: the in-process embedding cache encodes each text once per process (encoder calls counted): a second
embed of the same texts calls no model, a changed text or another encoder does, results are copies, the bound
evicts, and a k-means benchmark encodes each source once across all budgets.

Issue 20: a damaged embedding cache file (truncated, garbage, another shape, length or dtype, NaN vectors, an
object array that would need unpickling, a lone ``.npy``) is reported once with a warning naming the file,
removed, recomputed, and saved as a new segment: the run succeeds and the next one reads the cache silently.
A cache folder that is a file is refused by name. Covered at the library level (:func:`encode_cached`) and
through the CLI for the diversity and DiffUse utilities (the sentence encoder replaced by a stub)."""

from __future__ import annotations

import hashlib
import io
import logging
import zipfile

import numpy as np
import pytest

from precomet.cli import main
from precomet.encoders import clear_embedding_cache, disk, encode_cached
from precomet.encoders.memory import ENV, MEMORY
from precomet.errors import PrecometError
from tests.bad_inputs import GOOD
from tests.conftest import Counting


def _key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def _npz(**arrays) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def _npy(array) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


# ------------------------------------------------------------------------------------ the in-process cache
class Other(Counting):
    """Another encoder (its own identity) with the same vectors."""

    name = "other"


def test_a_second_embed_of_the_same_texts_calls_no_model(monkeypatch):
    first = encode_cached(Counting(), ["aa", "b", "aa"])
    encoder = Counting()
    again = encode_cached(encoder, ["b", "aa"])
    assert encoder.seen == [] and again.tolist() == [[1, 0], [2, 2]]
    monkeypatch.setenv(ENV, "0")
    assert np.array_equal(encode_cached(Counting(), ["aa", "b", "aa"]), first)  # bit-identical to an uncached call


def test_a_changed_text_or_another_encoder_is_encoded():
    encode_cached(Counting(), ["aa", "b"])
    encoder = Counting()
    assert encode_cached(encoder, ["aa", "ca"]).tolist() == [[2, 2], [2, 1]]
    assert encoder.seen == ["ca"]
    other = Other()
    encode_cached(other, ["aa", "b"])
    assert sorted(other.seen) == ["aa", "b"]


def test_embed_texts_reuses_the_cache_per_model(stub_sentence_encoder):
    from precomet.utilities.embed import embed_texts

    first = embed_texts(["one", "two", "one"], encoder="stub-a")
    assert stub_sentence_encoder == [2]
    assert np.array_equal(embed_texts(["two", "one"], encoder="stub-a"), first[[1, 0]])
    assert stub_sentence_encoder == [2]
    embed_texts(["one", "two"], encoder="stub-b")
    assert stub_sentence_encoder == [2, 2]


def test_mutating_a_result_does_not_change_the_next():
    first = encode_cached(Counting(), ["aa", "b"])
    first[:] = 99.0
    encoder = Counting()
    assert encode_cached(encoder, ["aa", "b"]).tolist() == [[2, 2], [1, 0]] and encoder.seen == []


@pytest.fixture
def memory_only():
    """The shared disk cache skipped, so that only the in-process cache can spare an encoding."""
    with disk.no_disk_cache():
        yield


def test_the_bound_drops_the_least_recently_used(monkeypatch, memory_only):
    monkeypatch.setenv(ENV, str(3 * 8 / 2**20))  # three 2-d float32 vectors
    encode_cached(Counting(), ["a", "bb", "ccc"])
    assert len(MEMORY) == 3 and MEMORY.nbytes == 24
    encode_cached(Counting(), ["a"])  # "a" used again: "bb" is now the least recently used
    encode_cached(Counting(), ["dddd"])
    assert len(MEMORY) == 3 and MEMORY.nbytes == 24
    encoder = Counting()
    encode_cached(encoder, ["a", "ccc", "dddd"])
    assert encoder.seen == []
    encode_cached(encoder, ["bb"])
    assert encoder.seen == ["bb"]


def test_an_infinite_bound_keeps_everything(monkeypatch):
    from precomet.encoders.memory import limit_bytes

    monkeypatch.setenv(ENV, "inf")
    assert limit_bytes() > 2**60
    encoder = Counting()
    encode_cached(encoder, ["a", "b"])
    encode_cached(encoder, ["a", "b"])
    assert sorted(encoder.seen) == ["a", "b"]


def test_the_cache_is_disabled_by_zero_and_cleared(monkeypatch, memory_only):
    encode_cached(Counting(), ["aa"])
    encoder = Counting()
    encode_cached(encoder, ["aa"])
    assert encoder.seen == []
    clear_embedding_cache()
    encode_cached(encoder, ["aa"])
    assert encoder.seen == ["aa"] and len(MEMORY) == 1
    monkeypatch.setenv(ENV, "0")
    encode_cached(encoder, ["aa"])
    assert encoder.seen == ["aa", "aa"]
    monkeypatch.setenv(ENV, "lots")
    with pytest.raises(PrecometError, match=f"{ENV}='lots': expected a number of MiB >= 0"):
        encode_cached(encoder, ["aa"])


def test_a_kmeans_benchmark_encodes_each_source_once(monkeypatch):
    from precomet.benchmark import BenchmarkPlan, run_benchmark
    from precomet.encoders import ENCODERS
    from precomet.simulate import simulate_campaign

    encoded: list[str] = []

    class Recording(Counting):
        name = "recording"
        dim = 8

        def _encode_batch(self, texts):
            encoded.extend(texts)
            return np.stack([np.random.default_rng(list(t.encode())).normal(size=8) for t in texts])

    monkeypatch.setitem(ENCODERS, "minilm", Recording)
    campaign = simulate_campaign(n_items=40, n_systems=4, seed=1)
    with disk.no_disk_cache():
        result = run_benchmark(
            campaign, BenchmarkPlan(methods=["kmeans"], props=[0.1, 0.3, 0.5], seeds=3), progress=False
        )
    assert "kmeans" in result.methods
    assert sorted(encoded) == sorted(set(campaign.src))


TEXTS = ["aa", "b"]
KEYS = np.array([_key(t) for t in TEXTS])


def _from_good(good: bytes, change) -> bytes:
    """The cache ``good`` with ``change(arrays)`` applied (empty bytes where ``good`` is not a cache: listing)."""
    try:
        with np.load(io.BytesIO(good), allow_pickle=False) as stored:
            arrays = dict(stored)
    except Exception:  # noqa: BLE001 -- the placeholder used to list the damages
        return b""
    change(arrays)
    return _npz(**arrays)


def _damages(good: bytes) -> dict[str, bytes]:
    """Each damage keeps a ``check`` array, so that the check it is meant for is the one that fails, and the text
    keys of ``good`` where it has any (a segment's vectors are read only when its keys are wanted)."""
    check = np.zeros(32, dtype=np.uint8)
    try:
        with np.load(io.BytesIO(good), allow_pickle=False) as stored:
            keys = stored["keys"]
    except Exception:  # noqa: BLE001 -- the placeholder used to list the damages
        keys = KEYS
    vectors = np.ones((len(keys), 2), dtype=np.float32)
    return {
        "truncated": good[: len(good) // 2],
        "garbage": b"\x00\xff garbage \x13" * 40,
        "empty": b"",
        "wrong-vector-length": _npz(keys=keys, vectors=np.ones((len(keys), 3), dtype=np.float32), check=check),
        "fewer-vectors-than-keys": _npz(keys=keys, vectors=vectors[1:], check=check),
        "text-vectors": _npz(keys=keys, vectors=vectors.astype(str), check=check),
        "nan-vectors": _npz(keys=keys, vectors=np.where(np.eye(len(keys), 2) > 0, np.nan, vectors), check=check),
        "object-array": _npz(keys=np.array(list(keys), dtype=object), vectors=vectors, check=check),
        "lone-npy": _npy(np.ones((2, 2), dtype=np.float32)),
        "other-arrays": _npz(a=np.ones(3)),
        "keys-not-hashes": _npz(keys=np.array(["x", "y"]), vectors=np.ones((2, 2), dtype=np.float32), check=check),
        # issue 34: vectors that look valid but are not the ones encoded
        "rescaled-vectors": _from_good(good, lambda a: a.update(vectors=a["vectors"] * 2)),
        "shuffled-vectors": _from_good(good, lambda a: a.update(vectors=a["vectors"][::-1].copy())),
        "another-encoders-cache": _from_good(
            good, lambda a: a.update(check=disk._checksum("other-0123456789abcdef", a["keys"], a["vectors"]))
        ),
        "unsigned-by-precomet-0.7": _from_good(good, lambda a: a.pop("check")),
        # issue 51: a 2 kB segment whose header declares 2^36 x 384 vectors (numpy would try to allocate them)
        "header-declares-a-huge-array": _huge_header(good),
    }


def _huge_header(good: bytes) -> bytes:
    """``good`` with its vectors' header declaring ``(2**36, 384)`` float32 over the few bytes it holds."""
    try:
        with np.load(io.BytesIO(good)) as stored:
            arrays = {name: stored[name] for name in stored.files}
    except Exception:  # noqa: BLE001 -- the placeholder used to list the damages
        return b""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, array in arrays.items():
            member = io.BytesIO()
            if name == "vectors":
                header = {"descr": "<f4", "fortran_order": False, "shape": (2**36, 384)}
                np.lib.format.write_array_header_1_0(member, header)
                member.write(array.tobytes())
            else:
                np.save(member, array)
            archive.writestr(f"{name}.npy", member.getvalue())
    return out.getvalue()


@pytest.fixture
def disk_only(monkeypatch):
    """The in-process cache disabled, so that every call reads the on-disk cache."""
    monkeypatch.setenv(ENV, "0")


def _good_cache(folder) -> bytes:
    encode_cached(Counting(), TEXTS, cache_dir=folder)
    (path,) = folder.glob("counting-*/*.npz")
    return path.read_bytes()


@pytest.mark.parametrize("damage", list(_damages(b"x" * 100)))
def test_damaged_cache_is_reported_once_recomputed_and_rewritten(damage, tmp_path, caplog, disk_only):
    good = _good_cache(tmp_path / "reference")
    reference = next((tmp_path / "reference").glob("counting-*/*.npz"))
    folder = tmp_path / "cache"
    path = folder / reference.parent.name / reference.name
    path.parent.mkdir(parents=True)
    path.write_bytes(_damages(good)[damage])
    encoder = Counting()
    with caplog.at_level(logging.WARNING):
        vectors = encode_cached(encoder, ["b", "aa"], cache_dir=folder)
    assert vectors.tolist() == [[1, 0], [2, 2]]
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and str(path) in warnings[0].getMessage(), [r.getMessage() for r in warnings]
    assert sorted(encoder.seen) == ["aa", "b"]
    # the damaged segment removed, one good one written with the folder's metadata, no temporary left
    (segment,) = (p for p in path.parent.iterdir() if p.name != disk.META)
    assert disk.segments(path.parent) == [segment] and (path.parent / disk.META).is_file()
    caplog.clear()
    again = Counting()
    with caplog.at_level(logging.WARNING):
        assert encode_cached(again, ["aa", "b"], cache_dir=folder).tolist() == [[2, 2], [1, 0]]
    assert again.seen == [] and not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_damaged_cache_is_rewritten_even_when_the_run_is_interrupted_later(tmp_path, disk_only):
    """A damaged segment is removed when it is read, whatever the run does next; the texts saved meanwhile stay."""

    folder = tmp_path / "cache"
    _good_cache(folder)
    (path,) = folder.glob("counting-*/*.npz")
    path.write_bytes(b"garbage")

    class Failing(Counting):
        def _encode_batch(self, texts):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        encode_cached(Failing(), ["aa", "new"], cache_dir=folder)
    assert not path.exists()
    encode_cached(Counting(), ["new"], cache_dir=folder)
    again = Counting()
    encode_cached(again, ["new"], cache_dir=folder)
    assert again.seen == [] and len(disk.segments(path.parent)) == 1


def test_cache_folder_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "cache").write_text("I am a file")
    with pytest.raises(PrecometError, match="cache folder .*cache is a file"):
        encode_cached(Counting(), TEXTS, cache_dir=tmp_path / "cache")
    with pytest.raises(PrecometError, match="lies under .*cache, a file"):
        encode_cached(Counting(), TEXTS, cache_dir=tmp_path / "cache" / "deeper")


def test_cache_file_that_is_a_folder_is_refused(tmp_path, disk_only):
    folder = tmp_path / "cache"
    _good_cache(folder)
    (path,) = folder.glob("counting-*/*.npz")
    path.unlink()
    path.mkdir()
    with pytest.raises(PrecometError, match="segment is a folder or a special file"):
        encode_cached(Counting(), TEXTS, cache_dir=folder)


# ---------------------------------------------------------------------------------------------- through the CLI
COMMANDS = {
    "diversity": "utilities --data items.jsonl --method diversity --option cache_dir=cache -o {o}",
    "diffuse": "utilities --data items.jsonl --method diffuse --budget 2 --option cache_dir=cache -o {o}",
}


@pytest.mark.parametrize(
    "damage", ["truncated", "garbage", "wrong-vector-length", "nan-vectors", "object-array", "rescaled-vectors"]
)
@pytest.mark.parametrize("command", list(COMMANDS))
def test_cli_run_with_a_damaged_cache_succeeds_and_repairs_it(
    command, damage, tmp_path, monkeypatch, caplog, stub_sentence_encoder
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "items.jsonl").write_text(GOOD)
    argv = COMMANDS[command].format(o="first.jsonl").split()
    assert main(argv) == 0
    (path,) = (tmp_path / "cache").glob("*/*.npz")
    good = path.read_bytes()
    expected = (tmp_path / "first.jsonl").read_text()
    path.write_bytes(_damages(good)[damage])
    calls = len(stub_sentence_encoder)
    caplog.clear()
    clear_embedding_cache()  # each CLI run is a new process
    with caplog.at_level(logging.WARNING):
        assert main(COMMANDS[command].format(o="second.jsonl").split()) == 0
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and path.name in warnings[0] and "damaged encoder cache segment" in warnings[0], warnings
    assert len(stub_sentence_encoder) == calls + 1
    signature_free = [line for line in expected.splitlines() if "signature" not in line]
    assert [line for line in (tmp_path / "second.jsonl").read_text().splitlines() if "signature" not in line] == (
        signature_free
    )
    caplog.clear()
    clear_embedding_cache()
    with caplog.at_level(logging.WARNING):
        assert main(COMMANDS[command].format(o="third.jsonl").split()) == 0
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(stub_sentence_encoder) == calls + 1


def test_cli_cache_folder_that_is_a_file_exits_2(tmp_path, monkeypatch, capsys, stub_sentence_encoder):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "items.jsonl").write_text(GOOD)
    (tmp_path / "cache").write_text("a file")
    assert main(COMMANDS["diversity"].format(o="u.jsonl").split()) == 2
    err = capsys.readouterr().err
    assert "cache folder cache is a file" in err and "internal error" not in err
    assert not (tmp_path / "u.jsonl").exists()


class Bounded(Counting):
    max_chars = 10


def test_a_text_longer_than_the_encoders_bound_is_cut_with_a_warning_and_keyed_as_cut(tmp_path, caplog):
    """Issue 51: a 2 MB single-line source made e5-small read ~800 windows (killed at 400 s); an encoder with
    ``max_chars`` now reads the first ``max_chars`` characters, says so, and caches under the cut text's key."""
    clear_embedding_cache()
    encoder = Bounded()
    with caplog.at_level(logging.WARNING):
        first = encode_cached(encoder, ["a" * 2_000_000, "short"], cache_dir=tmp_path)
    assert sorted(encoder.seen) == ["a" * 10, "short"] and first[0].tolist() == [10.0, 10.0]
    assert "1 text(s) longer than 10 characters: counting reads the first 10 of each" in caplog.text
    clear_embedding_cache()
    again = Bounded()
    assert encode_cached(again, ["a" * 10], cache_dir=tmp_path).tolist() == [[10.0, 10.0]] and again.seen == []


def test_e5_small_reads_a_bounded_number_of_windows():
    from precomet.encoders.e5 import E5Small

    assert E5Small.max_chars is not None and E5Small.max_chars <= 40 * 510  # ≤ 40 windows of one character each


def test_a_cache_folder_that_links_to_itself_is_named_as_such(tmp_path, monkeypatch, caplog):
    """Issue 51: an encoder's cache folder linking to itself was called "a file" (or failed naming its metadata);
    given explicitly it is refused naming the link, the default cache is skipped with a warning."""
    clear_embedding_cache()
    encoder = Counting()
    folder = tmp_path / f"{encoder.name}-{encoder.cache_key()}"
    folder.symlink_to(folder)
    with pytest.raises(PrecometError, match="is a symbolic link that leads nowhere"):
        encode_cached(encoder, ["aa"], cache_dir=tmp_path)
    monkeypatch.delenv(disk.ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    (tmp_path / "xdg").mkdir()
    (tmp_path / "xdg" / "precomet").symlink_to(tmp_path / "xdg" / "precomet")
    with caplog.at_level(logging.WARNING):
        assert encode_cached(encoder, ["aa"]).tolist() == [[2.0, 2.0]]
    assert "leads nowhere" in caplog.text and "running without it" in caplog.text


def test_encode_batches_texts_of_similar_length_and_returns_input_order():
    """Batches are cut from the texts sorted by length (little padding: twice MiniLM's texts/s on WMT outputs);
    the vectors come back in input order."""
    encoder = Counting()
    texts = ["aaaa", "a", "aaa", "b", "aa"]
    vectors = encoder.encode(texts)
    assert encoder.seen == ["a", "b", "aa", "aaa", "aaaa"]  # batches of 2: (a, b), (aa, aaa), (aaaa)
    assert vectors[:, 0].tolist() == [4.0, 1.0, 3.0, 1.0, 2.0]
