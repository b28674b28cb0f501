"""Vectorised pairwise chrF, sentence BLEU and unigram Dice between the outputs of each item.

Reproduces ``sacrebleu.metrics.CHRF().sentence_score(a, [b])`` (chrF2, char order 6, word order 0) and
``sacrebleu.metrics.BLEU(effective_order=True).sentence_score(a, [b])`` (13a tokenizer, exp smoothing)
for every ordered pair ``(a, b)`` of an item's outputs, but instead of one Python call per pair:

1. every output is turned once into integer units (code points without whitespace for chrF, 13a tokens for
   BLEU, whitespace tokens for Dice) using sacrebleu's own preprocessing;
2. n-grams of order ``n`` get dense ids from the ids of order ``n-1`` and the next unit (``np.unique``);
3. the clipped match count ``Σ_g min(count_a(g), count_b(g))`` of all pairs of an item is one sparse
   product ``X Xᵀ`` where ``X[text, (item, g, t)] = 1`` when the text holds at least ``t`` copies of ``g``;
4. sacrebleu's score formulas are applied to the resulting statistics with numpy.

One deliberate difference: two outputs that are both empty (no units) get similarity 1 (sacrebleu: 0),
so identical outputs always have similarity 1. Similarities are returned in [0, 1] (chrF/BLEU divided by 100).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

CHRF_ORDER = 6
CHRF_BETA = 2
BLEU_ORDER = 4
UNITS_PER_CHUNK = 2_000_000


def _chrf_units(text: str, vocab: dict[str, int]) -> np.ndarray:
    return np.frombuffer("".join(text.split()).encode("utf-32-le"), dtype=np.uint32).astype(np.int64)


def _token_units(tokens: list[str], vocab: dict[str, int]) -> np.ndarray:
    return np.array([vocab.setdefault(tok, len(vocab)) for tok in tokens], dtype=np.int64)


def _bleu_units(text: str, vocab: dict[str, int]) -> np.ndarray:
    return _token_units(_tokenizer_13a()(text.rstrip()).split(), vocab)


def _word_units(text: str, vocab: dict[str, int]) -> np.ndarray:
    return _token_units(text.split(), vocab)


def _tokenizer_13a() -> Callable[[str], str]:
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    global _TOKENIZER
    if _TOKENIZER is None:
        _TOKENIZER = Tokenizer13a()
    return _TOKENIZER


_TOKENIZER: Callable[[str], str] | None = None


def match_counts(units: Sequence[np.ndarray], n_systems: int, max_order: int) -> np.ndarray:
    """Clipped n-gram matches ``M[item, n-1, a, b]`` for texts laid out item-major (``n_systems`` per item)."""
    import scipy.sparse as sp  # here, not at import: scipy.sparse is slow to import and only chrF/BLEU need it

    n_items = len(units) // n_systems
    out = np.zeros((n_items, max_order, n_systems, n_systems))
    lengths = np.array([len(u) for u in units], dtype=np.int64)
    if lengths.sum() == 0:
        return out
    flat = np.concatenate(units)
    row = np.repeat(np.arange(len(units), dtype=np.int64), lengths)
    pos = np.arange(len(flat), dtype=np.int64) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    vocab_size = int(flat.max()) + 1
    idx = np.arange(len(flat), dtype=np.int64)
    grams = flat
    for n in range(1, max_order + 1):
        if n > 1:
            keep = pos[idx] <= lengths[row[idx]] - n
            idx, grams = idx[keep], grams[keep]
            if len(idx) == 0:
                break
            grams = np.unique(grams * vocab_size + flat[idx + n - 1], return_inverse=True)[1].ravel()
        else:
            grams = np.unique(grams, return_inverse=True)[1].ravel()
        rows = row[idx]
        n_grams = int(grams.max()) + 1
        order = np.argsort(rows * n_grams + grams, kind="stable")
        key = (rows * n_grams + grams)[order]
        run_start = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
        copy = np.arange(len(key)) - np.repeat(run_start, np.diff(np.r_[run_start, len(key)]))
        sorted_rows = rows[order]
        column_key = ((sorted_rows // n_systems) * n_grams + grams[order]) * (int(copy.max()) + 1) + copy
        columns = np.unique(column_key, return_inverse=True)[1].ravel()
        x = sp.csr_matrix(
            (np.ones(len(key), dtype=np.float64), (sorted_rows, columns)), shape=(len(units), int(columns.max()) + 1)
        )
        product = (x @ x.T).tocoo()
        out[product.row // n_systems, n - 1, product.row % n_systems, product.col % n_systems] = product.data
    return out


def chrf_from_stats(matches: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """chrF (sacrebleu defaults, 0–100) of hyp ``a`` against ref ``b``: ``matches`` (I, 6, S, S), ``lengths`` (I, S)."""
    n = np.arange(1, CHRF_ORDER + 1)[None, :, None, None]
    n_hyp = np.maximum(lengths[:, None, :, None] - n + 1, 0).astype(float)
    n_ref = np.maximum(lengths[:, None, None, :] - n + 1, 0).astype(float)
    effective = (n_hyp > 0) & (n_ref > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        prec = np.where(effective, matches / np.where(n_hyp > 0, n_hyp, 1), 0.0)
        rec = np.where(effective, matches / np.where(n_ref > 0, n_ref, 1), 0.0)
    count = effective.sum(axis=1)
    avg_prec = np.where(count > 0, prec.sum(axis=1) / np.maximum(count, 1), 0.0)
    avg_rec = np.where(count > 0, rec.sum(axis=1) / np.maximum(count, 1), 0.0)
    factor = CHRF_BETA**2
    denom = factor * avg_prec + avg_rec
    with np.errstate(divide="ignore", invalid="ignore"):
        score = np.where(avg_prec + avg_rec > 0, (1 + factor) * avg_prec * avg_rec / np.where(denom > 0, denom, 1), 0.0)
    return 100 * score


def bleu_from_stats(matches: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Sentence BLEU (effective order, exp smoothing, 0–100) of hyp ``a`` against ref ``b``."""
    hyp_len = lengths[:, :, None].astype(float)
    ref_len = lengths[:, None, :].astype(float)
    n = np.arange(BLEU_ORDER)[None, :, None, None]
    total = np.broadcast_to(np.maximum(lengths[:, None, :, None] - n, 0).astype(float), matches.shape)
    counted = total > 0
    zero = (matches == 0) & counted
    halvings = np.cumsum(zero, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_p = np.where(
            matches > 0,
            np.log(100.0 * matches / np.where(counted, total, 1)),
            np.log(100.0 / (2.0**halvings * np.where(counted, total, 1))),
        )
        eff_order = np.minimum(hyp_len, BLEU_ORDER)
        mean_log = np.where(counted, log_p, 0.0).sum(axis=1) / np.maximum(eff_order, 1)
        bp = np.where(hyp_len < ref_len, np.exp(1 - ref_len / np.maximum(hyp_len, 1)), 1.0)
    any_match = matches.sum(axis=1) > 0
    return np.where(any_match, bp * np.exp(mean_log), 0.0)


def dice_from_stats(matches: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Unigram Dice–Sørensen ``2|A∩B| / (|A| + |B|)`` (multisets), in [0, 1]."""
    total = lengths[:, :, None] + lengths[:, None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(total > 0, 2.0 * matches[:, 0] / np.where(total > 0, total, 1), 0.0)


# name -> (text -> units, max order, scoring function, scale to [0, 1])
SIMILARITIES = {
    "chrf": (_chrf_units, CHRF_ORDER, chrf_from_stats, 100.0),
    "bleu": (_bleu_units, BLEU_ORDER, bleu_from_stats, 100.0),
    "unigram": (_word_units, 1, dice_from_stats, 1.0),
}


def pairwise_similarity(outputs: np.ndarray, kind: str, *, progress: Callable[[int], None] | None = None) -> np.ndarray:
    """``sim[i, a, b]`` in [0, 1] = similarity of output ``a`` (hypothesis) to output ``b`` (reference) of item
    ``i``; ``outputs`` is an ``N × S`` array of strings. Both-empty pairs get 1 (see the module docstring)."""
    to_units, max_order, score_fn, scale = SIMILARITIES[kind]
    n_items, n_systems = outputs.shape
    vocab: dict[str, int] = {}
    seen: dict[str, np.ndarray] = {}
    units = []
    for text in outputs.ravel():
        text = text or ""
        if text not in seen:
            seen[text] = to_units(text, vocab)
        units.append(seen[text])
    lengths = np.array([len(u) for u in units], dtype=np.int64).reshape(n_items, n_systems)
    result = np.empty((n_items, n_systems, n_systems))
    per_item = np.maximum(lengths.sum(axis=1), 1)
    start = 0
    while start < n_items:
        stop = start + max(1, int(np.searchsorted(np.cumsum(per_item[start:]), UNITS_PER_CHUNK)))
        stop = min(stop, n_items)
        matches = match_counts(units[start * n_systems : stop * n_systems], n_systems, max_order)
        result[start:stop] = np.clip(score_fn(matches, lengths[start:stop]) / scale, 0.0, 1.0)
        if progress is not None:
            progress(stop - start)
        start = stop
    empty = lengths == 0
    result[empty[:, :, None] & empty[:, None, :]] = 1.0
    return result
