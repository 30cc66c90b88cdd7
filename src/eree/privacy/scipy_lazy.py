"""SciPy functions imported on first call.

Importing SciPy takes a few tenths of a second; a release that never draws Gaussian
noise or solves for a neighbor bound should not pay for it (issue 12: a release as fast
as the group-by beneath it). These wrappers have the signatures of the SciPy functions
they stand for.
"""

from __future__ import annotations

from typing import Any


def ndtr(x: Any) -> Any:
    """:func:`scipy.special.ndtr` (standard normal CDF)."""
    from scipy.special import ndtr as f

    return f(x)


def ndtri(p: Any) -> Any:
    """:func:`scipy.special.ndtri` (standard normal quantile)."""
    from scipy.special import ndtri as f

    return f(p)


def brentq(*args: Any, **kwargs: Any) -> Any:
    """:func:`scipy.optimize.brentq` (bracketed root finding)."""
    from scipy.optimize import brentq as f

    return f(*args, **kwargs)
