"""Work on several cores gives the numbers one core gives (precomet.parallel, run_benchmark(..., workers=))."""

import os

import numpy as np
import pytest

from precomet.benchmark import BenchmarkPlan, run_benchmark
from precomet.errors import PrecometError
from precomet.parallel import check_workers, default_workers, map_forked
from precomet.simulate import simulate_campaign
from tests.conftest import untimed_json


def _pid_and_square(x: int) -> tuple[int, int]:
    return os.getpid(), x * x


def test_map_forked_keeps_the_order_and_uses_other_processes():
    seen: list[int] = []
    found = map_forked(_pid_and_square, range(12), workers=2, done=lambda result: seen.append(result[1]))
    assert [square for _, square in found] == [x * x for x in range(12)] == seen
    pids = {pid for pid, _ in found}
    assert os.getpid() not in pids and 1 <= len(pids) <= 2  # forked workers did it (how it splits is their race)
    alone = map_forked(_pid_and_square, range(3), workers=1)
    assert {pid for pid, _ in alone} == {os.getpid()}


def test_workers_are_checked(monkeypatch):
    for bad in (0, -1, True, 1.5, "2"):
        with pytest.raises(PrecometError, match="whole number of processes") as err:
            check_workers(bad)  # type: ignore[arg-type]
        assert err.value.param == "workers"
    monkeypatch.setenv("PRECOMET_WORKERS", "3")
    assert check_workers(None) == default_workers() == 3
    monkeypatch.setenv("PRECOMET_WORKERS", "zero")
    with pytest.raises(PrecometError, match="PRECOMET_WORKERS='zero'"):
        default_workers()


def _surface(texts: list[str]) -> np.ndarray:
    return np.array([[len(t), t.count(" "), sum(c in "aeiou" for c in t)] for t in texts], dtype=float)


@pytest.mark.slow  # over 2 s (make test-fast leaves it to make test)
@pytest.mark.parametrize("budget_unit", ["items", "cost"])
def test_the_benchmark_is_the_same_on_one_core_and_on_two(budget_unit):
    campaign = simulate_campaign(n_items=60, n_systems=5, seed=2)
    plan = BenchmarkPlan(
        methods=["metric_var", "metric_avg", "kmeans"],
        metric="MetricSim",
        props=[0.2, 0.4],
        seeds=30,
        permutations=50,
        oracle_candidates=5,
        budget_unit=budget_unit,
        method_options={"kmeans": {"encoder": _surface, "n_init": 1}},
    )
    external = {"given": np.arange(60.0)[::-1]}
    one = run_benchmark(campaign, plan, external=external, workers=1, progress=False)
    two = run_benchmark(campaign, plan, external=external, workers=2, progress=False)
    assert untimed_json(one) == untimed_json(two)
    assert list(two.methods) == ["metric_var", "metric_avg", "kmeans", "given"] and two.oracle is not None


def _inside_a_pool_worker(_: int) -> list[int]:
    return [pid for pid, _ in map_forked(_pid_and_square, range(4), workers=2)]


def test_inside_a_daemonic_worker_it_is_the_plain_loop():
    import multiprocessing

    with multiprocessing.get_context("fork").Pool(1) as pool:
        (pids,) = pool.map(_inside_a_pool_worker, [0])
    assert len(set(pids)) == 1 and os.getpid() not in pids  # the worker computed all four itself, no children


LATE_WORKER = """
import os, signal, sys, time
import precomet.parallel as parallel

signal.signal(signal.SIGTERM, lambda signum, frame: None)  # a parent that defers SIGTERM, as the CLI does
start = parallel._quiet_signals

def second_starts_late(*args):  # the first worker to start does all the work; the second is not ready yet
    try:
        os.close(os.open(sys.argv[1], os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        time.sleep(1.0)
    start(*args)

parallel._quiet_signals = second_starts_late

def fail_at_first(result):
    raise RuntimeError("stopped")

if sys.argv[2] == "done":
    print(parallel.map_forked(abs, [-1, -2], workers=2))
else:
    try:
        parallel.map_forked(abs, [-1, -2], workers=2, done=fail_at_first)
    except RuntimeError as err:
        print(err)
"""


@pytest.mark.parametrize("ending", ["done", "error"])
def test_a_worker_that_starts_late_never_hangs_the_pool(tmp_path, ending):
    # regression: the pool's SIGTERM reached a worker before it had its own handlers; the parent's deferring
    # handler swallowed it and the worker waited for work forever (the CI run that never ended)
    import signal
    import subprocess
    import sys

    child = subprocess.Popen(
        [sys.executable, "-c", LATE_WORKER, str(tmp_path / "first"), ending],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # a hung pool is killed whole below, its workers too
    )
    try:
        out, err = child.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        pytest.fail("the pool hung: a worker that started late waited for work forever")
    assert child.returncode == 0, err
    assert out.strip() == ("[1, 2]" if ending == "done" else "stopped")
