r"""Category merges: two or more categories tabulated, and published, as one.

A coarsening tool beside rounding, ranges and suppression: the agency names groups of
categories that are published only together — two counties as one area, two NAICS
industries as one group — and the linked tables are tabulated with each group as one
new category. Its cells are new **combined cells** (every table the merged categories
appear in has one cell for the group instead of one per member); the members' own cells
are not published at all. The relations stay a hierarchy: a merged area is one more child
of the state, a merged industry group one more child of its NAICS-5 parent.

Merges are made at the **finest level** of a dimension, where a group has nothing below
it: counties (the area dimension's finest level) and six-digit NAICS codes that share
their five-digit parent (so every coarser industry level is unchanged). A group's code
is its members' codes, sorted, joined by ``+`` (:func:`group_code`), e.g. ``003+005``.

The rules and the attacker see a merged category as any other: its cells' contributors
are the members' establishments together (their sums, counts and largest contributions
are tabulated from the establishments, not added from the members' cells), and the
attacker's LP has the group's cells and relations, not the members'. What a merge cannot
hide is what the other published cells imply: a merged area's cells plus the state's
other areas still add up to the state's cells, as for any area.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from eree.errors import DataValidationError

__all__ = [
    "MERGE_SEPARATOR",
    "CategoryMerges",
    "check_merges",
    "group_code",
    "merge_categories",
    "merge_problem",
]

#: what joins a group's member codes into the group's code
MERGE_SEPARATOR = "+"

#: a six-digit NAICS code
_NAICS6 = re.compile(r"^[0-9]{6}$")


def group_code(codes: Sequence[str]) -> str:
    """The code of a merged category: its members' codes, sorted, joined by ``+``."""
    return MERGE_SEPARATOR.join(sorted(codes))


@dataclass(frozen=True)
class CategoryMerges:
    """The groups of categories published as one.

    Attributes:
        areas: groups of county codes (as in the data's county column), each published
            as one area.
        industries: groups of six-digit NAICS codes with the same five-digit parent,
            each published as one industry at the six-digit level.
    """

    areas: tuple[tuple[str, ...], ...] = ()
    industries: tuple[tuple[str, ...], ...] = ()

    def __post_init__(self) -> None:
        for groups, industry in ((self.areas, False), (self.industries, True)):
            problem = merge_problem(groups, industry=industry)
            if problem is not None:
                raise ValueError(f"{'industries' if industry else 'areas'}: {problem}")

    def __bool__(self) -> bool:
        return bool(self.areas or self.industries)

    def describe(self) -> dict[str, list[dict[str, object]]]:
        """The groups and the codes they are published under (public)."""
        return {
            "areas": [{"members": list(g), "code": group_code(g)} for g in self.areas],
            "industries": [{"members": list(g), "code": group_code(g)} for g in self.industries],
        }


def merge_problem(groups: Sequence[Sequence[str]], *, industry: bool) -> str | None:
    """What is wrong with ``groups`` (one line, naming the group by its position), or None.

    Each group: at least two distinct codes, none empty or holding ``+``; no code in two
    groups; industries: six-digit NAICS codes, one five-digit parent per group.
    """
    seen: dict[str, int] = {}
    for i, g in enumerate(groups):
        if len(g) < 2:
            return f"group {i + 1} has {len(g)} code(s); a merge needs at least two"
        if len(set(g)) != len(g):
            return f"group {i + 1} names a code twice"
        for c in g:
            if not c or MERGE_SEPARATOR in c or c != c.strip():
                return (
                    f"group {i + 1}: a code must be non-empty, without "
                    f"{MERGE_SEPARATOR!r} or surrounding spaces"
                )
            if industry and not _NAICS6.match(c):
                return f"group {i + 1}: industries are merged as six-digit NAICS codes (got {c!r})"
            if c in seen:
                return f"code {c!r} is in groups {seen[c] + 1} and {i + 1}; a code merges once"
            seen[c] = i
        if industry and len({c[:5] for c in g}) != 1:
            return (
                f"group {i + 1}: merged industries must share their five-digit NAICS parent "
                "(the coarser levels keep their codes)"
            )
    return None


def check_merges(
    frame: pl.DataFrame,
    merges: CategoryMerges,
    *,
    county: str = "cnty",
    naics: str = "naics",
    file: str = "<frame>",
    key: str = "[protection]",
) -> None:
    """Refuse merges the establishments do not support.

    Raises:
        DataValidationError: a named code that no establishment has (a typo would
            otherwise merge nothing), or a group's code that is already a category of
            the data (the two would be tabulated as one) — naming the spec key, the file
            and the column; no confidential value is printed (the codes are public).
    """
    for groups, column, name in (
        (merges.areas, county, "merge_areas"),
        (merges.industries, naics, "merge_industries"),
    ):
        if not groups:
            continue
        present = set(frame.get_column(column).cast(pl.Utf8).unique().to_list())
        for g in groups:
            for c in g:
                if c not in present:
                    raise DataValidationError(
                        f"{key}.{name} names {c!r}, which no establishment has",
                        file=file,
                        column=column,
                        rule="merge",
                    )
            if group_code(g) in present:
                raise DataValidationError(
                    f"{key}.{name}: the merged code {group_code(g)!r} is already a code of "
                    "the data",
                    file=file,
                    column=column,
                    rule="merge",
                )


def merge_categories(
    frame: pl.DataFrame, merges: CategoryMerges, *, county: str = "cnty", naics: str = "naics"
) -> pl.DataFrame:
    """The establishments with each group's members recoded to the group's code.

    Only the finest columns change (the county, the six-digit NAICS code): a group's
    members share every coarser code. :func:`check_merges` says whether the data
    support the merges.
    """
    out = frame
    for groups, column in ((merges.areas, county), (merges.industries, naics)):
        if groups:
            mapping = {c: group_code(g) for g in groups for c in g}
            out = out.with_columns(pl.col(column).cast(pl.Utf8).replace(mapping).alias(column))
    return out
