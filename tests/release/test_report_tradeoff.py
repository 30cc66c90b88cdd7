"""The report's Budget and accuracy section escapes every name it shows (issue 38, item 7).

A confidential column's name is the user's text: a script in it must reach the page as
text, never as markup (the section once put the statistic's name in unescaped).
"""

from __future__ import annotations

from eree.release.report_tradeoff import tradeoff_html

HOSTILE = "<script>alert(1)</script>"
QUERY = '<img src=x onerror="alert(2)">'


def _manifest(statistic: str, query: str) -> dict:
    return {
        "accuracy_tradeoff": [
            {
                "query": query,
                "statistic": statistic,
                "parameter": "mu",
                "value": 0.5,
                "at": 1234.0,
                "points": [[0.25, 0.2], [0.5, 0.1], [1.0, 0.05]],
                "published_median": True,
            }
        ]
    }


def test_a_hostile_statistic_and_query_name_are_text_on_the_page() -> None:
    html = tradeoff_html(_manifest(HOSTILE, QUERY))
    assert html  # the section is drawn
    assert "<script" not in html and "<img" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;img src=x" in html


def test_the_same_section_with_plain_names_shows_them() -> None:
    html = tradeoff_html(_manifest("wage", "county"))
    assert "(wage)" in html and "county: wage" in html
