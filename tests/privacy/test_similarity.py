"""The ledger's similarity sketch (eree.privacy.similarity): the same data for a budget."""

from __future__ import annotations

import numpy as np
import pytest

from eree.privacy.similarity import THRESHOLD, K, similarity, siphash24, sketch


def test_siphash_reproduces_the_reference_vectors():
    """Aumasson & Bernstein (2012), Appendix A: key 00..0f; messages 00..0e and empty."""
    key = bytes(range(16))
    m0 = np.array([int.from_bytes(bytes(range(8)), "little")], dtype=np.uint64)
    tail = (15 << 56) | int.from_bytes(bytes(range(8, 15)), "little")
    assert int(siphash24(key, [m0], tail)[0]) == 0xA129CA6149BE45E5
    assert int(siphash24(key, [], 0)[0]).to_bytes(8, "little").hex() == "310e0edd47db6f72"


def _structure(rng, n_wp=400, mean_jobs=30):
    words = rng.integers(0, 2**63, n_wp, dtype=np.uint64)
    counts = rng.geometric(1 / mean_jobs, n_wp).astype(np.int64)
    return words, counts


def _jaccard(w1, c1, w2, c2):
    """The exact similarity: tokens (w, 0..c) per workplace (module docstring)."""
    a = dict(zip(w1.tolist(), (c1 + 1).tolist(), strict=True))
    b = dict(zip(w2.tolist(), (c2 + 1).tolist(), strict=True))
    keys = set(a) | set(b)
    inter = sum(min(a.get(k, 0), b.get(k, 0)) for k in keys)
    union = sum(max(a.get(k, 0), b.get(k, 0)) for k in keys)
    return inter / union


def test_one_added_empty_workplace_or_one_moved_job_is_the_same_data():
    rng = np.random.default_rng(1)
    w, c = _structure(rng)
    key = bytes(range(32))
    base = sketch(key, w, c)
    assert len(base) == K and base == sorted(base)
    added = sketch(key, np.append(w, np.uint64(12345)), np.append(c, 0))
    moved = c.copy()
    moved[0] -= 1
    moved[1] += 1
    assert similarity(base, added) >= THRESHOLD
    assert similarity(base, sketch(key, w, moved)) >= THRESHOLD
    assert similarity(base, sketch(key, w[::-1], c[::-1])) == 1.0  # row order is irrelevant
    other_w, other_c = _structure(rng)
    assert similarity(base, sketch(key, other_w, other_c)) < 0.05


def test_the_estimate_separates_near_identical_from_different_data():
    """Over 200 keys: J ≥ 0.99 always recognised, J ≈ 0.8 never (the documented promise).

    The bottom-k estimate has sd √(J(1−J)/K): 0.006 at J = 0.99 and 0.025 at 0.8, so the
    threshold 0.9 lies ≥ 4 sd from both; a sketch of K/4 would put J = 0.8 at 2 sd and be
    caught by the second assertion (the power check).
    """
    rng = np.random.default_rng(7)
    w, c = _structure(rng, n_wp=2000, mean_jobs=20)
    near = c.copy()
    idx = rng.choice(len(c), 150, replace=False)
    near[idx[:75]] += 1  # 75 jobs added, 75 removed: J ≈ 0.996
    near[idx[75:]] = np.maximum(near[idx[75:]] - 1, 0)
    far = c.copy()
    far[: len(c) // 8] = 0  # an eighth of the workplaces lose their jobs
    far[len(c) // 8 : len(c) // 4] *= 2  # and another eighth doubles
    j_near, j_far = _jaccard(w, c, w, near), _jaccard(w, c, w, far)
    assert j_near > 0.99 and 0.75 < j_far < 0.85, (j_near, j_far)
    est_near, est_far = [], []
    for i in range(200):
        key = int(i).to_bytes(32, "big")
        s = sketch(key, w, c)
        est_near.append(similarity(s, sketch(key, w, near)))
        est_far.append(similarity(s, sketch(key, w, far)))
    assert min(est_near) >= THRESHOLD and max(est_far) < THRESHOLD
    # unbiased: the mean estimate is within 4 standard errors of the exact similarity
    se = (j_far * (1 - j_far) / K / 200) ** 0.5
    assert abs(np.mean(est_far) - j_far) < 4 * se, (np.mean(est_far), j_far)


def test_the_sketch_is_keyed_and_holds_no_count_or_id():
    rng = np.random.default_rng(3)
    w, c = _structure(rng, n_wp=50, mean_jobs=3)
    a, b = sketch(b"k" * 32, w, c), sketch(b"l" * 32, w, c)
    assert not set(a) & set(b)  # another key: other values throughout
    stored = " ".join(a)
    for x in [*w.tolist(), *c.tolist()]:
        assert f"{x:016x}" not in stored


@pytest.mark.parametrize("n", [0, 1, 5])
def test_a_small_structure_keeps_every_token(n):
    w = np.arange(n, dtype=np.uint64)
    c = np.full(n, 2, dtype=np.int64)
    assert len(sketch(b"k" * 32, w, c)) == 3 * n


def test_a_stored_sketch_does_not_tell_the_datas_size():
    """Sealed, a sketch is K + 1 words whatever the data; only the key unseals it.

    Unsealed, the K-th smallest of T uniform 64-bit hashes is about 2^64·K/T, and a sketch
    of T < K tokens has T values: the stored hashes would tell the size. Sealed, the
    words of a 3-token and of a 30,000-token dataset are alike: the mean of uniform 64-bit
    words is 2^63 with standard error 2^64/√(12·K·40) over 40 records, so both means lie
    within 5 SE of 2^63 (an unsealed K-th smallest is about 2^64/117 for 30,000 tokens).
    """
    from eree.privacy.similarity import seal, unseal

    key = b"k" * 32
    small = sketch(key, np.array([7], dtype=np.uint64), np.array([2]))
    big = sketch(key, np.arange(1000, dtype=np.uint64), np.full(1000, 29))
    assert len(small) == 3 and len(big) == K
    se = 2**64 / np.sqrt(12 * K * 40)
    for sk in (small, big):
        records = [seal(key, sk) for _ in range(40)]
        assert {len(r) for r in records} == {K + 1}
        assert all(unseal(key, r) == sk for r in records)  # the key gives it back exactly
        words = [int(x, 16) for r in records for x in r[1:]]
        assert abs(np.mean(words) - 2**63) < 5 * se
    # another key does not unseal it
    assert unseal(b"l" * 32, seal(key, big)) != big
