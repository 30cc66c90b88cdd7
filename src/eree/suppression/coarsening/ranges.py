"""Size-class ranges: a value published as the class of fixed edges that holds it.

The classes are public and fixed before the data are seen (:data:`SIZE_CLASS_EDGES`: the
QCEW establishment size classes 0, 1–4, 5–9, 10–19, 20–49, 50–99, 100–249, 250–499,
500–999, then 1, 2.5 and 5 per decade), so a range says only which class the
value is in. The top class is closed by the next edge (the ladder goes on to any size).
"""

from __future__ import annotations

import numpy as np

__all__ = ["SIZE_CLASS_EDGES", "size_class"]


def _edges(top: float = 1e15) -> np.ndarray:
    out = [0.0, 1.0, 5.0, 10.0, 20.0, 50.0, 100.0, 250.0, 500.0]
    while out[-1] < top:
        d = out[-3] * 10.0
        out += [d, d * 2.5, d * 5.0]
    return np.array(out)


#: lower edges of the classes: [e_k, e_{k+1} − 1] for counts; 0 is a class of its own
SIZE_CLASS_EDGES: np.ndarray = _edges()


def size_class(
    values: np.ndarray, edges: np.ndarray = SIZE_CLASS_EDGES, *, integer: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """The class of each value: (lower, upper), ``lower ≤ value ≤ upper``.

    For counts the class of edges ``e_k ≤ v < e_{k+1}`` is ``[e_k, e_{k+1} − 1]``;
    otherwise ``[e_k, e_{k+1}]``.
    """
    v = np.asarray(values, dtype=np.float64)
    e = np.asarray(edges, dtype=np.float64)
    if np.any(v < 0) or np.any(v >= e[-1]):
        raise ValueError("a value outside the size classes")
    k = np.searchsorted(e, v, side="right") - 1
    lo = e[k]
    hi = e[k + 1] - (1.0 if integer else 0.0)
    return lo, np.maximum(hi, lo)
