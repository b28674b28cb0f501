"""Machinery behind :mod:`precomet.select`: selection units and the certified knapsack solver."""
