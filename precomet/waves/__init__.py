"""Annotate in waves until the ranking is settled."""
