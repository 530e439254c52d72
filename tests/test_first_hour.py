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
