"""What a guarantee means, in the user's terms — computed from the plan alone.

See docs/design.md#semantics.
"""

from __future__ import annotations

import math
from typing import Any

from eree.privacy.accountant import PrivacyReport

#: size ratios y/x at which establishment-size protection is illustrated
SIZE_RATIOS = (1.05, 1.1, 1.5, 2.0, 10.0)


def exp_or_none(x: float) -> float | None:
    """e^x, or None where it overflows a double (the log bound is reported alongside)."""
    return math.exp(x) if x < 700 else None


def fmt_exp(x: float) -> str:
    """e^x for humans; beyond a double's range as a power of ten."""
    return f"{math.exp(x):.4g}" if x < 700 else f"10^{x / math.log(10):.1f} (no protection)"


def er_ee_semantics(report: PrivacyReport) -> dict[str, Any]:
    """Bayes-factor bounds of an ER-EE release (Haney et al. §7).

    * A worker's presence or absence: an attacker's odds change by at most e^ε.
    * An establishment of size x versus y ≤ (1+α)^k x: by at most e^{kε}, with
      k = ⌈ln(y/x)/ln(1+α)⌉ (the neighbors chain of Def 7.1).
    With δ > 0, each bound holds except with probability δ (for k steps: roughly
    k·e^{(k−1)ε}·δ, Eq. 13).
    """
    eps = report.total.epsilon
    delta = report.total.delta or 0.0
    alpha = report.alpha
    out: dict[str, Any] = {"definition": report.definition, "epsilon": eps, "delta": delta}
    if eps is None:
        out["statement"] = "no formal privacy guarantee"
        return out
    lines = [
        f"A worker's presence, absence or attributes change what an attacker can believe by a "
        f"factor of at most e^{eps:.4g} = {fmt_exp(eps)}"
        + (f", except with probability {delta:.3g}" if delta > 0 else "")
        + "."
    ]
    sizes: list[dict[str, Any]] = []
    if alpha is not None and report.definition in ("eree", "eree-weak"):
        for r in SIZE_RATIOS:
            steps = math.log(r) / math.log1p(alpha) - 1e-12
            # a tiny α makes the chain longer than any count (k beyond 2^53: no bound)
            k = math.ceil(steps) if steps < 2.0**53 else None
            bound = k * eps if k is not None and math.isfinite(k * eps) else None
            sizes.append(
                {"size_ratio": r, "k": k, "log_bayes_factor_bound": bound,
                 "bayes_factor_bound": exp_or_none(bound) if bound is not None else None}
            )  # fmt: skip
        example = sizes[1]
        told = (
            f"k = {example['k']}, bound {fmt_exp(example['log_bayes_factor_bound'])}"
            if example["log_bayes_factor_bound"] is not None
            else "no finite bound at these parameters"
        )
        lines.append(
            f"An establishment's size x cannot be told from a size y <= (1+{alpha:g})^k x "
            f"with odds better than e^(k*{eps:.4g}); e.g. sizes within {SIZE_RATIOS[1]:g}x: "
            f"{told}."
        )
        if report.definition == "eree-weak":
            lines.append(
                "Weak ER-EE: the bound holds for every property of the workforce (e.g. the number "
                "of women), each protected within the factor (1+alpha) per step."
            )
        else:
            lines.append(
                "Strong ER-EE: the bound holds for the whole workforce of an establishment, "
                "whatever the attributes of the added or removed workers."
            )
        lines.append(
            "Public: the existence of establishments, their public attributes (place, "
            "industry, ownership) and the number of establishments in any cell."
        )
    elif report.definition == "edge-dp":
        lines.append("Edge-DP protects single jobs; it does not protect establishment size.")
    elif report.definition == "node-dp":
        lines.append(
            "Node-DP protects whole establishments, at the price of truncating large ones."
        )
    out["size_protection"] = sizes
    out["statements"] = lines
    return out
