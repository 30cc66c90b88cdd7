"""The report's words for its reader: plain language instead of citations and paths.

:func:`plain_text` turns a manifest text (notes, warnings, remedies) into what a review
board reads: no bare theorem number (each is glossed in :data:`SOURCES`), no repository
path, units stated. The privacy scales are related for a reader who sees both: an ε as an
odds bound and as a test's power, a μ as a test's power and as an ε at a small δ
(:func:`power_of_epsilon`, :func:`power_of_mu`, :func:`epsilon_of_mu`). :data:`GLOSSARY`,
:data:`SOURCES` and :data:`READING` are the page's closing sections
(:func:`glossary_html`). Used by :mod:`eree.release.report`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from statistics import NormalDist
from typing import Any

from eree.htmlpage import (
    bullets,
    definitions,
    esc,
    num,
    table,
)
from eree.release.units import amount, money_scale, unit_of

_ND = NormalDist()

#: false-positive rate at which a query's hypothesis-test bound is quoted
FPR = 0.05

#: δ at which a μ guarantee is also stated as an odds bound e^ε
ODDS_DELTA = 1e-6


# --------------------------------------------------------------------------------------
# Manifest texts, for the reader: no bare citation, no repository path, units stated
# --------------------------------------------------------------------------------------

_WORK = r"(?:(?:Haney|Webb|Dong)(?: et al\.?)?,?\s*(?:\(?\d{4}\)?,?\s*)?)?"
_KIND = (
    r"(?:Thm|Theorem|Def|Definition|Lemma|Remark|Eq\.|Equation|Algorithm|Alg\.|Corollary"
    r"|Prop\.|Proposition|Appendix|Table|§)"
)
#: a citation of a paper's theorem, definition, section, …: ``Webb et al. Def 5.6``, ``§9``
CITATION = re.compile(_WORK + _KIND + r"\s*[A-Z]?\d+(?:\.\d+)*")
#: a path of the repository: a guide under docs/ (with its anchor), a module and function
_DOC_PATH = re.compile(r"docs/([\w-]+)\.md(?:#[\w-]+)?")
_CODE_PATH = re.compile(r"\(?\s*(?:see\s+)?[\w./-]*\.py(?:::\w+)?\s*\)?")
_UNITS_PHRASE = re.compile(r"(\d[\d,]*(?:\.\d+)?) \(in (\w+)'s units\)")


def plain_text(text: Any, units: Mapping[str, str] | None = None) -> str:
    """A manifest text as the report shows it (plain text; escape it before use).

    Citations of the papers are taken out (the manifest keeps them; the page glosses the
    few it needs in its Sources), repository paths become the guide's name, solver
    internals are not passed here at all, and "N (in wage's units)" gets its unit.
    """
    s = str(text)
    s = _DOC_PATH.sub(lambda m: f"the eree guide “{m.group(1).replace('-', ' ').capitalize()}”", s)
    s = _CODE_PATH.sub(" ", s)
    s = CITATION.sub("", s)
    if units is not None:

        def unit(m: re.Match[str]) -> str:
            v = float(m.group(1).replace(",", ""))
            u = unit_of(m.group(2), units)
            said = amount(v, u, plain=m.group(1))
            return said if money_scale(u) is None else f"{said} ({m.group(1)} {u})"

        s = _UNITS_PHRASE.sub(unit, s)
    for _ in range(3):  # tidy what the citations left: "( ; x)", "(, )", "x ,"
        s = re.sub(r"\(\s*(?:(?:and|see|cf\.)\s*)?(?:[,;:]\s*)+", "(", s)
        s = re.sub(r"(?:\s*[,;:]|\s+and)+\s*\)", ")", s)
        s = re.sub(r"\(\s*(?:and|see|cf\.)?\s*\)", "", s)
        s = re.sub(r"\s+([,;.):])", r"\1", s)
        s = re.sub(r"([,;])(?:\s*[,;])+", r"\1", s)
        s = re.sub(r"\s{2,}", " ", s)
    return s.strip()


# --------------------------------------------------------------------------------------
# Privacy, in words
# --------------------------------------------------------------------------------------


def bayes(eps: float) -> str:
    """The odds factor e^ε, written out (e^ε = value), or e^ε alone when it overflows."""
    return f"e^{num(eps, 4)} = {num(math.exp(eps), 4)}" if eps < 700 else f"e^{num(eps, 4)}"


def power_of_mu(mu: float, fpr: float = FPR) -> float:
    """The largest power at false-positive rate ``fpr`` under a μ guarantee: Φ(Φ⁻¹(fpr) + μ)."""
    return _ND.cdf(_ND.inv_cdf(fpr) + mu)


def power_of_epsilon(eps: float, delta: float = 0.0, fpr: float = FPR) -> float:
    """The largest power at false-positive rate ``fpr`` under an (ε, δ) guarantee.

    min(1, e^ε·fpr + δ, 1 − e^−ε·(1 − fpr − δ)): the hypothesis-testing reading of
    (ε, δ)-differential privacy (Kairouz, Oh & Viswanath 2015).
    """
    if eps > 700:
        return 1.0
    return max(0.0, min(1.0, math.exp(eps) * fpr + delta, 1 - math.exp(-eps) * (1 - fpr - delta)))


def epsilon_of_mu(mu: float, delta: float = ODDS_DELTA) -> float:
    """The ε of the odds bound a μ guarantee implies at ``delta``.

    δ(ε) = Φ(−ε/μ + μ/2) − e^ε·Φ(−ε/μ − μ/2) (Dong, Roth & Su 2022, Corollary 2.13),
    solved for ε by bisection (δ(ε) decreases in ε).
    """
    from scipy.special import log_ndtr

    def d(eps: float) -> float:
        # e^ε·Φ(x) as exp(ε + log Φ(x)): e^ε alone overflows for ε > 709 (a large μ)
        tail = math.exp(eps + float(log_ndtr(-eps / mu - mu / 2)))
        return _ND.cdf(-eps / mu + mu / 2) - tail

    lo, hi = 0.0, max(1.0, 10 * mu + 10 * mu * mu)
    if d(lo) <= delta:
        return 0.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if d(mid) > delta else (lo, mid)
    return hi


def meaning(cost: Mapping[str, Any] | None) -> str:
    """One query's (or the total's) cost in words."""
    if not cost:
        return "—"
    eps, delta, mu = cost.get("epsilon"), cost.get("delta"), cost.get("mu")
    if mu is not None:
        return f"power ≤ {power_of_mu(float(mu)):.1%} at {FPR:.0%} false positives"
    if eps is not None:
        s = f"odds change by ≤ {bayes(eps)}"
        if delta:
            s += f" (but for probability {num(delta, 3)})"
        return s
    return "no formal guarantee"


def meaning_long(cost: Mapping[str, Any] | None) -> str:
    """A cost in words, on both scales: odds (ε) and a test's power (μ)."""
    if not cost:
        return "—"
    eps, delta, mu = cost.get("epsilon"), cost.get("delta"), cost.get("mu")
    if mu is not None:
        e = epsilon_of_mu(float(mu))
        return (
            f"{meaning(cost)}; as odds: change by ≤ {bayes(e)} but for probability "
            f"{num(ODDS_DELTA)}"
        )
    if eps is not None:
        p = power_of_epsilon(float(eps), float(delta or 0.0))
        return f"{meaning(cost)}; as a test: power ≤ {p:.1%} at {FPR:.0%} false positives"
    return meaning(cost)


READING = (
    "<p>Each published table has the query's key columns, then for every published "
    "statistic <i>s</i> (<code>jobs</code> for job counts, the attribute's name for "
    "establishment sums) four columns: <code>s</code>, the published estimate; "
    "<code>s_std</code>, its standard error; <code>s_ci_low</code> and "
    "<code>s_ci_high</code>, its 95% confidence interval, all in the statistic's unit. "
    "A blank (null) standard error or interval is not publishable for that mechanism; the "
    "footnotes below say why. All numbers here are computed from the published files "
    "alone: nothing in this report depends on the confidential data except through the "
    "protected values.</p>"
)

#: the glossary: (term, family or "both", explanation)
GLOSSARY: tuple[tuple[str, str, str], ...] = (
    ("ε (epsilon)", "eree",
     "How much anything published can change what an attacker believes about one worker: "
     "their odds can change by at most a factor of e^ε (ε = 1: 2.7 times; ε = 4: 55 times). "
     "Smaller is more private. The ε of several tables of the same data add up."),
    ("δ (delta)", "eree",
     "A small probability with which the ε bound may fail. It should be far below one "
     "divided by the number of employers."),
    ("α (alpha)", "eree",
     "How much an employer's size is hidden: sizes x and (1+α)·x look alike up to the "
     "factor e^ε."),
    ("x_v", "eree",
     "The number of jobs at a cell's largest employer (confidential, never published); "
     "some mechanisms' noise depends on it."),
    ("μ (mu)", "gedp",
     "How well any statistical test can tell an establishment's true values from nearby "
     "values: no better than telling a draw of N(0,1) from one of N(μ,1). At μ = 1, a test "
     "that wrongly accuses 5% of the time succeeds at most 26% of the time. The μ of "
     "several tables combine as √(μ₁² + μ₂² + …)."),
    ("ψ (psi) and γ (gamma)", "gedp",
     "ψ is the scale on which nearby values are measured (√ by default: a large "
     "establishment is hidden within a wider range than a small one); values whose ψ "
     "differ by at most γ look alike. γ is in ψ of the attribute's unit, e.g. "
     "√(thousands of dollars)."),
    ("uncertainty interval", "gedp",
     "The range of values an establishment's confidential value cannot be told apart "
     "from (at the strength μ)."),
    ("ε and μ together", "both",
     "Both bound how well an attacker can tell two possibilities apart. As a test: a test "
     "that raises false alarms 5% of the time has power at most e^ε·5% + δ (and at most "
     "1 − e^−ε·(95% − δ)) under ε, and at most Φ(Φ⁻¹(5%) + μ) under μ; for example ε = 1 "
     "allows 13.6%, μ = 1 allows 26.0%. Each release on this page states its guarantee "
     "on both scales."),
    ("power, false positives", "both",
     "A test's power is how often it correctly detects a difference; its false-positive "
     "rate is how often it claims one that is not there."),
    ("standard error (std)", "both",
     "The typical size of the noise in a published value, in the value's unit."),
    ("95% confidence interval (CI)", "both",
     "A range around a published value that contains the value before noise in 95% of "
     "releases; its half-width is the ± of the value."),
    ("relative half-width", "both",
     "Half the CI's width divided by the published value: 10% means ±10%."),
    ("cell", "both", "One number of a table: one row's value of one statistic."),
    ("mechanism", "both",
     "The method that adds the noise (its name, e.g. smooth_laplace or pnc, is the spec's "
     "setting)."),
)  # fmt: skip

#: the papers' results the page names, each with its gloss
SOURCES: tuple[tuple[str, str, str], ...] = (
    ("eree", "Haney et al. (2017), Theorem 7.3",
     "the privacy losses of several tables released from the same data add up."),
    ("gedp", "Webb et al., Definition 5.6",
     "μ-GEDP: no test can tell two datasets that differ in one establishment's values, "
     "within its uncertainty interval, apart better than N(0,1) from N(μ,1)."),
    ("gedp", "Webb et al., Theorem 5.7",
     "the μ of several tables combine as the square root of the sum of their squares."),
    ("gedp", "Dong, Roth & Su (2022), Corollary 2.13",
     "a μ guarantee is also an odds guarantee e^ε that holds except with probability δ, "
     "for every ε, with δ = Φ(−ε/μ + μ/2) − e^ε·Φ(−ε/μ − μ/2)."),
    ("both", "Kairouz, Oh & Viswanath (2015), Theorem 2.1",
     "an (ε, δ) guarantee limits a test's power to e^ε times its false-positive rate "
     "plus δ."),
)  # fmt: skip


def glossary_html(families: set[str] | None = None) -> str:
    """The page's glossary of the symbols that stay, and the sources it names, glossed."""
    fam = families or {"eree", "gedp"}
    terms = [(t, e) for t, f, e in GLOSSARY if f == "both" or f in fam]
    srcs = [(c, g) for f, c, g in SOURCES if f == "both" or f in fam]
    return (
        '<h2 id="glossary">Terms used on this page</h2>'
        + definitions((t, esc(e)) for t, e in terms).replace('class="kv"', 'class="kv gloss"')
        + "<p>The results behind the statements above, in words (the manifest cites the "
        "papers' numbered results in full):</p>"
        + bullets((f"{esc(c)}: {esc(g)}" for c, g in srcs), raw=True)
    )


def jobs_words(manifest: Mapping[str, Any]) -> str:
    """What the counted jobs are and what k means (docs/privacy.md#several-jobs-per-worker)."""
    jobs = (manifest.get("dataset") or {}).get("jobs")
    if not jobs or (jobs.get("job_type") == "JT00" and jobs.get("max_jobs_per_worker") == 1):
        return ""
    k = int(jobs["max_jobs_per_worker"])
    words = f" Jobs counted: {esc(jobs['job_type'])}, {esc(jobs['job_type_meaning'])}."
    if k > 1:
        words += (
            f" A worker may hold several jobs; at most k = {k} of each worker's jobs are "
            "counted (the first k in a keyed random order; the rest are dropped), and the "
            f"privacy spent covers a worker with all {k} of them: the noise is calibrated "
            f"for k = {k}."
        )
    else:
        words += " One job per worker is counted (the primary job), so k = 1."
    return words


def identity_words(queries: list[Mapping[str, Any]]) -> str:
    """The summary's plain statement on values per establishment (identity queries).

    An identity query answers one cell per establishment: when its table is written, the
    release publishes a noisy value of every measured attribute for each establishment id.
    ``publish = false`` keeps those answers for pnc's bounds and writes none.
    """
    ident = [q for q in queries if q.get("by") == "identity"]
    if not ident:
        return ""
    shown = [q for q in ident if q.get("published") is not False]
    hidden = [q for q in ident if q.get("published") is False]
    words = []
    for q in shown:
        stats = ", ".join(esc(s) for s in (q.get("uncertainty") or {})) or "its attributes"
        words.append(
            f"table {esc(q['name'])} (<code>{esc(q['file'])}</code>) publishes a noisy value "
            f"of {stats} <b>for each establishment, by its id</b> ({num(q['cells'])} rows)"
        )
    for q in hidden:
        words.append(
            f"the identity query {esc(q['name'])} was answered for the pnc bounds and "
            "<b>not written</b> (publish = false): no value per establishment is published"
        )
    return "<b>Values per establishment:</b> " + "; ".join(words) + "."


def user_text(text: Any) -> str:
    """A user's string (dataset, query, attribute name): escaped and isolated for bidi."""
    return f"<bdi>{esc(text)}</bdi>"


def percent(v: float, share: bool = False) -> str:
    """A fraction as a percentage, to 2 significant digits (a share: whole percent)."""
    if share:
        return f"{v:.0%}" if 0.01 <= v <= 0.99 or v in (0.0, 1.0) else f"{100 * v:.2g}%"
    return f"{100 * v:.2g}%"


_BUDGET_WORDS = {"epsilon": "ε", "delta": "δ", "mu": "μ"}


def lifetime_budget_html(lb: Mapping[str, Any], dataset: str) -> str:
    """The dataset's lifetime budget: budget, spent before, this release, after, remaining."""
    keys = [k for k in ("epsilon", "delta", "mu") if k in (lb.get("budget") or {})]
    stages = ("budget", "spent_before", "this_release", "spent_after", "remaining")

    def cell(stage: str, k: str) -> Any:
        v = (lb.get(stage) or {}).get(k)
        return "—" if v is None else float(v)

    rows = [[_BUDGET_WORDS[k], *(cell(st, k) for st in stages)] for k in keys]
    headers = ["", "lifetime budget", "spent before", "this release", "spent after",
               "remaining"]  # fmt: skip
    words = (
        f"<p>Every release of dataset {user_text(dataset)} draws on one lifetime budget held in "
        "the ledger. Spent amounts are rounded up and what remains is rounded down; "
        "“remaining” is the largest cost one more release could have (for μ, whose releases "
        "add as √(μ₁² + μ₂² + …), it is √(budget² − spent²)).</p>"
    )
    return "<h3>Lifetime budget</h3>" + words + table(headers, rows, left=1, digits=6)
