"""What a user meets in the first hour (issue 43's silent oddities), each failing before its fix: warnings that
point at the caller's line, a NaN named NaN, a catalogue share never above 1, bounded measures inside their range,
and one file given twice named by its stem."""
import warnings

import pytest

import sqlmetrics
from sqlmetrics.cli import main


def test_a_warning_points_at_the_callers_line():
    """Python shows a warning's file and line: they were sqlmetrics/evaluation.py:56 and our own source line."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sqlmetrics.evaluate({"q1": {"d1": 1}, "q2": {"d2": 1}}, {"q1": {"d1": 1.0}}, ["P@1"])  # q2 is not ranked
    said = [w for w in caught if issubclass(w.category, sqlmetrics.SqlmetricsWarning)]
    assert said and all(w.filename == __file__ for w in said), [(w.filename, w.lineno) for w in said]


def test_a_nan_score_in_a_pandas_frame_is_called_nan():
    """pandas holds a missing float as NaN, which DuckDB reads as NULL: the message said 'holds None'."""
    pd = pytest.importorskip("pandas")
    run = pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["d1", "d2"], "score": [1.0, float("nan")]})
    with pytest.raises(sqlmetrics.SqlmetricsError, match=r"row 2: column 'score' holds NaN, which is not a finite"):
        sqlmetrics.evaluate({"q1": {"d1": 1}}, run, ["P@1"])
    run = pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["d1", "d2"], "score": [1.0, None]}, dtype=object)
    with pytest.raises(sqlmetrics.SqlmetricsError, match=r"row 2: column 'score' holds None"):  # it was a None
        sqlmetrics.evaluate({"q1": {"d1": 1}}, run, ["P@1"])


def test_catalogue_coverage_counts_only_the_catalogues_items():
    """The run recommends i1, i5 and i6; the catalogue (items=) is i1, i2, i3: by hand 1/3 (it was 3/3 = 1, and
    with more items outside the catalogue, past 1), with a warning naming the two outside it."""
    pa = pytest.importorskip("pyarrow")
    items = pa.table({"doc_id": ["i1", "i2", "i3"], "dimension": ["c"] * 3, "value": [1.0] * 3})
    run = {"u1": {"i1": 0.9, "i5": 0.8}, "u2": {"i1": 0.7, "i6": 0.6}}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = sqlmetrics.evaluate({"u1": {"i2": 1}, "u2": {"i2": 1}}, run, ["CatalogCoverage"], items=items,
                                  history={"u1": {"i3": 1}})
    assert res.aggregate["CatalogCoverage"] == pytest.approx(1 / 3)
    assert any("recommends 2 of its 3 items outside items= (the catalogue; e.g. 'i5')" in str(w.message)
               for w in caught), [str(w.message) for w in caught]


def test_a_bounded_measure_stays_in_its_range(tmp_path, capsys):
    """Personalization (range 0..1) of three identical lists is 1 - their cosine, 1 - 1.0000000000000007: it was
    -6.7e-16, printed -0.0000 by `-f trec` and kept in CSV and JSON. By hand it is 0."""
    run = {u: {"i1": 0.9, "i2": 0.8, "i3": 0.7} for u in ("u1", "u2", "u3")}
    qrels = {u: {"i1": 1} for u in run}
    res = sqlmetrics.evaluate(qrels, run, ["Personalization"], history={"u9": {"i9": 1}})
    assert res.aggregate["Personalization"] == 0.0
    assert set(res.per_query.column("Personalization").to_pylist()) == {0.0}
    (tmp_path / "q.csv").write_text("query_id,doc_id,relevance\n" + "".join(f"{u},i1,1\n" for u in run))
    (tmp_path / "r.csv").write_text("query_id,doc_id,score\n" + "".join(f"{u},{d},{s}\n" for u, ds in run.items()
                                                                        for d, s in ds.items()))
    (tmp_path / "h.csv").write_text("query_id,doc_id,relevance\nu9,i9,1\n")
    for fmt in ("trec", "csv", "table"):
        assert main(["eval", str(tmp_path / "q.csv"), str(tmp_path / "r.csv"), "-m", "Personalization",
                     "--history", str(tmp_path / "h.csv"), "-f", fmt, "--quiet"]) == 0
        out = capsys.readouterr().out
        assert "-0" not in out and "e-1" not in out, out


def test_a_value_far_outside_its_range_is_not_hidden(monkeypatch):
    """Only rounding is put back on the bound: a value a measure got wrong by more is left for the tests to see."""
    from sqlmetrics.local import collect

    monkeypatch.setattr(collect, "ROUNDING", 0.0)
    run = {u: {"i1": 0.9, "i2": 0.8, "i3": 0.7} for u in ("u1", "u2", "u3")}
    res = sqlmetrics.evaluate({u: {"i1": 1} for u in run}, run, ["Personalization"], history={"u9": {"i9": 1}})
    assert res.aggregate["Personalization"] < 0  # the rounding this very case shows


def test_one_file_twice_is_named_by_its_stem(tmp_path, capsys):
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n")
    (tmp_path / "runA.txt").write_text("q1 Q0 d1 1 1.0 a\n")
    run = str(tmp_path / "runA.txt")
    assert main(["compare", str(tmp_path / "qrels.txt"), run, run, "-m", "P@1", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "runA#2" in out and "runA.txt" not in out, out


# One name, one number: q1 judges d1 and d2 relevant (R = 2); the run ranks d1 first and d2 fourth. By hand,
# trec_eval 10.0 needs round(r * R) relevant documents for interpolated precision at recall r, 9.0.8 floor(r * R +
# 0.9): at r = 0.6, 1 (precision 1/1) or 2 (2/4); over the 11 points, 8 points need at most 1 and 3 need 2 in 10.0
# (8 * 1 + 3 * 0.5) / 11, 6 and 5 in 9.0.8 (6 * 1 + 5 * 0.5) / 11.
ONE_QRELS = "q1 0 d1 1\nq1 0 d2 1\n"
ONE_RUN = "q1 Q0 d1 1 4.0 r\nq1 Q0 x1 2 3.0 r\nq1 Q0 x2 3 2.0 r\nq1 Q0 d2 4 1.0 r\n"
BY_HAND = {"trec_eval-10.0": (1.0, 9.5 / 11), "trec_eval-9.0.8": (0.5, 8.5 / 11)}


@pytest.mark.parametrize("compat", list(BY_HAND))
def test_one_name_is_one_number_in_every_command(compat, tmp_path, capsys):
    """trec_eval printed q1 1.0000 / 0.7273 and eval 0.5000 / 0.6364 for the same names (10.0's and 9.0.8's
    definitions): now evaluate(), eval, compare, the rendered SQL and trec_eval agree, 10.0's by default."""
    (tmp_path / "q.txt").write_text(ONE_QRELS)
    (tmp_path / "r.txt").write_text(ONE_RUN)
    qrels, run = str(tmp_path / "q.txt"), str(tmp_path / "r.txt")
    flags = [] if compat == "trec_eval-10.0" else ["--compat", compat]
    keyword = {} if compat == "trec_eval-10.0" else {"compat": compat}
    iprec, pt11 = BY_HAND[compat]
    want = [f"iprec_at_recall_0.60  \tq1\t{iprec:.4f}", f"11pt_avg              \tq1\t{pt11:.4f}"]
    for command in ("trec_eval", "eval"):
        argv = [command, "-q", "-m", "iprec_at_recall.0.6", "-m", "11pt_avg", *flags, qrels, run]
        assert main(argv if command == "trec_eval" else [*argv, "-f", "trec"]) == 0
        assert [line for line in capsys.readouterr().out.splitlines() if "\tq1\t" in line] == want, command
    res = sqlmetrics.evaluate(qrels, run, ["iprec_at_recall_0.60", "11pt_avg"], **keyword)
    assert res.aggregate == pytest.approx({"iprec_at_recall_0.60": iprec, "11pt_avg": pt11}, abs=1e-12)
    report = sqlmetrics.compare(qrels, {"a": run, "b": run}, ["11pt_avg"], **keyword)
    assert report.means["a"]["11pt_avg"] == pytest.approx(pt11, abs=1e-12)
    import duckdb

    con = duckdb.connect()
    con.execute("CREATE TABLE qrels AS SELECT * FROM (VALUES ('q1', 'd1', 1), ('q1', 'd2', 1)) t(query_id, doc_id, "
                "relevance)")
    con.execute("CREATE TABLE run AS SELECT * FROM (VALUES ('q1', 'd1', 4.0), ('q1', 'x1', 3.0), ('q1', 'x2', 2.0), "
                "('q1', 'd2', 1.0)) t(query_id, doc_id, score)")
    row = con.execute(sqlmetrics.render(["iprec_at_recall_0.60", "11pt_avg"], "duckdb", **keyword)).fetchall()[0]
    assert row == pytest.approx((iprec, pt11), abs=1e-12)


def test_a_paired_log_has_no_footer_about_judged_queries():
    """Two rankers' lists of the same sessions, judged by the log's clicks (qrels=None), are paired; their means are
    over the sessions, so the footer about trec_eval's judged queries (a qrels file's) is not printed, while two
    runs judged by qrels keep it."""
    import pyarrow as pa

    import sqlmetrics
    from sqlmetrics.results import AVERAGED

    log = [{"run": r, "session": f"s{i}", "doc": f"d{j}", "position": j, "clicked": int((i + j + k) % 3 == 0)}
           for k, r in enumerate(["old", "new"]) for i in range(6) for j in range(1, 4)]
    report = sqlmetrics.compare(None, pa.Table.from_pylist(log), ["RR"], label="clicked", ties="rank",
                                columns={"run_name": "run", "query_id": "session", "doc_id": "doc",
                                         "rank_position": "position"}, test="student")
    assert report.paired and report.n_queries == 6
    assert "judged" not in report.footnote() and "judged" not in str(report)
    qrels = {f"q{i}": {"d1": 1} for i in range(3)}
    runs = {n: {f"q{i}": {f"d{j}": float((i + j + k) % 4) for j in range(1, 3)} for i in range(3)}
            for k, n in enumerate(["a", "b"])}
    assert AVERAGED["qrels"] in sqlmetrics.compare(qrels, runs, ["RR"], test="student").footnote()
