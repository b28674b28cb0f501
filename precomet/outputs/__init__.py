"""Everything a command writes goes through here: :mod:`~precomet.outputs.paths` checks output paths before any work
(writable, not given twice, not an input), :mod:`~precomet.outputs.atomic` commits a command's outputs together or
not at all (staged in a temporary folder, moved with a journal that a later run finishes or rolls back, even after a
SIGKILL between renames), and :mod:`~precomet.outputs.lock` serialises the runs that share a folder. :mod:`precomet.io`
reads the input formats (and holds each format's own serialisation)."""
