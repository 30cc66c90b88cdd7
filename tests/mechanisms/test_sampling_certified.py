"""The fast path's error bounds are rigorous and every output is the ideal value, rounded.

The reference is an independent Arb evaluation of each law from the random words (the
conventions of :mod:`eree.mechanisms.sampling`: sign = top bit, 1 → negative; a 63-bit
V = (m + [0,1))/2⁶³; Gaussian pairs of words V₁, V₂ = (a + [0,1))/2⁶⁴, cells 2j/2j+1 get
R cos θ / R sin θ; Smooth Gamma proposals Z = ±cot(πP), P = (m + [0,1))/2⁶⁴, m the low 63
bits). Every point of the ideal draw's enclosure must lie within the reported error of
the float draw, and every published value must be the correct rounding of the ideal
output c + bW on the grid, whether the fast or the slow path produced it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from flint import arb, ctx, fmpq, fmpz
from hypothesis import example, given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from eree.mechanisms import noise_laws, sampling
from eree.mechanisms.noise import NoiseSource, SeededNoise
from eree.mechanisms.noise_laws import LAWS, LIBM_RELATIVE_ERROR, RampLaw, SmoothGammaLaw
from eree.mechanisms.sampling import Term, additive, exact_centre, rounded_noisy

PREC = 300
U = 2.0**-53
MASK63 = 2**63 - 1
RAMP_S, RAMP_T = 0.05, 0.15
LAW_NAMES = ("laplace", "gaussian", "smooth_gamma", "ramp")
EXTREME_WORDS = [
    0, 1, 2, 3, 2**11, 2**32, 2**62, 2**62 + 1,
    2**63 - 2**11, 2**63 - 3, 2**63 - 2, 2**63 - 1,
    2**63, 2**63 + 1, 2**63 + 2, 2**63 + 3, 2**63 + 2**11, 2**63 + 2**62,
    2**64 - 2**11, 2**64 - 2, 2**64 - 1,
]  # fmt: skip
RANDOM_WORDS = [int(w) for w in np.random.default_rng(2024).integers(0, 2**64, 9, np.uint64)]
WORDS = EXTREME_WORDS + RANDOM_WORDS


def make_law(name: str) -> noise_laws.Law:
    return RampLaw(RAMP_S, RAMP_T) if name == "ramp" else LAWS[name]


class Words(NoiseSource):
    """Hands out chosen words first, then seeded ones (extensions, rejection proposals)."""

    mode = "seeded"

    def __init__(self, words: list[int], seed: int = 0) -> None:
        self.queue = [int(w) for w in words]
        self.rest = SeededNoise(seed)
        self.handed: list[int] = []  # every word handed out, in order

    def bits(self, size: int) -> NDArray[np.uint64]:
        head, self.queue = self.queue[:size], self.queue[size:]
        tail = self.rest.bits(size - len(head))
        out = np.concatenate([np.array(head, dtype=np.uint64), tail])
        self.handed += [int(x) for x in out]
        return out


class Spy:
    """A law that records the states of its fast draws (the slow path refines them in place)."""

    def __init__(self, law: noise_laws.Law) -> None:
        self.law = law
        self.states: list[Any] = []

    def fast(self, source: NoiseSource, n: int) -> tuple[np.ndarray, np.ndarray, Any]:
        w, err, states = self.law.fast(source, n)
        self.states.append(states)
        return w, err, states

    def draw(self, source: NoiseSource, n: int) -> noise_laws.Draw:
        d = self.law.draw(source, n)  # the layer's first tier: the same states
        self.states.append(d.states)
        return d

    def __getattr__(self, name: str) -> Any:
        return getattr(self.law, name)


@contextmanager
def precision(bits: int) -> Iterator[None]:
    old = ctx.prec
    ctx.prec = bits
    try:
        yield
    finally:
        ctx.prec = old


# --------------------------------------------------------------------------- own Arb laws


Interval = tuple[arb, arb]


def interval(m: int, k: int) -> Interval:
    """The exact endpoints m/2^k, (m+1)/2^k of a uniform's interval of known bits."""
    den = arb(fmpz(2**k))
    lo, hi = arb(fmpz(m)) / den, arb(fmpz(m + 1)) / den
    assert lo.is_exact() and hi.is_exact(), "raise the precision"
    return lo, hi


def image(f: Callable[[arb], arb], v: Interval) -> arb:
    """f(V) for V in the interval, f monotone: the union of the endpoint values (tight).

    Arb's ball evaluation of log etc. on a relatively wide ball (a uniform with few known
    bits, e.g. V ∈ [2⁻⁵², 2⁻⁵²(1 + 2⁻¹¹)]) overestimates its radius by more than the
    fast path's bound leaves to spare; monotone maps are evaluated at exact points instead.
    """
    return f(v[0]).union(f(v[1]))


def signed(negative: int, x: arb) -> arb:
    return -x if negative else x


def own_laplace(negative: int, v: Interval) -> arb:
    return signed(negative, image(lambda x: -x.log(), v))  # ±(−ln V)


def own_ramp(negative: int, v: Interval) -> arb:
    c = arb(RAMP_T) / (arb(RAMP_T) - arb(RAMP_S))
    return signed(negative, image(lambda x: c - x.sqrt(), v))  # ±(t/(t−s) − √V)


def own_gaussian(v1: Interval, v2: Interval, cell: int) -> arb:
    radius = image(lambda x: (-2 * x.log()).sqrt(), v1)
    turns = 2 * v2[0].union(v2[1])  # θ/π; the interval is ≤ 2⁻⁶³ wide: arb is tight here
    return radius * (turns.cos_pi() if cell % 2 == 0 else turns.sin_pi())


def own_smooth_gamma(negative: int, p: Interval) -> arb:
    return signed(negative, image(lambda x: x.cot_pi(), p))  # ±cot(πP)


def own_from_words(name: str, words: np.ndarray, i: int) -> arb:
    """The ideal W_i's enclosure from the fast path's words alone (``states["words"]``)."""
    if name == "gaussian":
        a, b = (int(x) for x in words[i // 2])
        return own_gaussian(interval(a, 64), interval(b, 64), i)
    w = int(words[i][0]) if name == "smooth_gamma" else int(words[i])
    if name == "smooth_gamma":
        return own_smooth_gamma(w >> 63, interval(w & MASK63, 64))
    own = own_laplace if name == "laplace" else own_ramp
    return own(w >> 63, interval(w & MASK63, 63))


def own_from_uniforms(name: str, us: list[noise_laws.Uniform], i: int) -> arb:
    """The ideal W_i's enclosure from its (possibly extended) uniforms' bits."""
    if name == "gaussian":
        return own_gaussian(interval(us[0].m, us[0].k), interval(us[1].m, us[1].k), i)
    negative = us[0].m >> (us[0].k - 1)  # the sign is the word's top bit, whatever follows
    if name == "smooth_gamma":  # P = (63-bit uniform)/2
        return own_smooth_gamma(negative, interval(us[1].m, us[1].k + 1))
    own = own_laplace if name == "laplace" else own_ramp
    return own(negative, interval(us[1].m, us[1].k))


def sg_accept(z: arb) -> arb:
    """a(z) = K(1+z²)/(1+z⁴), K = 2/(1+√2): the Cauchy → (√2/π)/(1+z⁴) acceptance."""
    z2 = z * z
    return 2 / (1 + arb(2).sqrt()) * (1 + z2) / (1 + z2 * z2)


def sg_accept_min(p: Interval) -> arb:
    """min of a(cot πP) over the interval (a is unimodal in |z|: the minimum is at an end)."""
    lo, hi = (sg_accept(x.cot_pi()) for x in p)
    return lo.min(hi)


def assert_within(ball: arb, w_hat: float, err: float, what: str) -> None:
    assert ball.is_finite(), f"{what}: the ideal draw is unbounded but the error is {err}"
    far = (ball - arb(w_hat)).abs_upper()
    assert far <= arb(err), f"{what}: |W − ŵ| reaches {far.mid()} > reported error {err}"


# --------------------------------------------------------------------------- fast-path bounds


def check_fast_draws(name: str, w: np.ndarray, err: np.ndarray, states: Any) -> int:
    """Checks every draw with a finite error; returns how many were checked."""
    law = make_law(name)
    words = states["words"]
    checked = 0
    with precision(PREC):
        for i in range(w.size):
            if not math.isfinite(err[i]):
                continue
            what = f"{name} draw {i} (words {words[i // 2 if name == 'gaussian' else i]})"
            own = own_from_words(name, words, i)
            assert_within(own, float(w[i]), float(err[i]), what + " [own Arb]")
            lib = law.ball(states, i, PREC)
            if lib.is_finite():  # (an unbounded ball is a useless but valid enclosure)
                assert lib.overlaps(own), what + ": law.ball and the words disagree"
                if lib.rad() <= own.rad() * (1 + 2.0**-20) + arb(2) ** -250:  # tight: see image
                    assert_within(lib, float(w[i]), float(err[i]), what + " [law.ball]")
            if name == "smooth_gamma":  # a certain accept holds on the whole box
                _, v_hi = interval(int(words[i][1]), 64)
                p = interval(int(words[i][0]) & MASK63, 64)
                assert v_hi < sg_accept_min(p), what + ": accepted, but V < a(Z) is uncertain"
            checked += 1
    return checked


@pytest.mark.parametrize("name", LAW_NAMES)
def test_fast_error_bounds_enclose_the_ideal_draw(name):
    n = 20_000
    w, err, states = make_law(name).fast(SeededNoise(77), n)
    assert w.shape == err.shape == (n,)
    checked = check_fast_draws(name, w, err, states)
    assert checked >= n - 5  # an infinite bound is for the rare unusable draw only
    finite = err[np.isfinite(err)]
    # the bounds are useful, not just safe: typically ~2⁻⁴⁴·|W| (the assumed libm error)
    assert np.median(finite / (1 + np.abs(w[np.isfinite(err)]))) < 1e-12


@pytest.mark.parametrize("name", ["laplace", "ramp"])
def test_fast_error_bounds_hold_on_extreme_words(name):
    w, err, states = make_law(name).fast(Words(WORDS), len(WORDS))
    assert [int(x) for x in states["words"]] == WORDS
    for word, e in zip(WORDS, err, strict=True):
        if word & MASK63 == 0:  # V ∈ [0, 2⁻⁶³): the Laplace draw is unbounded
            assert not math.isfinite(e) or name == "ramp"
    assert check_fast_draws(name, w, err, states) >= len(WORDS) - 2


def test_gaussian_fast_error_bounds_hold_on_extreme_pairs():
    pairs = [(a, b) for a in WORDS for b in WORDS]
    flat = [x for pair in pairs for x in pair]
    w, err, states = LAWS["gaussian"].fast(Words(flat), 2 * len(pairs))
    assert [tuple(int(x) for x in row) for row in states["words"]] == pairs
    bad = [a for a, _ in pairs if a == 0]  # V₁ ∈ [0, 2⁻⁶⁴): R unbounded
    assert check_fast_draws("gaussian", w, err, states) == 2 * (len(pairs) - len(bad))


def test_smooth_gamma_proposal_bounds_hold_on_extreme_words():
    z, e_z, bad = SmoothGammaLaw._proposal(np.array(WORDS, dtype=np.uint64))
    with precision(PREC):
        for word, zi, ei, b in zip(WORDS, z, e_z, bad, strict=True):
            if not b:
                own = own_smooth_gamma(word >> 63, interval(word & MASK63, 64))
                assert_within(own, float(zi), float(ei), f"proposal from word {word}")
    assert not bad[WORDS.index(2**63 - 1)] and bad[WORDS.index(0)] and bad[WORDS.index(2**63)]


def test_smooth_gamma_fast_error_bounds_hold_on_extreme_proposals():
    # V's word 0 (V < 2⁻⁶⁴) accepts every proposal whose acceptance probability is not tiny
    flat = [x for word in WORDS for x in (word, 0)]
    w, err, states = LAWS["smooth_gamma"].fast(Words(flat, seed=5), len(WORDS))
    proposals = [int(x) for x in states["words"][:, 0]]
    assert sum(p in WORDS for p in proposals) >= 20
    assert check_fast_draws("smooth_gamma", w, err, states) >= len(WORDS) - 4


def test_smooth_gamma_decides_a_proposal_in_float_only_when_certain(monkeypatch):
    # V's word at a(Z): its 64-bit box straddles the acceptance boundary, so the float
    # decision cannot be certain: every such pair must be decided exactly (_decide), and an
    # accepted one must come with refined (exact) states
    law = LAWS["smooth_gamma"]
    decided: list[tuple[int, int]] = []
    exact_decide = law._decide

    def spy_decide(source: NoiseSource, states: list[noise_laws.Uniform]) -> bool:
        decided.append(((states[0].m << 63) | states[1].m, states[2].m))
        return exact_decide(source, states)

    monkeypatch.setattr(law, "_decide", spy_decide)
    rng = np.random.default_rng(31)
    pairs = []
    with precision(PREC):
        for m in rng.integers(2**40, 2**63, 30, dtype=np.uint64).tolist():
            lo, hi = interval(int(m), 64)
            a_mid = sg_accept(((lo + hi) / 2).cot_pi())
            pairs.append((int(m), int((a_mid * arb(fmpz(2**64))).floor().unique_fmpz())))
    flat = [x for pair in pairs for x in pair]
    w, err, states = law.fast(Words(flat, seed=8), 30)  # one batch (≥ 30 pairs) holds them all
    missed = [pair for pair in pairs if pair not in decided]
    assert not missed, f"{len(missed)} uncertain proposals were decided in float: {missed[:3]}"
    rows = [tuple(int(x) for x in row) for row in states["words"]]
    ours = [i for i, row in enumerate(rows) if row in pairs]
    assert ours, "no boundary pair was accepted (seeded: this should not happen)"
    assert all(not math.isfinite(err[i]) and i in states["ext"] for i in ours)
    check_fast_draws("smooth_gamma", w, err, states)


# --------------------------------------------------------------------------- end to end


ScaleBall = Callable[[int], arb]


def float_scale(scale: np.ndarray) -> ScaleBall:
    return lambda i: arb(float(scale[i]))


def own_cells(name: str, spy: Spy, centre: np.ndarray, scale: ScaleBall,
              grid: np.ndarray) -> list[int]:  # fmt: skip
    """Index of the grid point nearest the ideal c + bW, per cell, from the final uniforms."""
    (states,) = spy.states
    cells = []
    for i in range(centre.size):
        us = spy.law.states_of(states, i)
        bits = max(u.k for u in us)
        with precision(max(PREC, bits + 192)):
            y = arb(float(centre[i])) + scale(i) * own_from_uniforms(name, us, i)
            cell = (y / arb(float(grid[i])) + arb(0.5)).floor()
            assert cell.is_exact(), f"{name} cell {i}: the ideal output's cell is not certain"
            cells.append(int(cell.unique_fmpz()))
    return cells


def assert_correctly_rounded(name: str, spy: Spy, out: np.ndarray, centre: np.ndarray,
                             scale: ScaleBall, grid: np.ndarray) -> None:  # fmt: skip
    cells = own_cells(name, spy, centre, scale, grid)
    # float(cell)·r: the grid point itself (or, past 2⁵³ grid steps, the float nearest it)
    expected = np.array([float(k) * r for k, r in zip(cells, grid, strict=True)])
    wrong = np.flatnonzero(out != expected)
    assert wrong.size == 0, (
        f"{name}: cells {wrong[:5]} published {out[wrong[:5]]}, correct {expected[wrong[:5]]}"
    )


def assert_fresh_extensions(name: str, spy: Spy, source: Words, n: int) -> None:
    """Every 64-bit extension of a uniform is a word the source handed out after the fast
    draws (for Laplace, ramp and Gaussian: exactly those words, each used once)."""
    (states,) = spy.states
    uniforms = {id(u): u for i in range(n) for u in spy.law.states_of(states, i)}
    chunks = []
    for u in uniforms.values():
        extra = u.k - {1: 1, 63: 63, 64: 64}[u.k % 64 or 64]
        chunks += [(u.m >> (64 * j)) & (2**64 - 1) for j in range(extra // 64)]
    fast = {"laplace": n, "ramp": n, "gaussian": 2 * ((n + 1) // 2)}.get(name)
    if fast is None:  # Smooth Gamma: rejection and exact decisions draw words too
        assert not Counter(chunks) - Counter(source.handed)
    else:
        assert Counter(chunks) == Counter(source.handed[fast:])


def boundary_word(name: str, c: float, b: float | Fraction, r: float, target: float) -> list[int]:
    """Words whose ideal c + bW lies within ~2⁻⁶³ of a rounding boundary near c + b·target.

    ``b`` is the exact scale (a float or a fraction such as 1/3).
    """
    j = math.floor((c + float(b) * target) / r)
    fb = Fraction(b)
    with precision(PREC):
        w = ((j + arb(0.5)) * arb(r) - arb(c)) / arb(fmpq(fb.numerator, fb.denominator))
        negative = int(w < 0)
        mag = abs(w)

        def floor_at(x: arb, k: int) -> int:
            return int((x * arb(fmpz(2**k))).floor().unique_fmpz())

        if name == "laplace":
            return [(negative << 63) | floor_at((-mag).exp(), 63)]
        if name == "ramp":
            root = arb(RAMP_T) / (arb(RAMP_T) - arb(RAMP_S)) - mag
            return [(negative << 63) | floor_at(root * root, 63)]
        if name == "smooth_gamma":  # P = arccot(|w|)/π; V's word 0 accepts the proposal
            return [(negative << 63) | floor_at((1 / mag).atan() / arb.pi(), 64), 0]
        # Gaussian: θ ≈ π/4 (or 5π/4 for a negative w), R = |w|/|cos θ|
        theta_word = 2**61 + 12345 + (negative << 63)
        theta = 2 * arb.pi() * (arb(fmpz(theta_word)) + arb(0.5)) / arb(fmpz(2**64))
        radius = mag / abs(theta.cos())
        return [floor_at((-radius * radius / 2).exp(), 64), theta_word]


@pytest.mark.parametrize("grid", [1.0, 2.0**-20, 2.0**-40])
@pytest.mark.parametrize("name", LAW_NAMES)
def test_rounded_noisy_is_the_correct_rounding_for_hand_picked_words(name, grid):
    b = 3.0
    boundary_centres = [0.0, 5.0, -3.0, 0.375, 1234.5, -40_000.0]
    target = 0.9 if name == "ramp" else 1.3
    words: list[int] = []
    for c in boundary_centres:
        words += boundary_word(name, c, b, grid, target if c >= 0 else -target)
    per_cell = 2 if name == "smooth_gamma" else 1
    tail = [x for w in WORDS for x in ((w, 0) if name == "smooth_gamma" else (w,))]
    n = (len(words) + len(tail)) // per_cell
    if name == "gaussian":  # boundary pairs feed cells 2j (cos); cells 2j+1 get the sin
        boundary_centres = [c for c in boundary_centres for c in (c, 7.0)]
    centre = np.array(boundary_centres + [0.5 * (i % 5) - 1.0 for i in range(n)])[:n]
    spy = Spy(make_law(name))
    slow0 = sampling.STATS.slow
    source = Words(words + tail, seed=9)
    out = rounded_noisy(source, exact_centre(centre),
                        [Term(spy, np.full(n, b))], grid)  # type: ignore[arg-type]  # fmt: skip
    slow = sampling.STATS.slow - slow0
    boundary = len(boundary_centres) // (2 if name == "gaussian" else 1)
    assert slow >= boundary  # the fast path cannot settle a draw at a rounding boundary
    if grid == 2.0**-40:  # about the fast path's error (~2⁻⁴⁴·|W|): others go slow too
        assert slow > boundary
    assert_correctly_rounded(name, spy, out, centre, float_scale(np.full(n, b)), np.full(n, grid))
    assert_fresh_extensions(name, spy, source, n)


def test_additive_uses_the_exact_ratio_numerator_over_denominator():
    # b = 1/3 exactly; boundary words for the exact b land within ~2⁻⁶³ of a boundary, where
    # the float b (off by ~2⁻⁵⁵·b) sits on a definite side: about half the cells tell them apart
    grid, n = 2.0**-50, 40
    third = Fraction(1, 3)
    words = [
        x for i in range(n) for x in boundary_word("smooth_gamma", 0.0, third, grid, 1.3 + 0.01 * i)
    ]
    spy = Spy(LAWS["smooth_gamma"])
    term = Term(spy, np.full(n, 1 / 3), 2 * U, lambda i: arb(1) / arb(3))  # type: ignore[arg-type]
    out = rounded_noisy(Words(words, seed=3), exact_centre(np.zeros(n)), [term], grid)
    zeros, grids = np.zeros(n), np.full(n, grid)
    assert_correctly_rounded("smooth_gamma", spy, out, zeros, lambda i: arb(1) / arb(3), grids)
    float_b = own_cells("smooth_gamma", spy, zeros, float_scale(np.full(n, 1 / 3)), grids)
    assert any(float(k) * grid != o for k, o in zip(float_b, out, strict=True))
    # and additive() (numerator/denominator) publishes the same values from the same words
    again = additive(Words(words, seed=3), zeros, "smooth_gamma", 1 / 3, grid,
                     numerator=np.ones(n), denominator=3.0)  # fmt: skip
    assert np.array_equal(again, out)


#: words whose ideal draw's interval is nearly as wide as the fast path's error bound (few
#: known bits: V or P tiny), so a boundary placed inside the bound cuts the interval.
WIDE_WORDS = {
    "laplace": [[s | m] for m in (1, 2**11, 3001, 2**14 + 7, 2**16) for s in (0, 2**63)],
    "ramp": [[s | m] for m in (1, 2**11, 3001, 2**14 + 7, 2**16) for s in (0, 2**63)],
    "gaussian": [[a, 2**61 + 12345] for a in (2**8, 2**10 + 3, 2**14)],
    "smooth_gamma": [
        [(sign << 63) | int(2**64 / (math.pi * z)), 0] for z in (1e6, 1e7, 1e8) for sign in (0, 1)
    ],
}


@pytest.mark.parametrize("name", LAW_NAMES)
def test_fast_path_never_settles_a_draw_within_its_error_of_a_boundary(name):
    # boundary at ŵ ± 0.6·err and ± 0.9·err (inside the bound): the draw must take the slow
    # path and publish the correct cell; a fast path that trusted only part of its bound
    # would settle it although its ideal interval straddles the boundary
    cases = 0
    for unit in WIDE_WORDS[name]:
        (w_hat,), (err,), _ = make_law(name).fast(Words(unit), 1)
        assert math.isfinite(err)
        r = 2.0 ** math.ceil(math.log2(4 * err))
        for offset in (0.6 * err, -0.6 * err, 0.9 * err, -0.9 * err):
            c = np.array([r / 2 - (w_hat + offset)])  # boundary r/2 at W = ŵ + offset
            spy = Spy(make_law(name))
            slow0 = sampling.STATS.slow
            out = rounded_noisy(Words(unit, seed=cases), exact_centre(c),
                                [Term(spy, np.ones(1))], r)  # type: ignore[arg-type]  # fmt: skip
            assert sampling.STATS.slow == slow0 + 1, f"{name} {unit}: settled within its error"
            assert_correctly_rounded(name, spy, out, c, float_scale(np.ones(1)), np.full(1, r))
            cases += 1


WORD = st.one_of(st.sampled_from(EXTREME_WORDS), st.integers(0, 2**64 - 1))
CENTRE = st.one_of(
    st.integers(-(10**9), 10**9).map(float),
    st.integers(-(2**30), 2**30).map(lambda k: k / 1024),
    st.floats(-1e9, 1e9, allow_nan=False),
)


@pytest.mark.parametrize("name", LAW_NAMES)
@settings(max_examples=100, deadline=None)
@given(
    words=st.lists(WORD, min_size=2, max_size=12),
    centres=st.lists(CENTRE, min_size=6, max_size=6),
    exps=st.lists(st.integers(-40, 3), min_size=6, max_size=6),
    scale=st.floats(1e-6, 1e6),
    seed=st.integers(0, 2**32),
)
# V ∈ [0, 2⁻⁶³) (word 0): unbounded in float, every law's slow path must refine it
@example(words=[0, 0], centres=[0.0] * 6, exps=[0] * 6, scale=1.0, seed=0)
def test_rounded_noisy_is_the_correct_rounding_of_the_ideal_output(name, words, centres, exps,
                                                                   scale, seed):  # fmt: skip
    n = max(1, len(words) // (2 if name in ("gaussian", "smooth_gamma") else 1))
    centre = np.resize(np.array(centres), n)
    grid = np.resize(np.exp2(np.array(exps, dtype=float)), n)
    spy = Spy(make_law(name))
    source = Words(words, seed)
    out = rounded_noisy(source, exact_centre(centre),
                        [Term(spy, np.full(n, scale))], grid)  # type: ignore[arg-type]  # fmt: skip
    assert_correctly_rounded(name, spy, out, centre, float_scale(np.full(n, scale)), grid)
    assert_fresh_extensions(name, spy, source, n)


# --------------------------------------------------------------------------- libm


def libm_arguments(fn: str, n: int) -> np.ndarray:
    rng = np.random.default_rng(sum(map(ord, fn)))
    q = n // 5
    uniforms = (rng.integers(0, 2**63, q, dtype=np.uint64).astype(float) + 0.5) * 2.0**-63
    wide = np.exp2(rng.uniform(-1074, 1023, q))  # tiny (subnormal) to huge
    if fn in ("log", "sqrt"):
        special = np.array([5e-324, 2.0**-1022, 2.0**-64, 0.5, 1.0, 2.0, 1.7976931348623157e308])
        near_one = 1.0 + rng.integers(-2000, 2000, q) * 2.0**-53
        parts = [uniforms, wide, near_one, -2.0 * np.log(uniforms), rng.uniform(0, 1e12, q)]
    else:
        half_pi = math.pi / 2
        k = rng.integers(-(10**6), 10**6, q).astype(float)
        near = k * half_pi  # near zeros of sin, cos and tan (and tan's poles)
        near += rng.integers(-50, 51, q) * np.spacing(np.maximum(np.abs(near), 1.0))
        low = rng.integers(0, 8, q) * half_pi + rng.integers(-50, 51, q) * 2.0**-52
        special = np.array([5e-324, 2.0**-1022, 1e-300, half_pi, math.pi, 2 * math.pi, 1e300])
        domain = 2 * math.pi * uniforms if fn != "tan" else math.pi * uniforms / 2
        parts = [domain, wide * rng.choice([-1.0, 1.0], q), near, low, rng.uniform(-1e4, 1e4, q)]
    xs = np.concatenate([special, *parts])
    return xs[np.isfinite(xs) & ((xs > 0) if fn in ("log", "sqrt") else True)]


@pytest.mark.parametrize("fn", ["log", "sqrt", "tan", "sin", "cos"])
def test_numpy_libm_is_within_the_assumed_relative_error(fn):
    xs = libm_arguments(fn, 100_000)
    ref = np.empty(xs.size)
    with precision(192):
        for i, x in enumerate(xs.tolist()):
            y = getattr(arb(x), fn)()
            assert y.is_exact() or y.rel_accuracy_bits() > 64, (fn, x)
            ref[i] = float(y.mid())  # within ½ulp (plus 2⁻⁶⁴ relative) of the exact value
    got = getattr(np, fn)(xs)
    diff = np.abs(got - ref)
    # the reference's own rounding (≤ ½ulp ≤ U·|ref|) is taken off the bound
    bound = (LIBM_RELATIVE_ERROR - U) * np.abs(ref)
    if fn in ("sin", "cos"):  # the fast path's form near the zeros: ρ|result| + U
        bound += U
    bad = np.flatnonzero(~(diff <= bound))
    assert bad.size == 0, f"np.{fn} at {xs[bad[:3]]}: {got[bad[:3]]} vs {ref[bad[:3]]}"


def test_a_published_zero_does_not_show_which_path_computed_it():
    """−0.0 and +0.0 compare equal but are different bits: every zero must be +0.0."""
    from eree.mechanisms.sampling import additive

    for grid in (1.0, 2.0**-40):  # fast path, and (almost) every draw on the slow path
        out = additive(SeededNoise(1), np.zeros(4000), "laplace", 1.0, grid)
        zeros = out[out == 0]
        assert not np.signbit(zeros).any()
    assert (additive(SeededNoise(1), np.zeros(4000), "laplace", 1.0, 1.0) == 0).sum() > 1000


# --------------------------------------------------------------------------- the first tier


TIER_LAWS = ["laplace", "gaussian", "smooth_gamma"]


@pytest.mark.parametrize("name", TIER_LAWS)
def test_the_first_tier_bounds_cover_every_per_cell_bound_outside_the_tail(name):
    """Law.draw gives fast's values, and outside its tail its scalar bounds hold for
    fast's per-cell bounds (which the tests above hold against Arb)."""
    law = LAWS[name]
    n = 200_000
    d = law.draw(SeededNoise(41), n)
    w, err, _ = law.fast(SeededNoise(41), n)
    assert np.array_equal(d.w, w)  # the same draws, bit for bit
    out = np.ones(n, dtype=bool)
    out[d.tail] = False
    assert out.mean() > 0.99  # the tail is rare
    assert np.all(np.abs(w[out]) <= d.wmax)
    assert np.all(err[out] <= d.ew)
    if name != "smooth_gamma":  # (its bound is set at |Z| = 1024, far beyond a sample's)
        assert err[out].max() > d.ew / 64  # the scalar bound is not loose by orders


@pytest.mark.parametrize("name", ["laplace", "gaussian"])
def test_the_first_tier_at_the_edge_of_its_tail(name):
    """Words just inside and just outside the tail's limits."""
    law = LAWS[name]
    if name == "laplace":
        edge = [2**43 - 1, 2**43, 2**43 + 1, 2**63 + 2**43 - 1, 2**63 + 2**43, 2**63 - 1]
        words = edge
    else:
        v1 = [2**44 - 1, 2**44, 2**44 + 1, 2**64 - 2**52 - 1, 2**64 - 2**52, 2**64 - 2**52 + 1]
        words = [x for v in v1 for x in (v, 12345 * 2**40)]
    n = len(words)
    d = law.draw(Words(words, seed=1), n)
    w, err, _ = law.fast(Words(words, seed=1), n)
    assert np.array_equal(d.w, w)
    out = np.ones(n, dtype=bool)
    out[d.tail] = False
    assert np.all(np.abs(w[out]) <= d.wmax) and np.all(err[out] <= d.ew)


@pytest.mark.parametrize("grid", [1.0, 2.0**-20, 2.0**-40])
@pytest.mark.parametrize("name", TIER_LAWS)
def test_the_tiers_publish_what_per_cell_bounds_alone_publish(monkeypatch, name, grid):
    """Every certified route gives the correct rounding: the first tier changes nothing."""
    from eree.mechanisms.noise_laws import Law
    from eree.mechanisms.sampling import additive

    centre = np.random.default_rng(3).integers(-(10**6), 10**6, 30_000).astype(float)
    tiered = additive(SeededNoise(43), centre, name, 2.5, grid)
    monkeypatch.setattr(type(LAWS[name]), "draw", Law.draw)  # every cell its own bound
    monkeypatch.setattr(type(LAWS[name]), "precise", Law.precise)
    assert np.array_equal(additive(SeededNoise(43), centre, name, 2.5, grid), tiered)
