"""The one registry of mechanisms (docs/design.md#core-objects).

Read by the spec parser (names, did-you-mean, which settings apply), the release (which
class to build), the evaluation and ``eree explain``. Adding a mechanism is one class and
one line here; the contract suite (``tests/mechanisms/test_contract.py``) then covers it.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from eree.mechanisms.adaptive import AdaptiveGroupBy
from eree.mechanisms.base import Mechanism
from eree.mechanisms.baselines import EdgeLaplace, TruncatedLaplace
from eree.mechanisms.er_ee import LogLaplace, SmoothGamma, SmoothLaplace
from eree.mechanisms.gedp import EstabGaussian, Pnc, PsiMechanism
from eree.mechanisms.noise_infusion import NoiseInfusion
from eree.mechanisms.workshop import WorkshopLogLaplace, WorkshopSmoothGamma, WorkshopSmoothLaplace
from eree.privacy.definitions import ALPHA_DEFINITIONS

__all__ = ["REGISTRY", "Entry", "entry", "mechanism_names", "suggest"]


@dataclass(frozen=True)
class Entry:
    """One registered mechanism.

    Attributes:
        name: the spec's ``mechanism = ...``.
        variant: "sigmod" / "workshop" for the ER-EE mechanisms, "" otherwise.
        cls: the mechanism class.
        definitions: the privacy definitions it may run under.
        settings: the ``[[query]]`` keys (besides name, by, mechanism, complete) that apply
            to it; any other key on such a query is an error.
        summary: one line for ``eree explain`` and the docs.
    """

    name: str
    variant: str
    cls: type[Mechanism]
    definitions: tuple[str, ...]
    settings: tuple[str, ...]
    summary: str


def _register(
    name: str,
    variant: str,
    cls: type[Mechanism],
    definitions: tuple[str, ...],
    settings: tuple[str, ...],
    summary: str,
) -> Entry:
    """One registry line: the class learns its name (and variant) here, nowhere else."""
    cls.name = name
    cls.variant = variant
    return Entry(name, variant, cls, definitions, settings, summary)


REGISTRY: tuple[Entry, ...] = (
    _register("log_laplace", "sigmod", LogLaplace, ALPHA_DEFINITIONS,
          ("epsilon", "force", "variant", "grid"), "Log-Laplace (Haney et al. Alg 1)"),
    _register("smooth_gamma", "sigmod", SmoothGamma, ALPHA_DEFINITIONS,
          ("epsilon", "variant", "grid"), "Smooth Gamma (Haney et al. Alg 2)"),
    _register("smooth_laplace", "sigmod", SmoothLaplace, ALPHA_DEFINITIONS,
          ("epsilon", "delta", "variant", "grid"),
          "Smooth Laplace (Haney et al. Alg 3)"),
    _register("log_laplace", "workshop", WorkshopLogLaplace, ("blowfish",),
          ("epsilon", "force", "variant", "additive", "grid"), "Log-Laplace, workshop Alg 1"),
    _register("smooth_gamma", "workshop", WorkshopSmoothGamma, ("blowfish",),
          ("epsilon", "variant", "grid"), "Smooth Gamma, workshop Alg 3"),
    _register("smooth_laplace", "workshop", WorkshopSmoothLaplace, ("blowfish",),
          ("epsilon", "delta", "variant", "grid"), "Smooth Laplace, workshop Alg 2"),
    _register("laplace", "", EdgeLaplace, ("edge-dp",), ("epsilon", "grid"),
          "edge-DP Laplace (Haney et al. §6)"),
    _register("truncated_laplace", "", TruncatedLaplace, ("node-dp",), ("epsilon", "theta", "grid"),
          "node-DP truncated Laplace (Haney et al. §6)"),
    _register("noise_infusion", "", NoiseInfusion, ("none",), ("s", "t", "small_cell"),
          "input noise infusion, today's SDL (Haney et al. §5.1), no formal guarantee"),
    _register("psi", "", PsiMechanism, ("gedp",), ("mu", "grid"),
          "ψ-mechanism (Webb et al. Def 6.4)"),
    _register("pnc", "", Pnc, ("gedp",), ("mu", "grid"), "pnc-mechanism (Webb et al. Def 6.8)"),
    _register("estab_gaussian", "", EstabGaussian, ("gedp",), ("mu", "grid"),
          "Estab-Gaussian (Webb et al. Def 6.2)"),
    _register("adaptive", "", AdaptiveGroupBy, ("gedp",), ("mu", "grid"),
          "per group the ψ- or pnc-mechanism, chosen from the identity answers (docs/privacy.md)"),
)  # fmt: skip


def mechanism_names() -> tuple[str, ...]:
    """Every registered mechanism name, in registry order, once."""
    return tuple(dict.fromkeys(e.name for e in REGISTRY))


def suggest(name: str) -> str:
    """A did-you-mean hint for an unknown mechanism name."""
    known = mechanism_names()
    close = difflib.get_close_matches(str(name), known, n=1)
    return f"; did you mean {close[0]!r}?" if close else f"; known: {', '.join(known)}"


def variants(name: str) -> tuple[str, ...]:
    """The variants registered under ``name`` ("" when it has none)."""
    return tuple(e.variant for e in REGISTRY if e.name == name)


def entry(name: str, variant: str | None = None) -> Entry:
    """The registry entry of ``name`` (and ``variant``; default: the first registered).

    Raises:
        KeyError: no such mechanism or variant.
    """
    for e in REGISTRY:
        if e.name == name and (variant is None or e.variant == variant):
            return e
    raise KeyError((name, variant))


def entries_for(definition: str) -> tuple[Entry, ...]:
    """The entries allowed under ``definition``."""
    return tuple(e for e in REGISTRY if definition in e.definitions)
