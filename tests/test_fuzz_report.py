"""Property: whatever the runs are called, the report is built and its page shows each name as the text it is:
HTML-escaped (no markup of a name reaches the page as markup), drawn literally in the charts (matplotlib reads
`$...$` as maths, `\\` as an escape), never a crash. The names are drawn from what breaks renderers: dollar signs,
backslashes, braces, markup, quotes, ampersands, percent signs, non-ASCII letters and an emoji."""
import html

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlmetrics import demo
from sqlmetrics.stats.html import build_report

QRELS, (BM25, RERANK) = demo.paths()

PIECES = ["$", "\\", "{", "}", "<b>", "</script>", "&amp;", "&", "'", '"', "%", "_", "^", "x", " ", "é", "\U0001F600",
          "\\frac", "mathrm"]
NAME = st.lists(st.sampled_from(PIECES), min_size=1, max_size=6).map("".join).filter(lambda s: s.strip())


@pytest.mark.slow  # hypothesis, 12 reports of two runs with their charts
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(NAME, NAME)
def test_any_run_names_are_text_in_the_page_and_the_charts(first, second):
    if first == second:
        second += " 2"
    report = build_report(str(QRELS), {first: str(BM25), second: str(RERANK)}, ["AP"], test="student")
    page = report.to_html()
    for name in (first, second):
        assert html.escape(name) in page
    assert "<b>" not in page and "</script>" not in page  # the page has neither of its own: a name's came through
