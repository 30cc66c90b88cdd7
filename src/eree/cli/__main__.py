"""``python -m eree.cli``: the ``eree`` program, as the installed ``eree`` runs it."""

from eree.cli import run

if __name__ == "__main__":  # pragma: no cover
    run()
