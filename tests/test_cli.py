"""The command line: golden outputs per format, trec_eval's own -q output line by line, every bad-input path.

Golden files live in tests/golden/cli/ beside their inputs (qrels.txt, a.run, b.run). After a deliberate
change, regenerate them with SQLMETRICS_REGEN_GOLDEN=1 and review the diff like code; the tests below
cross-check the golden values with pytrec_eval and scipy, so a golden is never merely "what we printed".
"""
import csv
import io
import json
import math
import os
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import pytest
import scipy.stats as st

import sqlmetrics
from sqlmetrics.catalogue import parse, split_measure_list, trec_name
from sqlmetrics.cli import common, main
from sqlmetrics.cli import evaluate as eval_command
from sqlmetrics.errors import SqlmetricsError
from sqlmetrics.results import AVERAGED

GOLDEN = Path(__file__).parent / "golden" / "cli"
REGEN = os.environ.get("SQLMETRICS_REGEN_GOLDEN") == "1"
FEW = "P@5,AP,nDCG@10,FirstRank,num_ret"
CMP = "P@5,AP,nDCG@10,FirstRank,gm_map"
REPO = Path(__file__).resolve().parent.parent


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def in_golden(monkeypatch):
    monkeypatch.chdir(GOLDEN)


GOLDEN_CASES = {
    "eval_table.txt": ["eval", "qrels.txt", "a.run", "b.run"],
    "eval_table_q.txt": ["eval", "qrels.txt", "a.run", "b.run", "-m", FEW, "-q"],
    "eval_trec.txt": ["eval", "qrels.txt", "a.run", "-f", "trec"],
    "eval_trec_q.txt": ["eval", "qrels.txt", "a.run", "b.run", "-f", "trec", "-q"],
    "eval_csv_q.csv": ["eval", "qrels.txt", "a.run", "b.run", "-m", FEW, "-q", "-f", "csv"],
    "eval_tsv.tsv": ["eval", "qrels.txt", "a.run", "b.run", "-m", FEW, "-f", "tsv"],
    # pytrec_eval (9.0.8) checks its values below: at 9.0.8's definitions
    "eval_json_q.json": ["eval", "qrels.txt", "a.run", "b.run", "-q", "-f", "json", "--compat", "trec_eval-9.0.8"],
    "eval_jsonl_q.jsonl": ["eval", "qrels.txt", "a.run", "b.run", "-m", FEW, "-q", "-f", "jsonl"],
    "eval_markdown.md": ["eval", "qrels.txt", "a.run", "b.run", "-m", FEW, "-f", "markdown"],
    "eval_markdown_q.md": ["eval", "qrels.txt", "a.run", "-m", FEW, "-q", "-f", "markdown"],
    "compare_table.txt": ["compare", "qrels.txt", "a.run", "b.run", "-m", CMP, "--max-p", "0.5"],
    "compare_markdown.md": ["compare", "qrels.txt", "a.run", "b.run", "-m", CMP, "--max-p", "0.5", "-f", "markdown"],
    "compare_latex.tex": ["compare", "qrels.txt", "a.run", "b.run", "-m", CMP, "--max-p", "0.5", "-f", "latex"],
    "compare_json.json": ["compare", "qrels.txt", "a.run", "b.run", "-m", CMP, "--max-p", "0.5", "-f", "json"],
    "compare_fisher_holm.txt": ["compare", "qrels.txt", "a.run", "b.run", "-m", CMP, "--test", "fisher",
                                "--correction", "holm", "--max-p", "0.5"],
    "compare_bootstrap.txt": ["compare", "qrels.txt", "a.run", "b.run", "-m", CMP, "--test", "bootstrap",
                              "--n-resamples", "2000", "--seed", "7", "--max-p", "0.2", "--digits", "3"],
    "demo_markdown.md": ["demo", "-f", "markdown"],
}


@pytest.mark.parametrize("name", sorted(GOLDEN_CASES))
def test_golden(name, capsys, in_golden):
    code, out, err = run_cli(capsys, *GOLDEN_CASES[name])
    assert code == 0, err
    path = GOLDEN / name
    if REGEN:
        path.write_text(out, encoding="utf-8")
        pytest.skip("golden regenerated: review the diff")
    assert out == path.read_text(encoding="utf-8")


def test_golden_warnings_go_to_stderr_one_line_each(capsys, in_golden):
    code, out, err = run_cli(capsys, "eval", "qrels.txt", "a.run", "b.run", "-m", "AP")
    assert code == 0
    lines = err.splitlines()
    assert lines == [
        "sqlmetrics: warning: run 'b' file 'b.run' has no ranking for 1 qrels query ('q4'); they score 0 "
        "(--queries intersection averages only the queries in both).",
        "sqlmetrics: warning: run 'b' file 'b.run' ranks 1 query with no judgments ('q9'); they are not averaged.",
    ]
    assert "warning" not in out


# ---------------------------------------------------------------------------------------------- goldens are right


def _pytrec(qrels_path, run_path, measures):
    import pytrec_eval

    qrels, run = {}, {}
    for line in Path(qrels_path).read_text().split("\n"):
        if line.strip():
            q, _, d, r = line.split()
            qrels.setdefault(q, {})[d] = int(r)
    for line in Path(run_path).read_text().split("\n"):
        if line.strip():
            q, _, d, _, s, _ = line.split()
            run.setdefault(q, {})[d] = float(s)
    return pytrec_eval.RelevanceEvaluator(qrels, set(measures)).evaluate(run)


def test_golden_eval_values_equal_pytrec_eval():
    """Every per-query value of the default measure set in eval_json_q.json is trec_eval's (pytrec_eval's)."""
    golden = json.loads((GOLDEN / "eval_json_q.json").read_text())
    families = {"num_ret", "num_rel", "num_rel_ret", "map", "Rprec", "bpref", "recip_rank", "iprec_at_recall",
                "P", "ndcg_cut"}
    for run in ("a", "b"):
        ref = _pytrec(GOLDEN / "qrels.txt", GOLDEN / f"{run}.run", families)
        per_query = golden["runs"][run]["per_query"]
        checked = 0
        for q, values in ref.items():  # pytrec_eval scores the queries in both (the golden has q4 for b too)
            for measure in golden["measures"]:
                key = trec_name(parse(measure))
                if key in values:
                    assert per_query[q][measure] == pytest.approx(values[key], abs=1e-9), (run, q, measure)
                    checked += 1
        assert checked >= 3 * 27
        # the queries pytrec_eval skips (judged, not ranked) score 0 in the golden and count in the average
        for q in set(per_query) - set(ref):
            assert per_query[q]["map"] == 0 and per_query[q]["num_ret"] == 0
            assert per_query[q]["num_rel"] == sum(1 for line in (GOLDEN / "qrels.txt").read_text().splitlines()
                                                  if line.split()[0] == q and int(line.split()[3]) >= 1)


def test_golden_compare_values_equal_scipy():
    """compare_json.json's t statistics and p-values are scipy's on the golden per-query values."""
    report = json.loads((GOLDEN / "compare_json.json").read_text())
    records = [json.loads(line) for line in (GOLDEN / "eval_jsonl_q.jsonl").read_text().splitlines()]
    per_query = {f"{r['run']}/{r['query_id']}": r for r in records if r["query_id"] is not None}
    queries = ["q1", "q2", "q3", "q4"]
    for c in report["comparisons"]:
        m = c["measure"]
        if m == "gm_map":
            continue  # on the logs of AP: covered in test_compare.py
        a = [per_query[f"a/{q}"].get(m) for q in queries] if m in FEW.split(",") else None
        b = [per_query[f"b/{q}"].get(m) for q in queries] if m in FEW.split(",") else None
        if a is None:
            continue
        pairs = [(x, y) for x, y in zip(b, a) if x is not None and y is not None]
        ref = st.ttest_rel([x for x, _ in pairs], [y for _, y in pairs])
        assert c["n"] == len(pairs)
        assert c["statistic"] == pytest.approx(ref.statistic, rel=1e-9)
        assert c["p_value"] == pytest.approx(ref.pvalue, rel=1e-9)


def test_golden_formats_agree_with_each_other():
    records = [json.loads(line) for line in (GOLDEN / "eval_jsonl_q.jsonl").read_text().splitlines()]
    rows = list(csv.DictReader(io.StringIO((GOLDEN / "eval_csv_q.csv").read_text())))
    assert len(rows) == len(records) == 2 * 4 + 2
    for rec, row in zip(records, rows):
        for key, value in rec.items():
            assert (row[key] == "" if value is None else
                    row[key] == value if isinstance(value, str) else float(row[key]) == value)
    table = (GOLDEN / "eval_table_q.txt").read_text()
    for rec in records:
        if rec["query_id"] is None:  # the aggregate
            assert f"{rec['AP']:.4f}" in table


# ---------------------------------------------------------------------------------------------- trec_eval's own output


def _all_block_order(path: Path) -> list:
    """The measures of trec_eval's `all` block that we implement, in trec_eval's order."""
    names = []
    for line in path.read_text().splitlines():
        name, q, _ = line.split("\t")
        name = name.strip()
        if q != "all" or name == "runid":
            continue
        try:
            parse(name)
        except SqlmetricsError:
            continue
        names.append(name)
    return names


@pytest.mark.parametrize("expected, qrels, results, extra", [
    ("out.test.aq", "qrels.test", "results.test", []),
    ("out.test.aqc", "qrels.test", "results.trunc", []),  # topic 302 missing; -c averages over it
    ("out.test.aql", "qrels.rel_level", "results.test", ["-l", "2"]),
    ("out.test", "qrels.test", "results.test", None),  # the default measures, no -q
])
@pytest.mark.parametrize("suite", ["10.0", pytest.param("9.0.8", marks=pytest.mark.slow)])  # 9.0.8: the full suite
def test_trec_format_equals_trec_eval_line_by_line(trec_eval_dir, trec_eval_10_dir, capsys, suite, expected, qrels,
                                                   results, extra):
    """`eval -f trec` prints trec_eval's lines: 10.0's (its own test suite's outputs) by default, 9.0.8's with
    --compat trec_eval-9.0.8 (the interpolated precisions differ between the two)."""
    folder, compat = (trec_eval_10_dir, []) if suite == "10.0" else (trec_eval_dir, ["--compat", "trec_eval-9.0.8"])
    trec_eval_dir = folder
    exp_path = trec_eval_dir / expected
    if extra is None:  # the default set: trec_eval's official measures (+ nDCG@10, which it does not print)
        code, out, err = run_cli(capsys, "eval", trec_eval_dir / qrels, trec_eval_dir / results, "-f", "trec", *compat)
        ours = [line for line in out.splitlines(keepends=True) if not line.startswith("ndcg_cut_10 ")]
        assert ours == exp_path.read_text().splitlines(keepends=True)
        return
    names = _all_block_order(exp_path)
    assert len(names) >= 60
    code, out, err = run_cli(capsys, "eval", trec_eval_dir / qrels, trec_eval_dir / results, "-q", "-f", "trec",
                             "-m", ",".join(names), *extra, *compat)
    assert code == 0, err
    keep = set(names) | {"runid"}
    want = [line for line in exp_path.read_text().splitlines(keepends=True) if line.split("\t")[0].strip() in keep]
    assert out.splitlines(keepends=True) == want


def test_trec_names_round_trip():
    for text in ["map", "AP", "AP@100", "P@10", "P_10", "R@1000", "nDCG@10", "ndcg", "nDCG", "RR", "mrr",
                 "Rprec", "bpref", "gm_map", "IPrec@0.1", "iprec_at_recall_1.00", "num_q", "NumRelRet",
                 "SetP", "SetR", "SetF", "Success@5", "success_10", "map_cut_5"]:
        call = parse(text)
        name = trec_name(call)
        back = parse(name)
        assert (back.measure.name, back.params) == (call.measure.name, call.params), (text, name)
    assert trec_name(parse("RR@10")) == "RR@10"  # no trec_eval counterpart: as given
    assert trec_name(parse("P(rel=2)@5")) == "P(rel=2)@5"
    assert trec_name(parse("ndcg_burges@10")) == "ndcg_burges@10"
    assert trec_name(parse("FirstRank")) == "FirstRank"


# ---------------------------------------------------------------------------------------------- eval behaviour


def test_default_measures_are_trec_eval_official_plus_ndcg10():
    assert eval_command.DEFAULT_MEASURES[:4] == ["num_q", "num_ret", "num_rel", "num_rel_ret"]
    assert "iprec_at_recall_0.00" in eval_command.DEFAULT_MEASURES and "P_1000" in eval_command.DEFAULT_MEASURES
    assert eval_command.DEFAULT_MEASURES[-1] == "nDCG@10" and len(eval_command.DEFAULT_MEASURES) == 30


def test_measure_lists_split_on_top_level_commas():
    assert split_measure_list(["map,P@10", "RBP(p=0.8,gain='graded')", " SetF(beta=0.5) "]) == [
        "map", "P@10", "RBP(p=0.8,gain='graded')", "SetF(beta=0.5)"]


def test_stdin_run_and_sniffed_formats(capsys, in_golden, monkeypatch):
    expected = run_cli(capsys, "eval", "qrels.txt", "a.run", "-m", FEW, "--name", "stdin")[1]
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO((GOLDEN / "a.run").read_bytes())))
    code, out, err = run_cli(capsys, "eval", "qrels.txt", "-", "-m", FEW)
    assert code == 0 and out == expected and err == ""
    assert common._sniff_suffix(b"qid,docid,score\nq1,d1,1\n") == ".csv"
    assert common._sniff_suffix(b"query_id\tdoc_id\tscore\n") == ".tsv"
    assert common._sniff_suffix(b'{"qid": "q1"}\n') == ".jsonl"
    assert common._sniff_suffix(b"PAR1....") == ".parquet"
    import gzip

    assert common._sniff_suffix(gzip.compress(b"q1 Q0 d1 1 2.0 x\n")) == ".txt.gz"


@pytest.mark.slow  # a fresh interpreter
def test_stdin_csv_through_a_subprocess(tmp_path):
    data = "qid,docid,score\nq1,d1,3\nq1,d7,2\nq2,d10,1\nq9,d1,1\n"
    proc = subprocess.run([sys.executable, "-m", "sqlmetrics", "eval", str(GOLDEN / "qrels.txt"), "-", "-m", "P@1",
                           "--queries", "intersection", "-f", "csv"], input=data, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "stdin,,1.0"  # the aggregate: no query id
    assert "/tmp" not in proc.stderr and "sqlmetrics-stdin" not in proc.stderr
    assert "run 'stdin' file <stdin>" in proc.stderr  # the warning names stdin, not the spool file


def test_output_is_written_atomically(capsys, in_golden, tmp_path):
    target = tmp_path / "out.csv"
    code, out, err = run_cli(capsys, "eval", "qrels.txt", "a.run", "-m", FEW, "-f", "csv", "-o", target)
    assert code == 0 and out == ""
    assert target.read_text().startswith("run,query_id,P@5,AP,")
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask  # as open() would make it, not mkstemp's 0600
    # a failure leaves the previous file untouched and no temp file behind
    code, out, err = run_cli(capsys, "eval", "qrels.txt", "nope.run", "-o", target)
    assert code == 2
    assert target.read_text().startswith("run,query_id,P@5,AP,")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]


def test_output_failure_midway_leaves_nothing(capsys, in_golden, tmp_path, monkeypatch):
    target = tmp_path / "new.txt"

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)  # the rename that would publish the file
    code, out, err = run_cli(capsys, "eval", "qrels.txt", "a.run", "-o", target)
    assert code == 2 and "No space left on device" in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_per_query_trec_prints_queries_the_run_does_not_rank_as_each_version_does(capsys, in_golden):
    """trec_eval -c -q: 10.0 prints a judged query the run does not rank (its zeros), 9.0.8 leaves it out."""
    code, out, err = run_cli(capsys, "eval", "qrels.txt", "b.run", "-f", "trec", "-q", "-m", "map,num_q,gm_map",
                             "--compat", "trec_eval-9.0.8")
    queries = [line.split("\t")[1] for line in out.splitlines()]
    assert "q4" not in queries and queries.count("all") == 4  # runid, map, num_q, gm_map
    assert "num_q                 \tq1" not in out and "gm_map                \tq1" not in out
    code, out, err = run_cli(capsys, "eval", "qrels.txt", "b.run", "-f", "trec", "-q", "-m", "map,num_q,gm_map")
    assert "map                   \tq4\t0.0000\n" in out and "num_q                 \tq4" not in out


def test_several_runs_name_clashes_and_names(capsys, in_golden, tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "a.run").write_bytes((GOLDEN / "a.run").read_bytes())
    code, out, err = run_cli(capsys, "eval", "qrels.txt", "a.run", tmp_path / "x" / "a.run", "-m", "AP")
    header = out.splitlines()[0].split()
    assert header[0] == "measure" and header[1] == "a.run" and header[2].endswith("x/a.run")
    code, out, err = run_cli(capsys, "eval", "qrels.txt", "a.run", "b.run", "-m", "AP", "--name", "bm25",
                             "--name", "dense", "-f", "json")
    assert list(json.loads(out)["runs"]) == ["bm25", "dense"]


def test_options_reach_evaluate(capsys, in_golden):
    def ap(*extra):
        code, out, err = run_cli(capsys, "eval", "qrels.txt", "b.run", "-m", "AP", "-f", "json", *extra)
        assert code == 0, err
        return json.loads(out)["runs"]["b"]["aggregate"]["AP"]

    assert ap() == pytest.approx((0.95 + 0.8333333333333334 + 1 / 3 + 0) / 4)
    assert ap("--queries", "intersection") == pytest.approx((0.95 + 0.8333333333333334 + 1 / 3) / 3)
    assert ap("-l", "2") != ap()
    assert ap("--ties", "rank") == ap()  # b.run's ranks follow its scores


# ---------------------------------------------------------------------------------------------- bad input


BAD = [
    (["eval", "nope.txt", "a.run"], "qrels file 'nope.txt': no such file"),
    (["eval", "qrels.txt", "nope.run"], "run 'nope' file 'nope.run': no such file"),
    (["eval", "qrels.txt", "a.run", "-m", "foo"], "unknown measure 'foo'"),
    (["eval", "qrels.txt", "a.run", "-m", "P(rel=2)"], "needs a cutoff"),  # -m P alone is trec_eval's P_5..P_1000
    (["eval", "qrels.txt", "a.run", "-m", "P@0"], "positive integer"),
    (["eval", "qrels.txt", "a.run", "-m", "RBP(p=2)"], "strictly between 0 and 1"),
    (["eval", "qrels.txt", "qrels.txt"], "is this a qrels file passed as a run?"),
    (["eval", "qrels.txt", "{bad_score}"], "'abc', which is not a finite number"),
    (["eval", "qrels.txt", "{dup}"], "--duplicates max"),
    (["eval", "{empty}", "a.run"], "has no rows"),
    (["eval", "qrels.txt", "a.run", "--column", "score"], "--column takes ROLE=NAME"),
    (["eval", "qrels.txt", "{csv}"], "no column for 'score'"),
    (["eval", "qrels.txt", "{csv}", "--column", "foo=bm"], "unknown role 'foo'"),
    (["eval", "qrels.txt", "{csv}", "--column", "score=bm25"], "maps 'score' to 'bm25', which is not a column"),
    (["eval", "qrels.txt", "{csv}", "--column", "score=bm", "--ties", "rank"], "--ties rank orders by a rank"),
    (["eval", "qrels.txt", "a.run", "--qrels-column", "relevance=grade"], "TREC text has fixed columns"),
    (["eval", "qrels.txt", "a.run", "-o", "/nonexistent-folder/x.txt"], "does not exist"),
    (["eval", "qrels.txt", "a.run", "-o", "."], "is a folder"),
    (["eval", "qrels.txt", "a.run", "-", "-"], "only one run"),
    (["eval", "-", "a.run"], "qrels cannot come from standard input"),
    (["eval", "qrels.txt", "."], "is a folder, not a file"),
    (["eval", "qrels.txt", "a.run", "--name", "x", "--name", "y"], "one name per run"),
    (["eval", "qrels.txt", "a.run", "b.run", "--name", "x", "--name", "x"], "must differ"),
    (["compare", "qrels.txt", "a.run"], "at least two runs"),
    (["compare", "qrels.txt", "a.run", "b.run", "--max-p", "2"], "--max-p 2.0 must be a number strictly between"),
    (["compare", "qrels.txt", "a.run", "b.run", "--test", "tukey", "--correction", "holm"], "drop the correction"),
    (["compare", "qrels.txt", "a.run", "b.run", "--n-resamples", "0"], "--n-resamples 0"),
    (["compare", "qrels.txt", "a.run", "b.run", "--seed", "-1"], "--seed -1"),
    (["compare", "qrels.txt", "a.run", "b.run", "--digits", "-1"], "--digits"),
    (["compare", "qrels.txt", "a.run", "b.run", "-m", "nDCG@x"], "nDCG@x"),
    (["compare", "qrels.txt", "a.run", "nope.run"], "no such file"),
    (["list", "foo"], "unknown measure 'foo'"),
    (["demo", "-m", "bogus"], "unknown measure 'bogus'"),
]


@pytest.fixture
def bad_files(tmp_path):
    files = {
        "bad_score": "q1 Q0 d1 1 abc t\n",
        "dup": "q1 Q0 d1 1 1 t\nq1 Q0 d1 2 0.5 t\n",
        "empty": "",
        "csv": "qid,docid,bm\nq1,d1,1\n",
    }
    out = {}
    for name, text in files.items():
        path = tmp_path / (f"{name}.csv" if name == "csv" else f"{name}.txt")
        path.write_text(text)
        out[name] = str(path)
    return out


@pytest.mark.parametrize("argv, message", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_input_exits_2_with_one_paragraph(argv, message, capsys, in_golden, bad_files, tmp_path):
    target = tmp_path / "never.txt"
    argv = [a.format(**bad_files) for a in argv]
    with_output = argv + ([] if "-o" in argv or argv[0] == "list" else ["-o", str(target)])
    code, out, err = run_cli(capsys, *with_output)
    assert code == 2, (out, err)
    assert out == ""
    assert message in err, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("sqlmetrics: warning")]
    assert len(lines) == 1 and lines[0].startswith(f"sqlmetrics {argv[0]}: error: ")
    assert not target.exists()
    assert list(tmp_path.glob(".never.txt.*")) == []


@pytest.mark.parametrize("argv", [
    ["eval"], ["eval", "qrels.txt"], ["eval", "qrels.txt", "a.run", "-f", "xml"], ["eval", "qrels.txt", "a.run", "-l", "x"],
    ["compare", "qrels.txt", "a.run", "b.run", "--test", "ttest"], ["frobnicate"],
    ["eval", "qrels.txt", "a.run", "--bogus"],
])
def test_usage_errors_exit_2(argv, capsys, in_golden):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    out, err = capsys.readouterr()
    assert "usage:" in err and "Traceback" not in err


def test_debug_shows_the_traceback(in_golden):
    with pytest.raises(SqlmetricsError):
        main(["eval", "qrels.txt", "a.run", "-m", "foo", "--debug"])


def test_internal_error_exits_1_without_traceback(capsys, in_golden, monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("something broke\nsecond line")

    monkeypatch.setattr(eval_command, "evaluate", boom)
    code, out, err = run_cli(capsys, "eval", "qrels.txt", "a.run")
    assert code == 1 and "internal error: RuntimeError: something broke" in err and "Traceback" not in err
    assert "second line" not in err


@pytest.mark.slow  # a fresh interpreter
def test_bad_input_through_the_real_command_has_no_traceback():
    proc = subprocess.run([sys.executable, "-m", "sqlmetrics", "eval", str(GOLDEN / "qrels.txt"), str(GOLDEN / "qrels.txt")],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr and "line 1" in proc.stderr


def test_broken_pipe_is_quiet():
    qrels = REPO / "sqlmetrics" / "demo" / "qrels.txt"
    runs = [REPO / "sqlmetrics" / "demo" / r for r in ("bm25.run.gz", "rerank.run.gz")]
    proc = subprocess.Popen([sys.executable, "-m", "sqlmetrics", "eval", str(qrels), *map(str, runs), "-q", "-f", "trec"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.wait(timeout=60)
    assert first.startswith(b"num_ret")
    assert proc.returncode == 0 and "Traceback" not in err and "BrokenPipe" not in err


# ---------------------------------------------------------------------------------------------- list, demo, startup


def test_list(capsys):
    from sqlmetrics.catalogue import measures
    from sqlmetrics.catalogue.fusion import fusion_methods
    from sqlmetrics.catalogue.reference import fusion_table
    from sqlmetrics.catalogue.reference import table as markdown_table

    code, out, err = run_cli(capsys, "list")
    assert code == 0
    recsys = {"recommendations", "ratings", "items"}  # a recommender's run (history=, rated pairs, items=)
    rag = {"ContextPrecision", "ContextUtilization", "Faithfulness", "ContextRecall", "ContextRelevancy",
           "AnswerRelevancy"}

    def kind(name, m):
        return "rag" if name in rag or m.rows == "nuggets" else "recsys" if m.rows in recsys else "ranking"

    for name, m in measures().items():
        assert f"\n{m.name}  [{kind(name, m)}] ({m.aggregate}, {m.better} is better)" in out
    for m in fusion_methods().values():
        assert f"\n{m.name}  [fusion]\n" in out
    assert "map_cut_{k}" in out and "trec_eval map" in out and "@k cutoff (whole ranking)" in out
    code, out, err = run_cli(capsys, "list", "-f", "json")
    data = json.loads(out)
    assert [(d["name"], d["kind"]) for d in data] == [
        (name, kind(name, m)) for name, m in measures().items()] + [
        (m, "fusion") for m in fusion_methods()]
    ap = next(d for d in data if d["name"] == "AP")
    assert {"name": "map", "tool": "trec_eval"} in ap["aliases"] and ap["parameters"][0] == {
        "name": "k", "type": "cutoff", "default": "whole ranking", "required": False, "bound_by_at": True}
    code, out, err = run_cli(capsys, "list", "-f", "markdown")
    assert out == markdown_table() + "\n\n" + fusion_table() + "\n"
    code, out, err = run_cli(capsys, "list", "ndcg_cut.10", "mrr@10")
    assert out.startswith("ndcg_cut.10 = nDCG@10  (parameters: k=10, gain=linear; trec_eval: ndcg_cut_10)")
    assert "mrr@10 = RR@10" in out
    code, out, err = run_cli(capsys, "list", "P_5", "-f", "json")
    assert json.loads(out)[0]["canonical"] == "P@5" and json.loads(out)[0]["trec_eval"] == "P_5"
    # trec_eval has no RMSE: the listing says so instead of echoing the name back as trec_eval's
    code, out, err = run_cli(capsys, "list", "RMSE")
    assert out.startswith("RMSE = RMSE  (parameters: none; trec_eval: none)")
    code, out, err = run_cli(capsys, "list", "RMSE", "-f", "json")
    assert json.loads(out)[0]["trec_eval"] is None


def test_demo_table_says_what_it_ran(capsys):
    code, out, err = run_cli(capsys, "demo")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].startswith("Demo: two runs (bm25, rerank) of depth 100 on 50 queries")
    assert lines[2].startswith("The same as: sqlmetrics compare ") and lines[2].endswith("-m R@100")
    assert "b  rerank  0.5037ᵃ" in out
    code, out, err = run_cli(capsys, "demo", "--path")
    assert Path(out.strip()) == REPO / "sqlmetrics" / "demo"


def test_demo_files_are_what_make_demo_builds():
    import gzip

    from sqlmetrics.demo import make_demo

    built = make_demo.build()
    folder = REPO / "sqlmetrics" / "demo"
    for name, text in built.items():
        data = (folder / name).read_bytes()
        assert (gzip.decompress(data) if name.endswith(".gz") else data).decode() == text
    total = sum((folder / name).stat().st_size for name in built)
    assert total < 300_000
    assert len({line.split()[0] for line in built["qrels.txt"].splitlines()}) == 50
    assert {line.split()[3] for line in built["qrels.txt"].splitlines()} == {"0", "1", "2", "3"}
    assert len(built["bm25.run.gz"].splitlines()) == 50 * 100


IMPORT_CHECK = """
import sys
from sqlmetrics.cli import main
code = main(sys.argv[1:])
heavy = sorted(m for m in ("scipy", "pandas", "polars", "pyarrow") if m in sys.modules)
print("HEAVY", heavy, file=sys.stderr)
sys.exit(code)
"""


# Start-up is most of a small evaluation's time: the commands read files and print text, so they import
# neither pyarrow (~0.15 s) nor the statistics and frame libraries (compare's tests are its own code).
@pytest.mark.slow  # a fresh interpreter each
@pytest.mark.parametrize("argv", [["demo"], ["eval", "{q}", "{r}"], ["eval", "{q}", "{r}", "-q", "-f", "csv"],
                                  ["compare", "{q}", "{r}", "{r2}", "--test", "fisher", "--n-resamples", "500"]])
def test_commands_import_only_what_they_use(argv):
    demo = REPO / "sqlmetrics" / "demo"
    argv = [a.format(q=demo / "qrels.txt", r=demo / "bm25.run.gz", r2=demo / "rerank.run.gz") for a in argv]
    proc = subprocess.run([sys.executable, "-c", IMPORT_CHECK, *argv], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "HEAVY []" in proc.stderr


# ---------------------------------------------------------------------------------------------- progress


class FakeTTY(io.StringIO):
    def isatty(self):
        return True


def test_progress_shows_only_on_a_terminal_and_after_the_delay():
    tty = FakeTTY()
    with common.Progress("evaluating 2 runs", stream=tty, delay=0.05, interval=0.01) as p:
        time.sleep(0.3)
    text = tty.getvalue()
    assert p.shown and "evaluating 2 runs" in text and text.endswith("\r\033[K")
    quick = FakeTTY()
    with common.Progress("x", stream=quick, delay=5):
        pass
    assert quick.getvalue() == ""
    piped = io.StringIO()
    with common.Progress("x", stream=piped, delay=0) as p:
        time.sleep(0.05)
    assert piped.getvalue() == "" and p._thread is None
    quiet = FakeTTY()
    with common.Progress("x", stream=quiet, delay=0, interval=0.01, quiet=True) as p:
        time.sleep(0.05)
    assert quiet.getvalue() == "" and p._thread is None


class FakeConnection:
    """What the progress line asks of the evaluation's DuckDB connection: its progress through a query."""

    def __init__(self, percent):
        self.percent = percent

    def query_progress(self):
        return self.percent


def test_progress_shows_the_step_the_rows_and_a_bar():
    tty = FakeTTY()
    with common.Progress("evaluating 1 run", stream=tty, delay=0, interval=10) as p:
        p.stage("checking run 'a'", 1234, FakeConnection(-1.0))  # DuckDB has no progress to give: no bar
        p.stage("computing measures", 5678, FakeConnection(45.0))
    first, second = tty.getvalue().split("\r")[-3:-1]
    assert first.endswith("evaluating 1 run · 0 s · checking run 'a' · 1,234 rows\033[K") and "%" not in first
    # 45% of a 10-character bar: 4 filled
    assert second.endswith("evaluating 1 run · 0 s · computing measures · 5,678 rows · ████░░░░░░  45%\033[K")
    piped = io.StringIO()
    with common.Progress("x", stream=piped, delay=0) as p:
        p.stage("reading qrels")
    assert piped.getvalue() == "" and p.listener is None


def _progress_on_a_terminal(*flags, terminal=True, command="eval") -> tuple:
    """`sqlmetrics eval` (or compare) on the demo runs with stderr on a pseudo-terminal (or a pipe), the progress line shown
    from the start (SQLMETRICS_PROGRESS_DELAY=0): (stdout, what the terminal got)."""
    import pty

    demo = REPO / "sqlmetrics" / "demo"
    argv = [sys.executable, "-m", "sqlmetrics", command, demo / "qrels.txt", demo / "bm25.run.gz",
            demo / "rerank.run.gz", "-m", "AP", *flags]
    env = {**os.environ, "SQLMETRICS_PROGRESS_DELAY": "0"}
    if not terminal:
        proc = subprocess.run(argv, capture_output=True, env=env)
        return proc.stdout.decode(), proc.stderr.decode()
    leader, follower = pty.openpty()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=follower, env=env)
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 1 << 16)
        except OSError:  # the process closed its end
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    assert proc.wait() == 0
    return proc.stdout.read().decode(), seen.decode()


@pytest.mark.slow  # fresh interpreters
def test_progress_line_on_a_terminal_only():
    out, terminal = _progress_on_a_terminal()
    for step in ("reading qrels", "checking qrels", "reading run 'bm25'", "checking run 'rerank'",
                 "computing measures", "collecting results"):
        assert f" s · {step}" in terminal, terminal
    assert " rows\033[K" in terminal and terminal.endswith("\r\033[K")  # the line is wiped when done
    assert out.split() == _progress_on_a_terminal(terminal=False)[0].split()
    assert _progress_on_a_terminal("--quiet")[1] == ""
    assert _progress_on_a_terminal(terminal=False)[1] == ""
    terminal = _progress_on_a_terminal(command="compare")[1]  # compare's and report's evaluations tell their steps
    assert "comparing 2 runs" in terminal and " s · computing measures" in terminal and " rows\033[K" in terminal
    with tempfile.TemporaryDirectory() as folder:  # a file: the page would fill the unread stdout pipe
        terminal = _progress_on_a_terminal("-o", Path(folder) / "report.html", command="report")[1]
    assert "reporting on 2 runs" in terminal and " s · computing measures" in terminal


def test_quiet_is_taken_by_every_evaluating_command(capsys, tmp_path):
    """--quiet (no progress line, no warnings: trec_eval scripts parse stderr) is a flag of every subcommand; it
    changes nothing on stdout, and errors still print."""
    qrels, run = tmp_path / "q.txt", tmp_path / "r.txt"
    qrels.write_text("q1 0 d1 1\nq2 0 d1 1\n")  # q2 is not ranked: a warning without --quiet
    run.write_text("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.4 t\n")
    for argv in (["eval", qrels, run, "-m", "P@1"], ["trec_eval", "-c", "-m", "P.1", qrels, run],
                 ["compare", qrels, run, run, "--name", "a", "--name", "b", "-m", "P@1"]):
        code, plain, warned = run_cli(capsys, *argv)
        code_quiet, quiet, err = run_cli(capsys, *argv[:1], "--quiet", *argv[1:])
        assert code == code_quiet == 0 and plain == quiet and err == "", argv
        assert argv[0] == "trec_eval" or "warning" in warned, argv
    code, _, err = run_cli(capsys, "eval", "--quiet", qrels, tmp_path / "missing.txt", "-m", "P@1")
    assert code == 2 and "error" in err


@pytest.mark.slow  # a fresh interpreter
def test_piped_commands_print_nothing_extra():
    proc = subprocess.run([sys.executable, "-m", "sqlmetrics", "eval", str(GOLDEN / "qrels.txt"), str(GOLDEN / "a.run"),
                           "-m", "AP"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout == "measure       a\nAP       0.5312\n" + AVERAGED["qrels"] + "\n"


# ---------------------------------------------------------------------------------------------- logs

LOG = Path(sqlmetrics.__file__).parent / "demo" / "search_log.parquet"
LOG_OPTIONS = ["--ties", "rank", "--column", "query_id=session", "--column", "doc_id=doc",
               "--column", "rank_position=position"]


def _ndcg_at(gains_in_order: list, k: int) -> float:
    """nDCG@k of one labelled list, its ideal ranking from its own labels (linear gain, log2 discount)."""
    def dcg(gains):
        return sum(g / math.log2(i + 2) for i, g in enumerate(gains[:k]) if g > 0)
    ideal = dcg(sorted(gains_in_order, reverse=True))
    return dcg(gains_in_order) / ideal if ideal > 0 else 0.0


def test_eval_segments_print_the_per_group_table(capsys):
    code, out, err = run_cli(capsys, "eval", "none", LOG, "-m", "nDCG@5,RR", "--group-by", "arm",
                             "--relevance", "2*purchased + clicked", "-f", "json", *LOG_OPTIONS)
    assert code == 0, err
    # The expectation straight from the log, in Python: one list per (arm, session), in position order.
    import pyarrow.parquet as pq

    lists: dict = {}
    for row in pq.read_table(LOG).to_pylist():
        grade = 2 * int(row["purchased"]) + int(row["clicked"])
        lists.setdefault((row["arm"], row["session"]), []).append((row["position"], grade))
    expected: dict = {}
    for (arm, _session), rows in lists.items():
        gains = [g for _, g in sorted(rows)]
        first = next((i + 1 for i, g in enumerate(gains) if g >= 1), None)
        expected.setdefault(arm, []).append((_ndcg_at(gains, 5), 1 / first if first else 0.0))
    got = {r["arm"]: r for r in json.loads(out)}
    assert set(got) == set(expected) == {"control", "treatment"}
    for arm, row in got.items():
        values = expected[arm]
        assert row["num_lists"] == len(values)
        assert row["nDCG@5"] == pytest.approx(math.fsum(v[0] for v in values) / len(values), abs=1e-12)
        assert row["RR"] == pytest.approx(math.fsum(v[1] for v in values) / len(values), abs=1e-12)


def test_eval_none_qrels_needs_label_or_relevance(capsys):
    code, out, err = run_cli(capsys, "eval", "none", LOG, "-m", "RR", *LOG_OPTIONS)
    assert code == 2 and "--label or --relevance" in err and not out


def test_sql_for_logs_writes_into_a_table(capsys):
    code, out, err = run_cli(capsys, "sql", "-m", "nDCG@5", "--dialect", "snowflake", "--qrels", "none",
                             "--run", "db.logs.search", "--group-by", "arm", "--label", "rating",
                             "--into", "db.analytics.eval", *LOG_OPTIONS)
    assert code == 0, err
    assert "CREATE TABLE db.analytics.eval AS" in out


def test_sql_rejects_a_relevance_that_is_not_an_expression(capsys):
    code, out, err = run_cli(capsys, "sql", "-m", "AP", "--qrels", "none", "--relevance", "1; DROP TABLE x")
    assert code == 2 and "one expression only" in err and not out


def test_trec_tag_only_from_readable_trec_text(tmp_path):
    line = "q1 Q0 d1 1 1.0 tagx\n"
    for name in ("run.txt", "plain.zst", "run.parquet", "run.csv.gz"):
        (tmp_path / name).write_text(line)
    duckdb.execute(f"COPY (SELECT {line.strip()!r} AS line) TO '{tmp_path / 'run.zst'}' "
                   "(FORMAT csv, HEADER false, QUOTE '', COMPRESSION zstd)")
    # Compression is found by the first bytes, as the reader finds it: plain text named .zst is plain text.
    assert common.trec_tag(str(tmp_path / "run.txt")) == common.trec_tag(str(tmp_path / "plain.zst")) == "tagx"
    for name in ("run.zst", "run.parquet", "run.csv.gz", "eval.duckdb:run"):  # zstd, tabular, or a table
        assert common.trec_tag(str(tmp_path / name)) is None
    (tmp_path / "commented.txt").write_text("# a comment line\n" + line)  # trec_eval 10.0 skips it too
    assert common.trec_tag(str(tmp_path / "commented.txt")) == "tagx"


def test_eval_runs_of_one_table_named_by_a_column(capsys, tmp_path):
    """`--column run_name=COLUMN`: one RUN file holding several runs gives one column per run, as evaluate() with
    columns={'run_name': ...} and as each run's rows evaluated apart (it once failed: 'a dict of runs too')."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 0\nq1 0 d3 2\nq2 0 d1 1\n")
    table = tmp_path / "runs.csv"
    table.write_text("arm,qid,docno,score\na,q1,d1,3\na,q1,d2,2\na,q1,d3,1\na,q2,d2,1\n"
                     "b,q1,d3,3\nb,q1,d1,2\nb,q2,d1,1\n")
    code, out, err = run_cli(capsys, "eval", qrels, table, "--column", "run_name=arm", "-m", "AP", "-f", "json")
    assert code == 0, err
    got = {run: v["aggregate"] for run, v in json.loads(out)["runs"].items()}
    # by hand: a: q1 AP = (1/1 + 2/3) / 2, q2 AP 0 -> mean 5/12; b: q1 AP = 1, q2 AP = 1 -> 1
    assert got == {"a": {"AP": pytest.approx(5 / 12, abs=1e-12)}, "b": {"AP": pytest.approx(1.0, abs=1e-12)}}
    code, out, err = run_cli(capsys, "eval", qrels, table, table, "--column", "run_name=arm", "-m", "AP")
    assert code == 2 and "names the runs of one table: give one RUN" in err


# ------------------------------------------------------------------------------- messages name the flags

@pytest.mark.parametrize("argv, says, never", [
    # the qrels lack the column --column maps: both flags are named whole (not "qrels_--qrels-column")
    (["eval", "q.csv", "r.csv", "--column", "query_id=question", "-m", "AP"],
     "(--column maps both tables; --qrels-column overrides it for the qrels)", "qrels_--"),
    (["compare", "q.csv", "r.csv", "r.csv", "--baseline", "nope", "-m", "AP", "--qrels-column", "query_id=query_id",
      "--column", "query_id=question"], "--baseline nope is not one of the runs", "baseline="),
    (["eval", "q.csv", "r.csv", "--column", "query_id=question", "--qrels-column", "query_id=query_id",
      "--group-by", "AP", "-m", "AP"], "--group-by 'AP': that name is taken", "group_by"),
    (["trec_eval", "q.txt", "dup.txt"], "appears more than once", "pass --duplicates"),
])
def test_messages_name_the_command_lines_flags(cli, argv, says, never):
    Path("q.csv").write_text("query_id,doc_id,relevance\nq1,d1,1\n")
    Path("r.csv").write_text("question,doc_id,score\nq1,d1,1.0\n")
    Path("q.txt").write_text("q1 0 d1 1\n")
    Path("dup.txt").write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d1 2 1.0 t\n")
    code, out, err = cli(*argv)
    assert code == (4 if argv[0] == "trec_eval" else 2) and says in err and never not in err, err  # trec_eval's 4


def test_version_is_pyprojects(capsys):
    """--version looks the version up when asked (not on every call): the one pyproject.toml gives, on stdout."""
    import tomllib

    version = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())["project"]["version"]
    with pytest.raises(SystemExit) as stopped:
        main(["--version"])
    assert stopped.value.code in (None, 0)
    assert capsys.readouterr().out == f"sqlmetrics {version}\n"
