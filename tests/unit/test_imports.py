"""What importing precomet pulls in, checked in fresh interpreters: the layer rules (a lower layer never imports a
higher one)."""

from __future__ import annotations

from tests.conftest import loaded_after


def test_utilities_do_not_import_pairwise_or_higher_layers():
    modules = loaded_after("import precomet.utilities")
    assert not [m for m in modules if m.startswith(("precomet.pairwise", "precomet.benchmark", "precomet.commands"))]


def test_library_modules_never_import_commands():
    modules = loaded_after(
        "import precomet.benchmark, precomet.crowd, precomet.metaeval, precomet.rank, precomet.select, precomet.oracle,"
        " precomet.io, precomet.utilities, precomet.pairwise.protocol, precomet.pairwise.ratings"
    )
    assert not [m for m in modules if m.startswith(("precomet.commands", "precomet.cli"))]
