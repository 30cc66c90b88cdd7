"""Experiment names: which experiments a name given to ``run_haney``/``run_webb`` stands for."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from eree.errors import SpecError


def experiments_of(
    experiment: str, experiments: Iterable[str], every: Sequence[str] | None = None
) -> list[str]:
    """The experiments ``experiment`` stands for: itself, or all of them for ``…-all``.

    Args:
        experiment: the name of one experiment, or the name ending in ``-all``.
        experiments: every name ``experiment`` may be, ``…-all`` included (in the order
            the error message lists them).
        every: what ``…-all`` runs, in order (default: the other names, in their order).

    Raises:
        SpecError: ``experiment`` is not one of ``experiments``.
    """
    names = list(experiments)
    if experiment not in names:
        raise SpecError(f"unknown experiment {experiment!r}; choose one of {', '.join(names)}")
    if experiment.endswith("-all"):
        return list(every) if every is not None else [n for n in names if not n.endswith("-all")]
    return [experiment]
