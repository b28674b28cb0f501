"""Pairwise evaluation: DiffUse item selection with iterative stopping, preference records and ratings.

* :mod:`~precomet.pairwise.embed` — sentence embeddings of system outputs (each distinct text once);
* :mod:`~precomet.pairwise.diffuse` — DiffUse (Ashury-Tahan et al., 2024): difference vectors, one Ward
  linkage, representatives at any number of clusters, and the iterative Algorithm 1;
* :mod:`~precomet.pairwise.protocol` — success-rate evaluation against random selection (§5.3, §6.2);
* :mod:`~precomet.pairwise.preference` — preference records (a/b/tie, Likert 1–8) and their loaders;
* :mod:`~precomet.pairwise.ratings` — Elo, Bradley-Terry, bootstrap intervals, position bias, agreement.
"""
