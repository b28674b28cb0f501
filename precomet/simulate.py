"""A seeded simulator of historical evaluation campaigns — SYNTHETIC data for the demo and tests.

Each simulated campaign has ``n_items`` sources and ``n_systems`` systems drawn from a 2PL-like model:

* system ability ``theta_s ~ N(0, 0.3²)`` (close systems, as in a shared task) (shared across campaigns, so systems
  persist over "years");
* item difficulty ``b_i`` = domain offset + 0.6 · (number of "hard" words in the source) + noise, and
  discrimination ``a_i ~ LogNormal(0, 0.4)``; source length grows with difficulty, and so does cost
  (``0.15 · len(src) + 33.7`` seconds);
* human score ``100 · sigmoid(a_i · (theta_s - b_i)) + N(0, 8²)``, clipped to [0, 100];
  metric ``MetricSim`` = human score plus N(0, 10) noise (an imperfect automatic metric);
* outputs: the source words with a fraction ``1 - quality`` of them corrupted, so worse translations
  diverge more from each other (what the diversity utility looks at);
* documents of 3–8 consecutive items, each document within one domain.

Nothing here is real data: campaign names start with ``sim/``.
"""

from __future__ import annotations

import numpy as np

from precomet.campaign import HUMAN, Campaign
from precomet.errors import PrecometError

DOMAINS = ("news", "social", "speech", "literary")
DOMAIN_OFFSET = {"news": -0.3, "social": 0.2, "speech": 0.0, "literary": 0.5}
EASY_WORDS = (
    "the cat sat on a mat and the dog ran to the park where children play with red balls in the sun "
    "people walk home after work some read books others cook dinner for friends"
).split()
HARD_WORDS = (
    "notwithstanding idiosyncratic jurisprudence photosynthesis ambivalence metaphorical "
    "counterintuitive epistemological quintessential serendipitous"
).split()
METRIC = "MetricSim"
ABILITY_SD = 0.3
HUMAN_NOISE = 8.0


def simulate_campaign(
    *,
    n_items: int = 300,
    n_systems: int | None = None,
    seed: int = 0,
    name: str | None = None,
    abilities: np.ndarray | None = None,
) -> Campaign:
    """One synthetic campaign (see the module docstring for the generative story) of ``n_systems`` systems
    (default 8) with random abilities, or of given ``abilities`` (one per system)."""
    for name_, value in (("n_items", n_items), ("n_systems", n_systems)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1):
            raise PrecometError(f"{{{name_}}}{value!r}: expected a whole number >= 1", param=name_)
    if abilities is not None:
        abilities = np.asarray(abilities, dtype=float)
        if abilities.ndim != 1 or len(abilities) < 1:
            raise PrecometError("abilities must be one number per system", param="abilities")
        if n_systems is not None and n_systems != len(abilities):
            raise PrecometError(
                f"{{n_systems}}{n_systems} and {len(abilities)} abilities disagree; give one of them",
                param=("n_systems", "abilities"),
            )
    rng = np.random.default_rng(seed)
    theta = abilities if abilities is not None else rng.normal(0.0, ABILITY_SD, 8 if n_systems is None else n_systems)
    n_systems = len(theta)
    systems = [f"sys{j:02d}" for j in range(n_systems)]

    domains: list[str] = []
    docs: list[str] = []
    doc_index = 0
    while len(domains) < n_items:
        size = int(rng.integers(3, 9))
        domain = DOMAINS[int(rng.integers(len(DOMAINS)))]
        domains += [domain] * size
        docs += [f"{name or f'sim/{seed}'}/doc{doc_index}"] * size
        doc_index += 1
    domains, docs = domains[:n_items], docs[:n_items]

    n_hard = rng.poisson(1.0, n_items)
    n_easy = rng.integers(5, 20, n_items)
    src = []
    for i in range(n_items):
        words = list(rng.choice(EASY_WORDS, n_easy[i])) + list(rng.choice(HARD_WORDS, n_hard[i]))
        rng.shuffle(words)
        src.append(" ".join(words).capitalize() + ".")
    difficulty = (
        np.array([DOMAIN_OFFSET[d] for d in domains]) + 0.6 * n_hard + 0.03 * n_easy + rng.normal(0, 0.4, n_items)
    )
    discrimination = rng.lognormal(0.0, 0.4, n_items)

    quality = 1.0 / (1.0 + np.exp(-discrimination[:, None] * (theta[None, :] - difficulty[:, None])))
    human = np.clip(100 * quality + rng.normal(0, HUMAN_NOISE, quality.shape), 0, 100)
    metric = human + rng.normal(0, 10, quality.shape)

    outputs: dict[str, list[str]] = {system: [] for system in systems}
    for i, text in enumerate(src):
        words = text.split()
        for j, system in enumerate(systems):
            corrupt = rng.random(len(words)) > quality[i, j]
            noisy = [f"{w[::-1]}{int(rng.integers(10))}" if c else w for w, c in zip(words, corrupt)]
            outputs[system].append(" ".join(noisy))

    campaign_name = name or f"sim/{seed}"
    return Campaign.build(
        ids=[f"{campaign_name}/{i}" for i in range(n_items)],
        src=src,
        systems=systems,
        outputs=outputs,
        scores={HUMAN: human, METRIC: metric},
        doc=docs,
        domain=domains,
        name=campaign_name,
        lp="sim-sim",
        protocol="simulated",
        info={"synthetic": "simulated campaign (precomet.simulate), not real data"},
    )


def simulate_history(*, n_campaigns: int = 4, n_items: int = 300, n_systems: int = 8, seed: int = 0) -> list[Campaign]:
    """Several campaigns ("years") with fresh items and partly overlapping system pools."""
    rng = np.random.default_rng(seed)
    pool = rng.normal(0.0, ABILITY_SD, n_systems * 2)
    campaigns = []
    for year in range(n_campaigns):
        chosen = np.sort(rng.choice(len(pool), n_systems, replace=False))
        campaigns.append(
            simulate_campaign(
                n_items=n_items, seed=seed * 1000 + year + 1, name=f"sim/year{year}", abilities=pool[chosen]
            )
        )
    return campaigns
