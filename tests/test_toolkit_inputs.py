"""The IR toolkits' own objects and files, as their users have them: BEIR's qrels TSV, PyTerrier's frames,
ranx's Qrels / Run and saved files, ir_measures' measure objects, ir_datasets' iterators and `irds:` ids.

Each input is built with the real library and evaluated against an independent oracle: ir_measures
(pytrec_eval underneath), computing on the same judgments and ranking as plain dicts. Scores are
distinct within each list, so no tie rule decides a number.
"""
import collections
import warnings

import ir_datasets
import ir_measures
import pandas as pd
import pytest
from ir_datasets.datasets.base import Dataset
from ir_datasets.formats import TrecQrels, TrecScoredDocs
from ir_datasets.util import LocalDownload

import sqlmetrics
from sqlmetrics import SqlmetricsError
from sqlmetrics.local.readers import objects as readers

QRELS = {"q1": {"d1": 2, "d2": 0, "d3": 1, "d7": 1}, "q2": {"d4": 1, "d5": 2}, "q3": {"d6": 1, "d9": 0}}
RUN = {"q1": {"d1": 0.9, "d5": 0.8, "d3": 0.7, "d2": 0.6, "d8": 0.1}, "q2": {"d5": 3.0, "d6": 2.5, "d4": 1.0},
       "q3": {"d9": 5.0, "d6": 4.0}}
MEASURES = ["nDCG@10", "AP", "P@2", "RR"]


def oracle(measures=MEASURES, qrels=QRELS, run=RUN) -> dict:
    """ir_measures' values on the dicts, keyed as the measure strings."""
    values = ir_measures.calc_aggregate([ir_measures.parse_measure(m) for m in measures], qrels, run)
    return {m: values[ir_measures.parse_measure(m)] for m in measures}


def rows(nested: dict) -> list:
    return [(q, d, v) for q, docs in nested.items() for d, v in docs.items()]


def evaluate(qrels, run, measures=MEASURES):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sqlmetrics.SqlmetricsWarning)
        return sqlmetrics.evaluate(qrels, run, measures).aggregate


def write_trec(tmp_path):
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels.write_text("".join(f"{q} 0 {d} {r}\n" for q, d, r in rows(QRELS)))
    run.write_text("".join(f"{q} Q0 {d} {i} {s} sys\n" for i, (q, d, s) in enumerate(rows(RUN), 1)))
    return qrels, run


# --- BEIR's qrels TSV ---------------------------------------------------------------------------------------

def test_beir_qrels_tsv_is_recognised_by_its_header(tmp_path):
    # BEIR ships qrels/test.tsv as `query-id  corpus-id  score`, the score being the grade.
    path = tmp_path / "test.tsv"
    path.write_text("query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{r}\n" for q, d, r in rows(QRELS)))
    _, run = write_trec(tmp_path)
    assert evaluate(path, run) == pytest.approx(oracle(), abs=1e-12)


def test_headerless_tsv_is_not_read_as_a_header(tmp_path):
    _, run = write_trec(tmp_path)
    # With TREC's four qrels fields, its first line is a judgment like the others (dropping it would lose
    # q1's grade-2 document and change every measure of q1).
    four = tmp_path / "qrels.tsv"
    four.write_text("".join(f"{q}\t0\t{d}\t{r}\n" for q, d, r in rows(QRELS)))
    assert evaluate(four, run) == pytest.approx(oracle(), abs=1e-12)
    # Three fields without a header: which is which is not for a reader to guess; the error says so.
    three = tmp_path / "beir.tsv"
    three.write_text("".join(f"{q}\t{d}\t{r}\n" for q, d, r in rows(QRELS)))
    with pytest.raises(SqlmetricsError, match=r"beir\.tsv', line 1: 'q1\\td1\\t2' is data, not a header.*query-id"):
        evaluate(three, run)


def test_a_score_column_is_a_grade_only_in_beir_and_ranx_qrels():
    # A run's columns passed as qrels stay refused: `score` is the grade only in BEIR's and ranx's layouts.
    q, d, s = zip(*rows(RUN))
    frame = pd.DataFrame({"query_id": q, "doc_id": d, "score": s})
    with pytest.raises(SqlmetricsError, match="no column for 'relevance'"):
        evaluate(frame, frame)


# --- PyTerrier's frames ---------------------------------------------------------------------------------------

def pyterrier_result() -> pd.DataFrame:
    """A result frame as PyTerrier's retrievers return it: `docid` is Terrier's internal number (here
    chosen so that reading it as the document id would match no judgment), `query` the query text, `rank`
    counted from 0."""
    records = [(q, 1000 + i, d, r, s, f"text of {q}") for i, (q, d, s) in enumerate(rows(RUN))
               for r in [list(RUN[q]).index(d)]]
    return pd.DataFrame(records, columns=["qid", "docid", "docno", "rank", "score", "query"])


def test_pyterrier_result_and_qrels_frames():
    qrels = pd.DataFrame(rows(QRELS), columns=["qid", "docno", "label"])
    assert evaluate(qrels, pyterrier_result()) == pytest.approx(oracle(), abs=1e-12)


# --- ranx -----------------------------------------------------------------------------------------------------

# ranx imports in about two seconds and compiles with numba at first use: its objects are the full suite's.
@pytest.mark.slow
def test_ranx_objects_and_a_run_name():
    import ranx

    qrels, run = ranx.Qrels(QRELS), ranx.Run(RUN, name="bm25")
    expected = oracle()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sqlmetrics.SqlmetricsWarning)
        res = sqlmetrics.evaluate(qrels, run, MEASURES)
    assert list(res.aggregate) == ["bm25"]
    assert res.aggregate["bm25"] == pytest.approx(expected, abs=1e-12)
    assert set(res.per_query.column("run").to_pylist()) == {"bm25"}
    assert evaluate(qrels, ranx.Run(RUN)) == pytest.approx(expected, abs=1e-12)  # no name: one plain run


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".json", ".trec", ".lz4", ".parquet"])
def test_ranx_saved_runs(tmp_path, suffix):
    import ranx

    qrels, run = ranx.Qrels(QRELS), ranx.Run(RUN, name="bm25")
    run.save(str(tmp_path / f"run{suffix}"))
    qrels_path = tmp_path / ("qrels.json" if suffix == ".lz4" else f"qrels{suffix}")  # ranx saves no .lz4 qrels
    qrels.save(str(qrels_path))
    assert evaluate(qrels_path, tmp_path / f"run{suffix}") == pytest.approx(oracle(), abs=1e-12)


def test_a_query_with_no_documents_in_ranx_json(tmp_path):
    path = tmp_path / "run.json"
    path.write_text('{"q1": {"d1": 0.9, "d5": 0.8}, "q2": {}}')
    qrels = {"q1": {"d1": 1}, "q2": {"d4": 1}}
    assert evaluate(qrels, path, ["AP"]) == pytest.approx({"AP": 0.5})


def test_damaged_ranx_files_are_named(tmp_path):
    lz4 = tmp_path / "run.lz4"
    lz4.write_bytes(b"not lz4 at all")
    with pytest.raises(SqlmetricsError, match=r"run\.lz4'.*cannot be read as ranx's LZ4"):
        evaluate(QRELS, lz4)
    json_path = tmp_path / "run.json"
    json_path.write_text('{"q1": {"d1": 0.9,\n "d5": ')
    with pytest.raises(SqlmetricsError, match=r"run\.json'.*cannot be read as JSON"):
        evaluate(QRELS, json_path)


# --- ir_measures' measure objects -------------------------------------------------------------------------------

def test_ir_measures_objects_as_measures():
    measures = [ir_measures.nDCG @ 10, ir_measures.AP(rel=2), ir_measures.P @ 5, ir_measures.RR(rel=2) @ 10]
    res = sqlmetrics.evaluate(QRELS, RUN, measures)
    expected = ir_measures.calc_aggregate(measures, QRELS, RUN)
    assert list(res.aggregate) == ["nDCG@10", "AP(rel=2)", "P@5", "RR(rel=2)@10"]  # as ir_measures prints them
    assert res.aggregate == pytest.approx({str(m): v for m, v in expected.items()}, abs=1e-12)
    assert sqlmetrics.evaluate(QRELS, RUN, ir_measures.AP).aggregate == pytest.approx(oracle(["AP"]), abs=1e-12)


# --- ir_datasets ----------------------------------------------------------------------------------------------

@pytest.fixture
def local_dataset(tmp_path):
    """An ir_datasets dataset registered from local files (its documented TrecQrels and TrecScoredDocs
    readers on LocalDownload paths): nothing is downloaded."""
    qrels, run = write_trec(tmp_path)
    dataset_id = f"sqlmetrics-test/{tmp_path.name}"
    ir_datasets.registry.register(dataset_id, Dataset(TrecQrels(LocalDownload(qrels), {}),
                                                      TrecScoredDocs(LocalDownload(run))))
    return dataset_id


def test_ir_datasets_iterators_and_irds_ids(local_dataset):
    dataset = ir_datasets.load(local_dataset)
    expected = oracle()
    assert evaluate(dataset.qrels_iter(), dataset.scoreddocs_iter()) == pytest.approx(expected, abs=1e-12)
    assert evaluate(f"irds:{local_dataset}", dataset.scoreddocs_iter()) == pytest.approx(expected, abs=1e-12)
    assert evaluate(f"irds:{local_dataset}", f"irds:{local_dataset}") == pytest.approx(expected, abs=1e-12)


def test_iterators_stream_in_batches(local_dataset, monkeypatch):
    # Batches of two items: the stream is read batch by batch, and every batch arrives.
    monkeypatch.setattr(readers, "TUPLES_PER_BATCH", 2)
    dataset = ir_datasets.load(local_dataset)
    assert evaluate(dataset.qrels_iter(), dataset.scoreddocs_iter()) == pytest.approx(oracle(), abs=1e-12)


def test_bad_iterators_are_named(local_dataset, monkeypatch):
    monkeypatch.setattr(readers, "TUPLES_PER_BATCH", 2)
    dataset = ir_datasets.load(local_dataset)
    mixed = iter([*dataset.scoreddocs_iter(), *dataset.qrels_iter()])
    with pytest.raises(SqlmetricsError, match=r"run \(GenericScoredDoc items\): item 11 is a TrecQrel"):
        evaluate(QRELS, mixed)
    with pytest.raises(SqlmetricsError, match=r"run \(TrecQrel items\): no column for 'score'"):
        evaluate(QRELS, dataset.qrels_iter())
    with pytest.raises(SqlmetricsError, match=r"run \(iterator\): yields tuple items"):
        evaluate(QRELS, iter([("q1", "d1", 1.0)]))
    Scored = collections.namedtuple("Scored", "query_id doc_id score")
    with pytest.raises(SqlmetricsError, match=r"run \(Scored items\): item 4 has score 'high'"):
        evaluate(QRELS, iter([Scored("q1", "d1", 1.0), Scored("q1", "d2", 0.5), Scored("q1", "d3", 0.2),
                              Scored("q1", "d4", "high")]))
    with pytest.raises(SqlmetricsError, match=r"qrels 'irds:sqlmetrics-test/nothing-here': ir_datasets has no"):
        evaluate("irds:sqlmetrics-test/nothing-here", RUN)


# --- Hugging Face datasets ---------------------------------------------------------------------------------

def test_hugging_face_datasets():
    import datasets

    q, d, r = zip(*rows(QRELS))
    qrels = datasets.Dataset.from_dict({"query-id": q, "corpus-id": d, "score": r})  # BEIR's columns on the Hub
    q, d, s = zip(*rows(RUN))
    # Rows the Dataset holds but does not show (a select() leaves them in its table): never read.
    extra = ("q2", "d4", 9.0)
    run = datasets.Dataset.from_dict({"qid": [*q, extra[0]], "docno": [*d, extra[1]], "score": [*s, extra[2]]})
    assert evaluate(qrels, run.select(range(len(q)))) == pytest.approx(oracle(), abs=1e-12)
