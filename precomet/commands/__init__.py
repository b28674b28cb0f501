"""Subcommands of the ``precomet`` CLI, one module each (see :mod:`precomet.cli`)."""
