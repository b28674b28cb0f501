"""``precomet predict --shard-dir`` as a 2-process CPU (gloo) torchrun job on a tiny untrained checkpoint, and the
shard directory read back as one pool."""

from __future__ import annotations

import json
import os
import random
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from precomet.cli import main
from precomet.errors import PrecometError
from precomet.io.utility_files import read_utilities
from tests.bad_inputs import SHIPPED
from tests.bad_inputs.cases_models import tiny_hf_checkpoint
from tests.conftest import REPO

pytestmark = pytest.mark.slow  # one torchrun job shared by the file (~12 s on 2 busy cores)
WORDS = "the a cat dog sat on mat hello world another source runs quickly over lazy fox".split()
N = 37


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> dict:
    """A 37-source pool scored by ``torchrun --nproc_per_node=2 -m precomet predict --shard-dir`` and, for
    reference, by the single-process path."""
    from precomet.estimator import load_estimator, predict_sources

    work = tmp_path_factory.mktemp("shards")
    checkpoint = tiny_hf_checkpoint(work)
    draw = random.Random(0)
    sources = [" ".join(draw.choice(WORDS) for _ in range(draw.randint(1, 20))) for _ in range(N)]
    (work / "src.txt").write_text("\n".join(sources) + "\n")
    done = _torchrun_shards(work, "ckpt")
    single = predict_sources(load_estimator(checkpoint), sources, batch_size=4)
    return {"work": work, "shards": work / "shards", "single": single, "stdout": done.stdout}


def _torchrun_shards(work: Path, checkpoint: str | Path) -> subprocess.CompletedProcess:
    """``torchrun --nproc_per_node=2 -m precomet predict --shard-dir shards`` on ``work/src.txt`` (gloo, CPU)."""
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "-m", "precomet"]
    options = ["--checkpoint", str(checkpoint), "--data", "src.txt", "--batch-size", "4"]
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    env["PRECOMET_CACHE"] = str(work / "encoder-cache")
    sharded = ["--shard-dir", "shards", "--devices", "2", "--strategy", "ddp", "--accelerator", "cpu"]
    done = subprocess.run(
        [*command, "predict", *options, *sharded], cwd=work, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def _slurm_job_id() -> str:
    """A job id that Lightning's SLURMEnvironment turns into a free port (15000 + the id's last 4 digits); srun
    gives every task of a job the same SLURM_JOB_ID."""
    draw = random.Random()
    for _ in range(200):
        port = draw.randint(15000, 24999)
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        return f"9{port - 15000:04d}"
    raise RuntimeError("no free port in 15000-24999")


def test_the_slurm_recipe_on_two_emulated_srun_tasks_matches_one(run, tmp_path):
    """docs/estimator.md's sbatch recipe, run as written on one machine: two tasks with the variables ``srun
    --nodes=1 --ntasks-per-node=2`` sets (no MASTER_ADDR / MASTER_PORT: Lightning's SLURMEnvironment takes them from
    the node list and the job id), each running the recipe's command with ``--devices 2 --num-nodes 1`` on CPU."""
    work = tmp_path
    shutil.copytree(run["work"] / "ckpt", work / "ckpt")
    shutil.copy(run["work"] / "src.txt", work / "src.txt")
    job = _slurm_job_id()
    launcher = ("SLURM_", "MASTER_", "TORCHELASTIC", "LOCAL_", "RANK", "WORLD_SIZE", "GROUP_RANK")
    base = {k: v for k, v in os.environ.items() if not k.startswith(launcher)}
    base |= {"PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    base |= {"PRECOMET_CACHE": str(work / "encoder-cache"), "SLURM_JOB_ID": job, "SLURM_JOB_NAME": "precomet-predict"}
    base |= {"SLURM_NTASKS": "2", "SLURM_NTASKS_PER_NODE": "2", "SLURM_NNODES": "1", "SLURM_NODELIST": "localhost"}
    command = [sys.executable, "-m", "precomet", "predict", "--checkpoint", "ckpt", "--data", "src.txt"]
    command += ["--shard-dir", "shards", "--devices", "2", "--num-nodes", "1", "--strategy", "ddp"]
    command += ["--accelerator", "cpu", "--batch-size", "4"]
    tasks = [
        subprocess.Popen(
            command,
            cwd=work,
            env={**base, "SLURM_PROCID": str(rank), "SLURM_LOCALID": str(rank), "SLURM_NODEID": "0"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rank in range(2)
    ]
    outputs = [task.communicate(timeout=300) for task in tasks]
    assert [task.returncode for task in tasks] == [0, 0], "\n".join(err[-3000:] for _, err in outputs)
    ids, values, _ = read_utilities(work / "shards")
    assert ids == [str(i) for i in range(1, N + 1)]
    np.testing.assert_allclose(values, run["single"], atol=1e-6)
    manifest = json.loads((work / "shards" / "shards.json").read_text())
    assert manifest["world_size"] == 2 and [s["rows"] for s in manifest["shards"]] == [19, 18]
    assert outputs[0][0].count("wrote 37 utilities in shards") == 1 and "wrote" not in outputs[1][0]


def test_the_shipped_checkpoint_on_two_torchrun_processes_matches_one(tmp_path):
    """Issue 33: ``--shard-dir`` with the shipped checkpoint (an ensemble of heads on the e5-small sentence encoder,
    run by its own engine) gives the single-process predictions, as a Hugging Face encoder checkpoint does."""
    from precomet.estimator import load_estimator, predict_sources

    draw = random.Random(1)
    sources = [" ".join(draw.choice(WORDS) for _ in range(draw.randint(1, 20))) for _ in range(N)]
    sources[5] = "Der schnelle braune Fuchs springt über den faulen Hund."
    (tmp_path / "src.txt").write_text("\n".join(sources) + "\n")
    _torchrun_shards(tmp_path, SHIPPED)
    ids, values, signature = read_utilities(tmp_path / "shards")
    assert ids == [str(i) for i in range(1, N + 1)] and signature["tool"] == "precomet predict"
    single = predict_sources(load_estimator(SHIPPED), sources)
    np.testing.assert_allclose(values, single, atol=1e-6)
    assert np.ptp(values) > 0


def test_the_shipped_checkpoint_on_two_ddp_spawn_processes_matches_one(tmp_path, monkeypatch, capsys):
    """``--strategy ddp_spawn`` pickles the estimator for its workers: the shipped one (its e5-small encoder held a
    module) could not be, so docs/estimator.md's "ddp_spawn also works" failed with the default checkpoint."""
    from precomet.estimator import load_estimator, predict_sources

    monkeypatch.setenv("PRECOMET_CACHE", str(tmp_path / "cache"))  # each worker encodes: nothing from a cache
    sources = [f"{WORDS[i % len(WORDS)]} {WORDS[(3 * i) % len(WORDS)]} number {i}" for i in range(12)]
    (tmp_path / "src.txt").write_text("\n".join(sources) + "\n")
    argv = ["predict", "--checkpoint", str(SHIPPED), "--data", str(tmp_path / "src.txt"), "--no-cache"]
    spawn = ["--devices", "2", "--strategy", "ddp_spawn", "--accelerator", "cpu"]
    assert main([*argv, "-o", str(tmp_path / "out.jsonl"), *spawn]) == 0, capsys.readouterr().err[-2000:]
    _, values, _ = read_utilities(tmp_path / "out.jsonl")
    np.testing.assert_allclose(values, predict_sources(load_estimator(SHIPPED), sources), atol=1e-5)  # batches differ


def test_two_torchrun_processes_merge_to_the_single_process_predictions(run):
    """Equal up to float32 rounding (atol 1e-6), not bit for bit: a source is padded to the longest source of
    its batch, and the batches of a shard are not those of the whole pool."""
    ids, values, signature = read_utilities(run["shards"])
    assert ids == [str(i) for i in range(1, N + 1)]
    np.testing.assert_allclose(values, run["single"], atol=1e-6)
    assert signature["tool"] == "precomet predict" and "shard" not in signature
    manifest = json.loads((run["shards"] / "shards.json").read_text())
    assert manifest["world_size"] == 2 and [s["rows"] for s in manifest["shards"]] == [19, 18]
    odd, _, odd_signature = read_utilities(run["shards"] / "shard-00001-of-00002.jsonl")  # a utilities file itself
    assert odd == [str(i) for i in range(2, N + 1, 2)] and odd_signature["shard"] == 1
    assert run["stdout"].count("wrote 37 utilities in shards") == 1  # rank 0 only


def _copy(run, tmp_path) -> Path:
    return Path(shutil.copytree(run["shards"], tmp_path / "shards"))


def _edit_shard(folder: Path, rank: int, edit) -> None:
    path = folder / f"shard-{rank:05d}-of-00002.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    edit(rows)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def _missing(folder: Path) -> None:
    (folder / "shard-00001-of-00002.jsonl").unlink()


def _duplicate(folder: Path) -> None:
    _edit_shard(folder, 1, lambda rows: rows[1].update(id="1"))  # "1" is the first row of shard 0


def _other_checkpoint(folder: Path) -> None:
    _edit_shard(folder, 1, lambda rows: rows[0]["signature"].update(checkpoint="other-ckpt"))


def _unfinished(folder: Path) -> None:
    (folder / "shards.json").unlink()


def _stray(folder: Path) -> None:
    shutil.copy(folder / "shard-00000-of-00002.jsonl", folder / "shard-00000-of-00003.jsonl")


@pytest.mark.parametrize(
    "damage, message",
    [
        (_missing, "1 of 2 shard(s) missing, e.g. shard-00001-of-00002.jsonl"),
        (_duplicate, "id '1' is in two shards"),
        (_other_checkpoint, "from another run (checkpoint 'other-ckpt', the manifest's 'ckpt')"),
        (_unfinished, "no shards.json"),
        (_stray, "are not in shards.json"),
    ],
)
def test_reader_refuses_a_damaged_shard_directory(run, tmp_path, damage, message):
    folder = _copy(run, tmp_path)
    read_utilities(folder)  # intact, the copy reads
    damage(folder)
    with pytest.raises(PrecometError) as err:
        read_utilities(folder)
    assert message in str(err.value)


def test_select_on_a_shard_directory_is_select_on_the_single_process_file(run, tmp_path):
    from precomet.io.utility_files import write_utilities

    single = tmp_path / "single.jsonl"
    write_utilities(single, [str(i) for i in range(1, N + 1)], run["single"], read_utilities(run["shards"])[2])
    subsets = []
    for scores in (single, run["shards"]):
        out = tmp_path / f"subset-{scores.name}.jsonl"
        argv = ["select", "--data", str(run["work"] / "src.txt"), "--utility-file", str(scores), "--budget", "9"]
        assert main([*argv, "-o", str(out)]) == 0
        subsets.append([json.loads(line)["id"] for line in out.read_text().splitlines()])
    assert subsets[0] == subsets[1] and len(subsets[0]) == 9
