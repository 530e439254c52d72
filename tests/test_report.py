"""The HTML report (`sqlmetrics report`, stats.html.build_report): its numbers against independent
computations (compare(), evaluate()'s per-query table with pandas, pytrec_eval, scipy), the page being
self-contained, the command line, and the page opened in a real browser (Debian's chromium, driven by
Selenium through /usr/bin/chromedriver; SQLMETRICS_REQUIRE_ENGINES=1, as CI sets it, turns its absence into
a failure).
"""
from __future__ import annotations

import gzip
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pandas as pd
import pytest
import pytrec_eval
from matplotlib.colors import to_hex
from scipy import stats

import sqlmetrics
from sqlmetrics import demo
from sqlmetrics.cli import main
from sqlmetrics.errors import SqlmetricsError
from sqlmetrics.stats import charts
from sqlmetrics.stats.html import build_report

from conftest import unavailable

QRELS, (BM25, RERANK) = demo.paths()
RUNS = {"bm25": str(BM25), "rerank": str(RERANK)}
MEASURES = ["nDCG@10", "AP", "P@10", "num_rel_ret", "gm_map", "FirstRank"]  # FirstRank: lower is better
LOG = str(demo.folder() / "search_log.parquet")
LOG_OPTIONS = dict(label="rating", ties="rank", group_by=["date", "arm"],
                   columns={"query_id": "session", "doc_id": "doc", "rank_position": "position"})
ARM_OPTIONS = dict(LOG_OPTIONS, group_by=["date"], columns={**LOG_OPTIONS["columns"], "run_name": "arm"},
                   max_p=0.05)  # the arms as runs, each day compared against control
LOG_ARGS = ("none", LOG, "--label", "rating", "--ties", "rank", "--group-by", "date", "--column", "run_name=arm",
            "--column", "query_id=session", "--column", "doc_id=doc", "--column", "rank_position=position",
            "--baseline", "control", "-m", "nDCG@5", "-m", "RR")  # the arms on the command line


@pytest.fixture(scope="module")
def demo_report():
    # 9.0.8's definitions: its precision-recall curves are checked against pytrec_eval's, which are 9.0.8's
    return build_report(str(QRELS), RUNS, MEASURES, test="fisher", n_resamples=2000, compat="trec_eval-9.0.8")


@pytest.fixture(scope="module")
def log_report():
    return build_report(None, {"log": LOG}, ["nDCG@5", "RR", "num_rel"], **LOG_OPTIONS)


@pytest.fixture(scope="module")
def arm_report():
    return build_report(None, LOG, ["nDCG@5", "RR", "num_rel"], baseline="control", **ARM_OPTIONS)


def _per_query(measures, **options) -> pd.DataFrame:
    return sqlmetrics.evaluate(str(QRELS), RUNS, measures, **options).per_query.to_pandas()


# ---------------------------------------------------------------------------------------------- numbers


def test_table_equals_compare(demo_report):
    expected = sqlmetrics.compare(str(QRELS), RUNS, MEASURES, test="fisher", n_resamples=2000)
    got = demo_report.comparison
    for run in RUNS:
        assert got.means[run] == pytest.approx(expected.means[run], rel=1e-12)
    for c in expected.comparisons:
        mine = got.comparison(c.measure, c.run, c.baseline)
        assert (mine.difference, mine.p_value) == pytest.approx((c.difference, c.p_value), rel=1e-12)
        assert (mine.significant, mine.winner, mine.wins, mine.ties, mine.losses) == \
            (c.significant, c.winner, c.wins, c.ties, c.losses)
    page = demo_report.to_html()
    for run in RUNS:  # each mean as the page prints it, with its significance letters
        for m in MEASURES:
            value = expected.means[run][m]
            text = str(int(value)) if m == "num_rel_ret" else f"{value:.4f}"
            marks = expected.markers(run, m)
            assert f">{text}" + (f"<sup>{marks}</sup>" if marks else "</td>") in page, (run, m, text)
    assert any(expected.markers(r, m) for r in RUNS for m in MEASURES)  # the demo has significant wins


def test_deltas_equal_per_query_differences(demo_report):
    table = _per_query(MEASURES).pivot(index="query_id", columns="run")
    for m in MEASURES:
        expected = (table[(m, "rerank")] - table[(m, "bm25")]).dropna().sort_index()
        got = demo_report.deltas[m]["rerank"]
        assert [q for q, _ in got] == list(expected.index)
        assert [d for _, d in got] == pytest.approx(list(expected), abs=1e-12)
    assert set(demo_report.deltas[m]) == {"rerank"}  # the baseline is not compared with itself


def _drawn(ax) -> list:
    """The delta chart's bars as drawn: (height, colour) at each query position 0, 1, ..., read from its filled
    step outlines (one StepPatch per colour, a NaN step a gap), each position covered by exactly one step."""
    shown = {}
    for patch in ax.patches:
        values, edges, baseline = patch.get_data()
        assert baseline == 0 and patch.get_fill()
        for v, lo, hi in zip(values, edges[:-1], edges[1:]):
            if not math.isnan(v):
                for i in range(math.ceil(lo), math.floor(hi) + 1):
                    if lo < i < hi:
                        assert i not in shown, i
                        shown[i] = (v, to_hex(patch.get_facecolor()))
    assert sorted(shown) == list(range(len(shown)))
    return [shown[i] for i in range(len(shown))]


def test_delta_chart_counts_match_compare(demo_report):
    rep = demo_report.comparison
    for m in ("nDCG@10", "AP", "FirstRank"):
        ax = demo_report.chart("deltas", m).axes[0]
        c = rep.comparison(m, "rerank", "bm25")
        assert f"({c.wins} better, {c.losses} worse, {c.ties} tied)" in ax.get_title(loc="left")
        bars = _drawn(ax)
        heights = [h for h, _ in bars]
        assert sorted(heights, reverse=rep.better[m] == "higher") == heights  # wins first
        assert sorted(heights) == pytest.approx(sorted(d for _, d in demo_report.deltas[m]["rerank"]), abs=1e-15)
        improved = [(h > 0) == (rep.better[m] == "higher") for h in heights if h != 0]
        green = [colour == charts.WIN for h, colour in bars if h != 0]
        assert improved == green and sum(green) == c.wins
        assert [t.get_text() for t in ax.get_xticklabels()] == [  # each bar over its query's id
            q for q, _ in sorted(demo_report.deltas[m]["rerank"], key=lambda p: ((-1 if rep.better[m] == "higher"
                                                                                  else 1) * p[1], p[0]))]


def _svg_shapes(svg: str) -> int:
    """The shapes an inline SVG draws: its path and rect elements outside <defs> (text is drawn by <use> of
    glyphs defined once in <defs>); the SVG must parse as XML."""
    root = ElementTree.fromstring(svg)
    defs = {id(e) for d in root.iter("{http://www.w3.org/2000/svg}defs") for e in d.iter()}
    return sum(e.tag.split("}")[-1] in ("path", "rect") and id(e) not in defs for e in root.iter())


def test_delta_chart_does_not_grow_with_the_queries():
    """A chart of 7,000 queries once drew 7,000 bar patches (most of the report's time, and 1.4 MB of SVG a
    chart): the per-query series is a few artists, whatever the number of queries, and still every query's bar."""
    def deltas(n):  # the same range and sign mix at every size: the same axes, ticks and grid
        return {"rerank": [(f"q{i}", round(0.5 - i / (n - 1), 9)) for i in range(n)]}

    figures = {n: charts.deltas_chart("AP", "higher", "bm25", deltas(n)) for n in (100, 1000, 7000)}
    svgs = {n: charts.svg(fig, "c") for n, fig in figures.items()}  # parted bars (100), touching ones; no query ids
    assert _svg_shapes(svgs[100]) == _svg_shapes(svgs[1000]) == _svg_shapes(svgs[7000])
    # What grows is the outline's vertices, two a query (~50 bytes); a patch a query took ~200 bytes.
    assert (len(svgs[7000]) - len(svgs[1000])) / 6000 < 100
    for n, fig in figures.items():
        ax = fig.axes[0]
        assert len(ax.patches) <= 3  # gains, ties, losses
        bars = _drawn(ax)
        assert len(bars) == n and [h for h, _ in bars] == sorted((d for _, d in deltas(n)["rerank"]), reverse=True)
        assert {c for h, c in bars if h > 0} == {charts.WIN} and {c for h, c in bars if h < 0} == {charts.LOSS}


def test_equal_neighbours_share_a_step():
    """Past the parted bars, neighbouring queries of equal difference (P@10's steps of 0.1) are one wider step."""
    pairs = [(f"q{i:04d}", d) for i, d in enumerate([0.2] * 30 + [0.1] * 400 + [0.0] * 500 + [-0.1] * 300)]
    ax = charts.deltas_chart("P@10", "higher", "bm25", {"rerank": pairs}).axes[0]
    assert sorted(len(p.get_data().values) for p in ax.patches) == [1, 1, 2]  # ties; losses; gains
    assert [h for h, _ in _drawn(ax)] == [d for _, d in pairs]
    assert ax.get_ylim()[1] > 0.2 > -0.1 > ax.get_ylim()[0]


def test_baseline_turns_the_differences_around():
    report = build_report(str(QRELS), RUNS, ["AP"], baseline="rerank")
    forward = dict(build_report(str(QRELS), RUNS, ["AP"]).deltas["AP"]["rerank"])
    assert {q: -d for q, d in report.deltas["AP"]["bm25"]} == pytest.approx(forward, abs=1e-15)


def test_precision_recall_curves_equal_pytrec_eval(demo_report):
    qrels = {}
    for line in QRELS.read_text().split("\n"):
        if line.strip():
            q, _, d, g = line.split()
            qrels.setdefault(q, {})[d] = int(g)
    levels = [f"iprec_at_recall_{i / 10:.2f}" for i in range(11)]
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"iprec_at_recall"})
    for name, path in RUNS.items():
        run = {}
        for line in gzip.decompress(Path(path).read_bytes()).decode().split("\n"):
            if line.strip():
                q, _, d, _, s, _ = line.split()
                run.setdefault(q, {})[d] = float(s)
        per_query = evaluator.evaluate(run)
        expected = [sum(per_query.get(q, {}).get(lv, 0.0) for q in qrels) / len(qrels) for lv in levels]
        assert demo_report.curves[name] == pytest.approx(expected, abs=1e-12)


@pytest.mark.slow  # the log report; test_arms_per_segment_equal_compare is the fast case of segments
def test_segments_equal_per_group_and_scipy(log_report):
    res = sqlmetrics.evaluate(None, {"log": LOG}, ["nDCG@5", "RR"], **LOG_OPTIONS)
    groups = res.per_group.to_pandas().set_index(["date", "arm"])
    lists = res.per_query.to_pandas()
    assert set(log_report.segments) == {"nDCG@5", "RR"}  # num_rel is a sum: no interval of a mean
    for m in ("nDCG@5", "RR"):
        segs = log_report.segments[m]
        assert len(segs) == len(groups) == 6
        for s in segs:
            values = lists[(lists.date == s.segment[0]) & (lists.arm == s.segment[1])][m]
            assert s.n == groups.loc[s.segment, "num_lists"]
            assert s.mean == pytest.approx(groups.loc[s.segment, m], rel=1e-12)
            expected = stats.t.interval(1 - log_report.comparison.max_p, len(values) - 1, loc=values.mean(),
                                        scale=stats.sem(values))  # the tests' level, as the pair table
            assert (s.ci_low, s.ci_high) == pytest.approx(expected, rel=1e-12)
    assert log_report.comparison.comparisons == [] and log_report.deltas == {}  # one run: nothing to test
    page = log_report.to_html()
    s = log_report.segments["RR"][0]
    assert f"{s.mean:.4f} [{s.ci_low:.4f}, {s.ci_high:.4f}]" in page
    assert "Not charted per segment" in page and "num_rel" in page


def test_arms_per_segment_equal_compare(arm_report):
    measures = ["nDCG@5", "RR", "num_rel"]
    expected = sqlmetrics.compare(None, LOG, measures, baseline="control", **ARM_OPTIONS)
    got = arm_report.comparison
    assert arm_report.runs == ["control", "treatment"] and not got.paired  # sessions differ: Welch's t-test
    assert len(got.comparisons) == len(expected.comparisons) == 3 * 3  # days x measures, treatment vs control
    for c in expected.comparisons:
        mine = got.comparison(c.measure, c.run, c.baseline, c.segment)
        assert (mine.difference, mine.p_value, mine.statistic) == pytest.approx((c.difference, c.p_value, c.statistic),
                                                                                rel=1e-12)
        assert (mine.significant, mine.winner) == (c.significant, c.winner)
    shown = {(s.segment, s.run, s.measure): s for m in arm_report.segments for s in arm_report.segments[m]}
    assert len(shown) == 3 * 2 * 2  # days x arms x measures averaged as a mean
    for s in expected.summary:
        if s.measure in arm_report.segments:
            assert (shown[s.segment, s.run, s.measure].ci_low, shown[s.segment, s.run, s.measure].ci_high) == \
                pytest.approx((s.ci_low, s.ci_high), rel=1e-12)
    marks = [(c.segment, c.measure, expected.markers(c.run, c.measure, c.segment)) for c in expected.comparisons]
    assert ("2024-06-03", "num_rel") in [(seg[0], m) for seg, m, mark in marks if mark == "▲"]  # p = 0.02 < 0.05
    page = arm_report.to_html()
    for s in expected.summary:  # each segment's mean and interval as the page prints it, with compare's mark
        if s.measure in arm_report.segments:
            mark = expected.markers(s.run, s.measure, s.segment)
            cell = f">{s.mean:.4f} [{s.ci_low:.4f}, {s.ci_high:.4f}]" + (f"<sup>{mark}</sup>" if mark else "</td>")
            assert cell in page, cell
    for c in expected.comparisons:  # the difference with its interval, as compare prints them (unpaired: no win/tie/loss)
        assert f"<td>{c.difference:+.4f} [{c.ci_low:+.4f}, {c.ci_high:+.4f}]</td><td>{c.p_adjusted:.4f}</td><td>–</td>" in page
    assert "difference [95% CI]" in page and "the runs' lists are not paired" in page
    assert "▲/▼: significantly better/worse than control" in page


def test_unpaired_arms_draw_each_arms_distribution_not_empty_differences():
    """A/B arms without group_by rank different sessions: once the page drew "RR: treatment − control per query (0
    better, 0 worse, 0 tied)", an empty chart. It draws each arm's values over its own lists: per arm a histogram of
    shares (summing to 1 over the arm's lists, counted here from evaluate()'s per-list values) and its mean."""
    options = dict(ARM_OPTIONS, group_by=None)
    report = build_report(None, LOG, ["RR"], baseline="control", **options)
    assert not report.comparison.paired and report.deltas == {}
    assert report.chart_names() == [("spread", "RR"), ("pr", None)]
    per_list = sqlmetrics.evaluate(None, LOG, ["RR"], **{k: v for k, v in options.items() if k != "max_p"})
    expected = {}
    for row in per_list.per_query.to_pylist():
        expected.setdefault(row["run"], []).append(row["RR"])
    ax = report.chart("spread", "RR").axes[0]
    drawn = {p.get_label().split(" (")[0]: p for p in ax.patches}
    assert sorted(drawn) == ["control", "treatment"]
    for arm, values in expected.items():
        shares = drawn[arm].get_data().values
        assert sum(shares) == pytest.approx(1.0) and f"({len(values)} lists)" in drawn[arm].get_label()
        means = [line.get_xdata()[0] for line in ax.lines if line.get_color() == drawn[arm].get_edgecolor()[:3]
                 or to_hex(line.get_color()) == to_hex(drawn[arm].get_edgecolor())]
        assert means == [pytest.approx(sum(values) / len(values), rel=1e-12)]
    page = report.to_html()
    assert "per query (0 better" not in page and "Each run's values over its lists" in page


@pytest.mark.slow  # a second page build
def test_sql_block_is_the_rendered_statement(demo_report):
    expected = sqlmetrics.render(demo_report.measures + [f"IPrec@{i / 10:.1f}" for i in range(11)], "duckdb",
                                 qrels="qrels", run="run", per_query=True, columns={"run_name": "run_name"},
                                 compat="trec_eval-9.0.8")
    assert demo_report.sql == expected
    page = demo_report.to_html()
    block = re.search(r"<details><summary>.*?</summary>\s*<pre><code>(.*?)</code></pre>\s*</details>", page, re.S)
    assert block and "WITH" in block.group(1) and "&lt;=" in block.group(1)  # escaped as HTML text


def test_the_sql_is_kept_for_the_same_measures_and_options(monkeypatch):
    """The page's SQL is render()'s text, kept on disk (caches.Stored) by the measures and the options: the
    same call again reads it without rendering; other options are rendered anew, never served the kept text."""
    import importlib

    rendering = importlib.import_module("sqlmetrics.dialects.render")  # the module (the package exports the function)
    first = build_report(str(QRELS), RUNS, ["AP", "P@5"], test="student")
    expected = sqlmetrics.render(["AP", "P@5"] + [f"IPrec@{i / 10:.1f}" for i in range(11)], "duckdb",
                                 qrels="qrels", run="run", per_query=True, columns={"run_name": "run_name"})
    assert first.sql == expected

    def refuse(*args, **kwargs):
        raise AssertionError("rendered again")

    monkeypatch.setattr(rendering, "render", refuse)
    assert build_report(str(QRELS), RUNS, ["AP", "P@5"], test="student").sql == expected
    with pytest.raises(AssertionError, match="rendered again"):
        build_report(str(QRELS), RUNS, ["AP", "P@5"], test="student", relevance_level=2)


@pytest.mark.slow  # two page builds; the browser test checks it too
def test_the_page_fetches_nothing(demo_report, log_report):
    for page in (demo_report.to_html(), log_report.to_html()):
        assert "<script" not in page and "@import" not in page and "url(http" not in page
        assert set(re.findall(r'(?:src|href)="([^"#][^"]*)"', page)) <= {"data:,"}
        ids = re.findall(r' id="([^"]+)"', page)
        assert len(ids) == len(set(ids))  # the inlined SVGs share no id
        assert set(re.findall(r'(?:href="#|url\(#)([^")]+)', page)) <= set(ids)


def test_bad_arguments_are_named():
    with pytest.raises(SqlmetricsError, match="baseline='dense' is not one of the runs: 'bm25', 'rerank'"):
        build_report(str(QRELS), RUNS, ["AP"], baseline="dense")
    with pytest.raises(SqlmetricsError, match="at least two"):
        build_report(str(QRELS), {"bm25": RUNS["bm25"]}, ["AP"])
    with pytest.raises(SqlmetricsError, match="pass one table holding every run"):
        build_report(str(QRELS), RUNS, ["AP"], columns={"run_name": "system"})
    with pytest.raises(SqlmetricsError, match="baseline='arm_c' is not one of the runs: 'control', 'treatment'"):
        build_report(None, LOG, ["RR"], baseline="arm_c", **ARM_OPTIONS)
    with pytest.raises(SqlmetricsError, match="unexpected keyword argument 'grup_by'"):
        build_report(None, {"log": LOG}, ["AP"], grup_by=["arm"])


# ---------------------------------------------------------------------------------------------- command line


def _cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_writes_the_page_and_one_chart(capsys, tmp_path):
    page, png = tmp_path / "report.html", tmp_path / "deltas.png"
    code, out, err = _cli(capsys, "report", QRELS, BM25, RERANK, "-m", "AP", "-m", "nDCG@10", "--baseline", "rerank",
                          "-o", page, "--plot", png)
    assert code == 0, err
    assert out == ""
    text = page.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and "Per-query differences against rerank" in text
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["deltas.png", "report.html"]


@pytest.mark.slow  # a log report's page and chart; test_arms_per_segment_equal_compare is the fast log report
def test_cli_writes_a_log_report_and_an_svg_chart(capsys, tmp_path):
    page, svg = tmp_path / "report.html", tmp_path / "segments.svg"
    code, _, err = _cli(capsys, "report", *LOG_ARGS, "-o", page, "--plot", svg)
    assert code == 0, err
    assert svg.read_text().lstrip().startswith("<?xml") and "<path" in svg.read_text()
    assert "Per segment" in page.read_text(encoding="utf-8")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html", "segments.svg"]


def test_cli_refuses_before_any_work(capsys, tmp_path):
    code, _, err = _cli(capsys, "report", QRELS, BM25, RERANK, "-o", tmp_path / "r.html", "--plot", tmp_path / "x.jpg")
    assert code == 2 and "--plot" in err and ".png or .svg" in err
    code, _, err = _cli(capsys, "report", QRELS, BM25, RERANK, "--baseline", "nope", "-o", tmp_path / "r.html")
    assert code == 2 and "--baseline nope is not one of the runs" in err
    code, _, err = _cli(capsys, "report", "none", LOG, "-o", tmp_path / "r.html")
    assert code == 2 and "--label or --relevance" in err
    assert list(tmp_path.iterdir()) == []


def test_missing_matplotlib_names_the_extra(capsys, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # import fails as if it were not installed
    code, _, err = _cli(capsys, "report", QRELS, BM25, RERANK, "-o", tmp_path / "r.html")
    assert code == 2 and 'pip install ".[report]" in a clone' in err
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------------------------- browser

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


def _browser(tmp_path):
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not shutil.which(p)]
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        missing.append("selenium (the test extra)")
    if missing:
        reason = f"{', '.join(missing)} not found: .ci/browser.sh installs Debian's chromium and chromium-driver"
        unavailable(reason)
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--window-size=1100,1400", f"--user-data-dir={tmp_path / 'profile'}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # An explicit driver path: Selenium Manager (which would download a driver) is never run.
    return webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)


@pytest.mark.slow  # a browser
@pytest.mark.parametrize("args,charts_drawn", [
    ((QRELS, BM25, RERANK), 4 + 1),  # the differences on each of the 4 default measures, precision-recall
    (LOG_ARGS, 2 + 1),  # each measure per segment, precision-recall
], ids=["demo-runs", "demo-log"])
def test_report_opens_in_chromium(args, charts_drawn, tmp_path, capsys):
    from selenium.webdriver.common.by import By

    page = tmp_path / "report.html"
    code, _, err = _cli(capsys, "report", *args, "-o", page)
    assert code == 0, err
    driver = _browser(tmp_path)
    try:
        driver.get(page.as_uri())
        assert driver.title.startswith("sqlmetrics report")
        errors = [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
        assert errors == []
        fetched = driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
        assert fetched == []
        # The page takes the window's width (a table of many measures or segments is not squeezed into a column);
        # a table wider than the window scrolls inside itself.
        assert driver.execute_script("return document.body.getBoundingClientRect().width") >= \
            driver.execute_script("return document.documentElement.clientWidth") - 1
        figures = driver.find_elements(By.CSS_SELECTOR, "figure.chart")
        assert len(figures) == charts_drawn
        for figure in figures:
            svg = figure.find_element(By.TAG_NAME, "svg")
            assert svg.size["width"] > 300 and svg.size["height"] > 150
            drawn = driver.execute_script(
                "return [...arguments[0].querySelectorAll('path')].filter(p => p.getTotalLength() > 0).length", svg)
            assert drawn > 20
        details = driver.find_element(By.TAG_NAME, "details")
        assert details.get_attribute("open") is None  # folded
        assert "WITH" in details.find_element(By.CSS_SELECTOR, "pre code").get_attribute("textContent")
        shot = tmp_path / "report.png"
        assert driver.save_screenshot(str(shot))
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    finally:
        driver.quit()


IMPORT_CHECK = "import sys; from sqlmetrics.cli import main; main(sys.argv[1:]); print('matplotlib' in sys.modules)"


@pytest.mark.slow  # a fresh interpreter
def test_other_commands_do_not_import_matplotlib():
    proc = subprocess.run([sys.executable, "-c", IMPORT_CHECK, "compare", str(QRELS), str(BM25), str(RERANK)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith("False")


@pytest.mark.slow  # a page build
def test_dollar_signs_in_names_are_text(tmp_path):
    """matplotlib reads $...$ as maths: a run named `bm25 $\\frac{$` failed the report; names are drawn as text."""
    runs = {"bm25 $\\frac{$": str(BM25), "rerank $x$": str(RERANK)}
    report = build_report(str(QRELS), runs, ["AP"], test="student")
    page = report.to_html()
    assert "bm25 $\\frac{$" in page
    report.chart("deltas", "AP").savefig(tmp_path / "deltas.png")


def test_a_named_baseline_keeps_the_pairs_to_it():
    """With --baseline the pair table once listed every pair of runs (30 rows for 5 runs): only pairs with it now."""
    runs = {"bm25": str(BM25), "rerank": str(RERANK), "bm25 again": str(BM25)}
    chosen = build_report(str(QRELS), runs, ["AP"], baseline="rerank", test="student")
    assert sorted((c.run, c.baseline) for c in chosen.comparison.comparisons) == [("bm25", "rerank"),
                                                                                 ("bm25 again", "rerank")]
    every = build_report(str(QRELS), runs, ["AP"], test="student")  # no baseline named: every pair
    assert len(every.comparison.comparisons) == 3


@pytest.mark.slow  # a page built over users; compare's statistics over users are the fast suite's (test_ab_units)
def test_report_over_users_with_cuped_is_compares():
    """report(unit=, pre_period=): the arms tested over users with CUPED, as compare() tests them (the same Report),
    said so on the page; the pre-period table is named by its kind in the options line, not printed whole."""
    import pyarrow.parquet as pq

    folder = Path(demo.__file__).parent
    log, before = pq.read_table(folder / "ab_users.parquet"), pq.read_table(folder / "ab_users_before.parquet")
    options = dict(columns={"query_id": "session", "doc_id": "doc", "rank_position": "position", "run_name": "arm"},
                   ties="rank", label="clicked", max_p=0.05, unit="user", pre_period=before)
    expected = sqlmetrics.compare(None, log, ["RR", "P@3"], baseline="control", **options)
    report = build_report(None, log, ["RR", "P@3"], baseline="control", **options)
    assert report.comparison.unit == "user" and report.comparison.cuped
    assert report.comparison.to_dict() == expected.to_dict()
    assert all(c.variance_reduction > 0 for c in report.comparison.comparisons)
    page = report.to_html()
    assert "Welch&#x27;s t-test over units (user, the delta method), CUPED" in page
    assert "pre_period=&lt;pyarrow Table&gt;" in page and "session: string" not in page
