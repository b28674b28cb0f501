"""Pairwise evaluation: DiffUse item selection with iterative stopping, preference records and ratings.

* :mod:`~precomet.pairwise.diffuse` — DiffUse (Ashury-Tahan et al., 2024): the iterative Algorithm 1, over the
  difference vectors, Ward linkage and representatives of :mod:`precomet.utilities.diffuse` (re-exported there;
  output embeddings, each distinct text once, come from the same module);
* :mod:`~precomet.pairwise.protocol` — success-rate evaluation against random selection (§5.3, §6.2);
* :mod:`~precomet.pairwise.preference` — preference records (a/b/tie, Likert 1–8) and their loaders;
* :mod:`~precomet.pairwise.ratings` — Elo, Bradley-Terry, bootstrap intervals, position bias, agreement.
"""
