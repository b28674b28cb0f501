"""Item response theory on continuous scores with stock py-irt 0.7.1 (paper Eq. 7–9, 14–16).

Model (py-irt's ``4pl``, the default, which is the paper's Eq. 8): the expected response of system ``s``
on item ``i`` is ``c_i · σ(a_i (θ_s − b_i))`` with difficulty ``b``, discrimination ``a > 0`` (log-normal),
feasibility ``c ∈ [0, 1]`` and ability ``θ``; hierarchical normal priors; fitted by SVI (ELBO) with the
Bernoulli likelihood evaluated on continuous responses, i.e. the cross-entropy
``r log p + (1 − r) log(1 − p)``. ``2pl`` (``c = 1``) and ``1pl`` (``a = 1, c = 1``) are available too.

Responses: the ``N × S`` score matrix is rescaled to [0, 1] **per campaign** (over all its cells),
``rescale="minmax"`` (default): ``(x − min) / (max − min)``; ``rescale="rank"``: the mid-rank of each cell
among all cells divided by their count (robust to MQM's long tail). Scores must be higher = better.

pyro's validation flag (off during the fit: continuous values are outside Bernoulli's support), its param
store, the torch/numpy/random RNG states (``pyro.set_rng_seed``) and torch's thread count are changed only
inside :func:`_pyro_scope` and restored afterwards.
"""

from __future__ import annotations

import contextlib
import logging
import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

from precomet.campaign import Campaign
from precomet.errors import PrecometError
from precomet.io import jsonsafe
from precomet.io.text import read_json
from precomet.outputs.atomic import atomic_write
from precomet.progress import heartbeat
from precomet.signature import signature
from precomet.stats import rankdata

log = logging.getLogger(__name__)

MODELS = ("4pl", "2pl", "1pl")
RESCALES = ("minmax", "rank")
FIT_OPTIONS = {
    "model": "4pl",
    "epochs": 1000,
    "lr": 0.03,
    "lr_decay": 0.9999,
    "device": "cpu",
    "threads": 1,
    "rescale": "minmax",
    "params": None,
}
"""Options of every ``irt_*`` utility; ``params`` = fitted :class:`IrtParams` or a JSON path (skips the fit)."""

UTILITY_KINDS = {
    "diff": "IRT difficulty b (harder items first)",
    "disc": "IRT discrimination a (more discriminative items first)",
    "feas": "IRT feasibility c (items where good systems can reach full score first)",
    "diffdisc": "IRT a·b (Eq. 9)",
    "fic": "IRT Fisher information content summed over systems (Eq. 14–16)",
}


@dataclass(frozen=True, eq=False)
class IrtParams:
    """Fitted item and system parameters (point estimates = variational means)."""

    item_ids: tuple[str, ...]
    systems: tuple[str, ...]
    difficulty: np.ndarray
    discrimination: np.ndarray
    feasibility: np.ndarray
    ability: np.ndarray
    info: Mapping[str, Any] = field(default_factory=dict)

    def predict(self) -> np.ndarray:
        """Expected responses ``c_i σ(a_i (θ_s − b_i))`` (N × S, rescaled [0, 1] units)."""
        logits = self.discrimination[:, None] * (self.ability[None, :] - self.difficulty[:, None])
        return self.feasibility[:, None] / (1.0 + np.exp(-logits))

    def to_dict(self) -> dict[str, Any]:
        return {
            "item_ids": list(self.item_ids),
            "systems": list(self.systems),
            "difficulty": self.difficulty.tolist(),
            "discrimination": self.discrimination.tolist(),
            "feasibility": self.feasibility.tolist(),
            "ability": self.ability.tolist(),
            "info": dict(self.info),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> IrtParams:
        try:
            params = cls(
                item_ids=tuple(str(i) for i in data["item_ids"]),
                systems=tuple(str(s) for s in data["systems"]),
                difficulty=np.asarray(data["difficulty"], float),
                discrimination=np.asarray(data["discrimination"], float),
                feasibility=np.asarray(data["feasibility"], float),
                ability=np.asarray(data["ability"], float),
                info=dict(data.get("info", {})),
            )
        except (KeyError, TypeError, ValueError) as err:
            raise PrecometError(f"malformed IRT parameters: {err!r}") from None
        n = len(params.item_ids)
        if any(len(v) != n for v in (params.difficulty, params.discrimination, params.feasibility)) or len(
            params.ability
        ) != len(params.systems):
            raise PrecometError("malformed IRT parameters: array lengths do not match item_ids / systems")
        return params

    def to_json(self, path: str | Path) -> None:
        with atomic_write(path) as handle:
            jsonsafe.dump(self.to_dict(), handle)

    @classmethod
    def from_json(cls, path: str | Path) -> IrtParams:
        data = read_json(path)  # errors name the file
        try:
            return cls.from_dict(data)
        except PrecometError as err:
            raise PrecometError(f"{path}: {err}") from None


def irt_utilities(params: IrtParams, kind: str) -> np.ndarray:
    """THE sign conventions of the IRT utilities (higher = annotate first):

    * ``diff`` = ``+b``: harder items first (same direction as ``metric_avg``; subset2evaluate uses ``−b``);
    * ``disc`` = ``+a``: items that separate systems more sharply first (subset2evaluate uses ``−a``);
    * ``feas`` = ``+c`` (as subset2evaluate);
    * ``diffdisc`` = ``a · b`` (Eq. 9, as subset2evaluate);
    * ``fic`` = ``Σ_s a² σ(a(θ_s − b)) (1 − σ(a(θ_s − b)))`` (Eq. 14–16; ``c`` cancels in the second derivative
      of the log, equal to subset2evaluate's formula).
    """
    a, b, c = params.discrimination, params.difficulty, params.feasibility
    if kind == "diff":
        return b.copy()
    if kind == "disc":
        return a.copy()
    if kind == "feas":
        return c.copy()
    if kind == "diffdisc":
        return a * b
    if kind == "fic":
        p = 1.0 / (1.0 + np.exp(-a[:, None] * (params.ability[None, :] - b[:, None])))
        return (a[:, None] ** 2 * p * (1.0 - p)).sum(axis=1)
    raise PrecometError(f"unknown IRT utility {kind!r}; valid: {', '.join(UTILITY_KINDS)}")


def irt_utility_method(kind: str):
    """The registry function of ``irt_<kind>``: fit (or load ``params``), then :func:`irt_utilities`."""

    def method(
        campaign: Campaign, *, metric: str, budget: int | None, seed: int, options: Mapping[str, Any]
    ) -> np.ndarray:
        given = options["params"]
        if given is None:
            fit_options = {k: v for k, v in options.items() if k != "params"}
            check_model_fits(kind, str(fit_options.get("model", FIT_OPTIONS["model"])))
            params = fit_irt(campaign, metric=metric, seed=seed, **fit_options)
        else:
            params = given if isinstance(given, IrtParams) else IrtParams.from_json(given)
            fitted_on = params.info.get("metric")
            if fitted_on is not None and fitted_on != metric:
                raise PrecometError(
                    f"the IRT parameters were fitted on the score {fitted_on!r}, not on {metric!r}: use --metric"
                    f" {fitted_on} (metric={fitted_on!r}), or fit again without params"
                )
            check_model_fits(kind, str(params.info.get("model", FIT_OPTIONS["model"])))
            params = align_params(params, campaign)
        return irt_utilities(params, kind)

    method.__name__ = f"irt_{kind}"
    method.__doc__ = f"{UTILITY_KINDS[kind]}; see :func:`irt_utilities`."
    return method


FIXED_BY_MODEL = {"feas": ("2pl", "1pl"), "disc": ("1pl",), "diffdisc": ("1pl",)}
"""The IRT utilities that a model holds constant (``2pl`` fixes c = 1, ``1pl`` also a = 1): every item would tie."""


def check_model_fits(kind: str, model: str) -> None:
    """Refuse ``irt_<kind>`` on a ``model`` that fixes the parameter it reads (all items would get one value)."""
    if model in FIXED_BY_MODEL.get(kind, ()):
        fixed = "feasibility c = 1" if kind == "feas" else "discrimination a = 1"
        raise PrecometError(
            f"irt_{kind} on the {model} model: it fixes {fixed}, so every item would get the same utility;"
            " use model=4pl (the default)"
        )


def align_params(params: IrtParams, campaign: Campaign) -> IrtParams:
    """Item parameters reordered to the campaign's items (all must be present; same systems)."""
    if set(params.systems) != set(campaign.systems):
        raise PrecometError(
            f"IRT parameters were fitted on systems {list(params.systems)}, but campaign {campaign.name!r} has "
            f"{list(campaign.systems)}; fit again or pass the same systems"
        )
    lookup = {item_id: i for i, item_id in enumerate(params.item_ids)}
    missing = [i for i in campaign.ids if i not in lookup]
    if missing:
        raise PrecometError(
            f"IRT parameters lack {len(missing)} item(s) of campaign {campaign.name!r}, e.g. {missing[:3]}"
        )
    idx = np.array([lookup[i] for i in campaign.ids], dtype=int)
    return IrtParams(
        item_ids=tuple(campaign.ids),
        systems=params.systems,
        difficulty=params.difficulty[idx],
        discrimination=params.discrimination[idx],
        feasibility=params.feasibility[idx],
        ability=params.ability,
        info=params.info,
    )


def rescale_scores(matrix: np.ndarray, method: str = "minmax") -> np.ndarray:
    """Responses in [0, 1] from an ``N × S`` score matrix (see the module docstring)."""
    matrix = np.asarray(matrix, dtype=float)
    if method == "minmax":
        low, high = np.min(matrix), np.max(matrix)
        if not high > low:
            raise PrecometError(f"IRT: all scores equal ({low}); nothing to fit")
        return (matrix - low) / (high - low)
    if method == "rank":
        return (rankdata(matrix, axis=None).reshape(matrix.shape) - 0.5) / matrix.size
    raise PrecometError(f"IRT: unknown rescale {method!r}; valid: {', '.join(RESCALES)}")


def fit_irt(
    campaign: Campaign,
    *,
    metric: str,
    seed: int = 0,
    model: str = "4pl",
    epochs: int = 1000,
    lr: float = 0.03,
    lr_decay: float = 0.9999,
    device: str = "cpu",
    threads: int = 1,
    rescale: str = "minmax",
) -> IrtParams:
    """Fit py-irt on the rescaled ``score`` matrix of a complete campaign; deterministic for a seed on CPU."""
    if model not in MODELS:
        raise PrecometError(f"IRT: unknown model {model!r}; valid: {', '.join(MODELS)}")
    if device not in ("cpu", "cuda"):
        raise PrecometError(f"IRT: device must be 'cpu' or 'cuda', got {device!r}")
    if device == "cuda" and not _cuda_available():
        raise PrecometError("IRT: device 'cuda' asked for, but torch sees no CUDA device here; use device=cpu")
    if not (lr > 0 and int(epochs) >= 1 and int(threads) >= 1):
        raise PrecometError(
            f"IRT: need lr > 0, epochs ≥ 1, threads ≥ 1 (got lr={lr}, epochs={epochs}, threads={threads})"
        )
    responses = rescale_scores(campaign.score(metric), rescale)
    dataset = _dataset(responses, len(campaign.systems))
    import py_irt.models  # noqa: F401  (registers the models)
    from py_irt.config import IrtConfig
    from py_irt.training import IrtModelTrainer

    config = IrtConfig(model_type=model, priors="hierarchical", lr=lr, lr_decay=lr_decay, epochs=int(epochs), seed=seed)
    import py_irt.anchor_utils

    quiet = py_irt.anchor_utils.console.quiet
    try:
        py_irt.anchor_utils.console.quiet = True  # its "no anchor items" line ignores verbose=False
        with _pyro_scope(seed=seed, threads=int(threads)):
            trainer = IrtModelTrainer(config=config, data_path=None, dataset=dataset, verbose=False)
            with heartbeat(f"py-irt fit, {int(epochs)} epochs"):
                trainer.train(epochs=int(epochs), device=device)
    finally:
        py_irt.anchor_utils.console.quiet = quiet
    last, best = trainer.last_params, trainer.best_params
    if best is None or not all(np.isfinite(np.asarray(v, float)).all() for k, v in last.items() if k in _PARAM_KEYS):
        raise PrecometError(
            f"IRT fit diverged to NaN (model {model}, lr {lr}, {epochs} epochs); retry with a lower learning rate,"
            f" e.g. options={{'lr': {lr / 3:.3g}}}"
        )
    n, s = responses.shape
    order = [int(best["item_ids"][ix][1:]) for ix in range(n)]
    subjects = [int(best["subject_ids"][ix][1:]) for ix in range(s)]
    inverse, subject_inverse = np.argsort(order), np.argsort(subjects)
    ones = np.ones(n)

    return IrtParams(
        item_ids=tuple(campaign.ids),
        systems=tuple(campaign.systems),
        difficulty=np.asarray(best["diff"], float)[inverse],
        discrimination=np.asarray(best.get("disc", ones), float)[inverse],
        feasibility=np.asarray(best.get("lambdas", ones), float)[inverse],
        ability=np.asarray(best["ability"], float)[subject_inverse],
        info=signature(
            "py-irt fit",
            method=model,
            campaign=campaign,
            seed=seed,
            model=model,
            metric=metric,
            rescale=rescale,
            lr=lr,
            lr_decay=lr_decay,
            epochs=int(epochs),
            py_irt=version("py-irt"),
        ),
    )


_PARAM_KEYS = ("ability", "diff", "disc", "lambdas")


def _dataset(responses: np.ndarray, n_systems: int):
    from ordered_set import OrderedSet
    from py_irt.dataset import Dataset

    n = len(responses)
    items = [f"i{i}" for i in range(n)]
    subjects = [f"s{j}" for j in range(n_systems)]
    return Dataset(
        item_ids=OrderedSet(items),
        subject_ids=OrderedSet(subjects),
        item_id_to_ix={k: i for i, k in enumerate(items)},
        ix_to_item_id=dict(enumerate(items)),
        subject_id_to_ix={k: j for j, k in enumerate(subjects)},
        ix_to_subject_id=dict(enumerate(subjects)),
        observation_subjects=np.tile(np.arange(n_systems), n).tolist(),
        observation_items=np.repeat(np.arange(n), n_systems).tolist(),
        observations=responses.ravel().tolist(),
        training_example=[True] * responses.size,
    )


@contextlib.contextmanager
def _pyro_scope(*, seed: int, threads: int) -> Iterator[None]:
    """Seed, disable validation, single-thread torch and use a fresh param store; restore all on exit."""
    import pyro
    import pyro.distributions.util as dist_util
    import pyro.infer.util as infer_util
    import pyro.poutine.util as poutine_util
    import torch

    store = pyro.get_param_store()
    saved_store = store.get_state()
    saved_flags = (
        dist_util.is_validation_enabled(),
        infer_util.is_validation_enabled(),
        poutine_util.is_validation_enabled(),
    )
    saved_torch_validate = torch.distributions.Distribution._validate_args
    saved_rng = (torch.get_rng_state(), np.random.get_state(), random.getstate())
    saved_threads = torch.get_num_threads()
    try:
        pyro.enable_validation(False)
        pyro.set_rng_seed(seed)
        torch.set_num_threads(threads)
        pyro.clear_param_store()
        yield
    finally:
        pyro.clear_param_store()
        store.set_state(saved_store)
        dist_util.enable_validation(saved_flags[0])
        infer_util.enable_validation(saved_flags[1])
        poutine_util.enable_validation(saved_flags[2])
        torch.distributions.Distribution.set_default_validate_args(saved_torch_validate)
        torch.set_rng_state(saved_rng[0])
        np.random.set_state(saved_rng[1])
        random.setstate(saved_rng[2])
        torch.set_num_threads(saved_threads)


def _cuda_available() -> bool:
    import torch

    return bool(torch.cuda.is_available())
