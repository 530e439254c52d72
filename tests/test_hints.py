"""Every hint a command prints names only flags that command accepts (issue 43): each error path of each command
below is triggered, the flags are read out of what it printed (its error, its warnings, a report's own WARNING
line), and each is looked up in that command's own parser. A flag quoted as another command's (`sqlmetrics eval
--duplicates max`) is looked up in that command's parser. The specific hints that could not be followed are
checked word for word at the end."""
import argparse
import re
import shutil
from pathlib import Path

import duckdb
import pytest

from sqlmetrics.cli import main
from sqlmetrics.cli.main import build_parser

DEMO = Path(__file__).resolve().parent.parent / "sqlmetrics" / "demo"


def accepted(command: str) -> set:
    parser = build_parser(command)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    return set(sub._option_string_actions) | set(parser._option_string_actions)  # and sqlmetrics --version


# A flag: a dash or two and a letter, not inside a word (non-relevant), a path (a/-b) or a number (-1).
FLAG = re.compile(r"(?<![\w/.'-])(--?[A-Za-z][\w-]*)")
QUOTED_COMMAND = re.compile(r"`sqlmetrics ([\w-]+)([^`]*)`")


def flags_named(text: str, command: str) -> list:
    """[(command, flag)] of every flag the text names: in a quoted `sqlmetrics X ...`, X's; elsewhere the command's."""
    named = []
    for m in QUOTED_COMMAND.finditer(text):
        named += [(m[1], f) for f in FLAG.findall(m[2])]
    named += [(command, f) for f in FLAG.findall(QUOTED_COMMAND.sub("", text))]
    return named


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("hints")
    (d / "qrels.txt").write_text("q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\n")
    (d / "run.txt").write_text("q1 Q0 d1 1 2.0 r\nq1 Q0 d2 2 1.0 r\nq2 Q0 d3 1 1.0 r\n")
    (d / "other.txt").write_text("q1 Q0 d2 1 2.0 o\nq1 Q0 d1 2 1.0 o\nq2 Q0 d9 1 1.0 o\n")
    (d / "partial.txt").write_text("q1 Q0 d1 1 2.0 p\n")  # q2 unranked: a warning
    (d / "empty.txt").write_text("")
    (d / "dup.txt").write_text("q1 Q0 d1 1 2.0 r\nq1 Q0 d1 2 1.0 r\n")
    (d / "nan.txt").write_text("q1 Q0 d1 1 nan r\n")
    (d / "run.csv").write_text("query_id,doc_id,score\nq1,d1,1\n")
    (d / "noquery.csv").write_text("question,doc_id,score\nq1,d1,1\n")
    (d / "qrels.csv").write_text("query_id,doc_id,relevance\nq1,d1,1\n")
    (d / "stats.csv").write_text("a,b\n1,2\n")
    con = duckdb.connect()
    # An A/B log of sessions whose arms are 70/30 where 50/50 was meant: a sample ratio mismatch.
    con.execute(f"""COPY (SELECT 's' || i AS query_id, 'd' || (i % 7) AS doc_id, 1.0 AS score,
                 CASE WHEN i % 10 < 7 THEN 'A' ELSE 'B' END AS arm, (i % 3 = 0)::INT AS clicked,
                 'u' || (i % 50) AS user_id, 0.5 AS propensity, 1 AS position
                 FROM range(400) t(i)) TO '{d / "log.parquet"}'""")
    con.execute(f"COPY (SELECT 'q1' AS query_id, 'd1' AS doc_id, '50%' AS propensity, 1 AS click) "
                f"TO '{d / 'textprop.csv'}'")
    for name in ("recsys_test.csv", "recsys_reco.csv", "recsys_train.csv", "rag_retrieved.csv"):
        shutil.copy(DEMO / name, d / name)
    return d


# (command, argv after it): each an error or a warning a user meets. Files are the fixture's, by name.
CASES = [
    ("eval", ["run.csv", "run.csv"]),  # a run given as the qrels: no relevance column
    ("eval", ["qrels.csv", "noquery.csv"]),  # no query_id column: map it
    ("eval", ["qrels.txt", "run.txt", "-m", "nDGC@10"]),
    ("eval", ["qrels.txt", "run.txt", "-m", "iprec_at_recal"]),
    ("eval", ["qrels.txt", "empty.txt"]),
    ("eval", ["qrels.txt", "dup.txt"]),
    ("eval", ["qrels.txt", "nan.txt"]),
    ("eval", ["qrels.txt", "partial.txt"]),  # a warning: q2 unranked
    ("eval", ["qrels.txt", "run.txt", "-m", "Novelty"]),  # needs the training interactions
    ("eval", ["qrels.txt", "run.txt", "-m", "Faithfulness"]),  # needs the judged statements
    ("eval", ["qrels.txt", "run.txt", "-o", "out.xlsx"]),
    ("eval", ["qrels.txt", "run.txt", "--group-by", "arm"]),
    ("eval", ["none", "log.parquet", "-m", "RR"]),  # a log without a grade
    ("eval", ["qrels.txt", "run.txt", "--ties", "rank"]),
    ("eval", ["recsys_test.csv", "recsys_reco.csv", "-m", "CatalogCoverage"]),  # a repeated item
    ("eval", ["recsys_test.csv", "recsys_reco.csv", "-m", "CatalogCoverage", "--duplicates", "max"]),
    ("compare", ["qrels.txt", "run.txt"]),  # one run
    ("compare", ["qrels.txt", "run.txt", "other.txt", "--baseline", "nope"]),
    ("compare", ["qrels.txt", "run.txt", "partial.txt"]),
    ("compare", ["none", "log.parquet", "--column", "run_name=arm", "--column", "query_id=query_id", "--label", "clicked", "-m", "RR"]),  # SRM
    ("compare", ["none", "log.parquet", "--column", "run_name=arm", "--column", "query_id=query_id", "--label", "clicked", "-m", "RR",
                 "--unit", "user_id", "--test", "fisher"]),
    ("compare", ["none", "log.parquet", "--column", "run_name=arm", "--column", "query_id=query_id", "--label", "clicked", "-m", "RR",
                 "--covariate", "score"]),  # a covariate without a unit
    ("compare", ["qrels.txt", "run.txt", "other.txt", "--sequential", "100", "--test", "fisher"]),
    ("report", ["qrels.txt", "run.txt", "-o", "report.html"]),
    ("report", ["qrels.txt", "run.txt", "other.txt", "-o", "report.txt"]),
    ("report", ["qrels.txt", "run.txt", "empty.txt", "-o", "report.html"]),
    ("fuse", ["run.txt", "--method", "nope"]),
    ("fuse", ["run.txt", "other.txt", "--method", "rrf", "-p", "nope=1"]),
    ("fuse", ["run.txt", "empty.txt", "--method", "rrf"]),
    ("list", ["nDGC"]),
    ("sql", ["-m", "nope"]),
    ("sql", ["-m", "AP", "--dialect", "nope"]),
    ("sql", ["-m", "AP", "--incremental", "day"]),
    ("sql", ["-m", "AP", "--compare", "fisher", "--unit", "user_id"]),
    ("decide", ["stats.csv"]),
    ("decide", ["missing.parquet"]),
    ("decide", ["stats.xlsx"]),
    ("trec_eval", ["run.csv", "run.csv"]),  # a run given as the qrels: trec_eval maps no columns
    ("trec_eval", ["qrels.csv", "noquery.csv"]),
    ("trec_eval", ["-m", "ndcg_cut10", "qrels.txt", "run.txt"]),
    ("trec_eval", ["qrels.txt", "empty.txt"]),
    ("trec_eval", ["qrels.txt", "dup.txt"]),
    ("trec_eval", ["qrels.txt", "nan.txt"]),
    ("trec_eval", ["qrels.txt", "partial.txt"]),
    ("trec_eval", ["-c", "qrels.txt", "partial.txt"]),
    ("trec_eval", ["-m", "Novelty", "qrels.txt", "run.txt"]),
    ("convert", ["run", "run.txt", "-o", "out.xlsx"]),
    ("convert", ["run", "noquery.csv", "-o", "out.txt"]),
    ("convert", ["qrels", "run.csv", "-o", "out.txt"]),
    ("ips", ["log.parquet"]),
    ("ips", ["textprop.csv"]),
    ("pbm-ips", ["log.parquet"]),
    ("interleaving", ["log.parquet"]),
    ("clicks", ["log.parquet"]),  # no session column: map it
    ("clicks", ["log.parquet", "--column", "session=user_id", "--model", "cascade", "--iterations", "3"]),
    ("agreement", ["qrels.txt", "qrels.txt", "-m", "P@5"]),  # -m without --runs
    ("agreement", ["qrels.txt", "run.csv"]),  # a run given as judgments: no relevance column
    ("pool", ["run.txt", "--depth", "0"]),
    ("pool", ["dup.txt", "--depth", "3"]),
    ("pool", ["noquery.csv", "--depth", "3"]),
    ("holes", ["qrels.txt", "run.txt", "-m", "Novelty"]),
    ("holes", ["qrels.txt", "empty.txt", "-m", "P@10"]),
    ("ppi", ["qrels.txt", "qrels.txt", "run.txt", "-m", "P@1", "--alpha", "2"]),  # refused before reading
    ("ppi", ["qrels.txt", "qrels.csv", "run.txt", "-m", "P@1"]),  # one human-labelled query
    ("ppi", ["qrels.txt", "qrels.txt", "run.txt", "-m", "P@1"]),  # no LLM-only query
]


def _tiered(cases: list) -> list:
    """Each command's first case in the fast tier, the rest in the full suite."""
    seen = set()
    out = []
    for command, argv in cases:
        slow = command in seen
        seen.add(command)
        out.append(pytest.param(command, argv, id=f"{command} {' '.join(argv)}",
                                marks=[pytest.mark.slow] if slow else []))
    return out


@pytest.mark.parametrize("command, argv", _tiered(CASES))
def test_a_hint_names_only_flags_its_command_accepts(command, argv, files, capsys, monkeypatch):
    monkeypatch.chdir(files)
    try:
        main([command, *argv])
    except SystemExit:  # argparse's own usage errors
        pass
    out, err = capsys.readouterr()
    said = err + "".join(line for line in out.splitlines(keepends=True) if line.startswith("WARNING"))
    assert "Traceback" not in said and "internal error" not in said, said
    for who, flag in flags_named(said, command):
        assert flag in accepted(who), f"{flag!r} is not a flag of `sqlmetrics {who}`: {said}"


def test_every_command_is_covered():
    from sqlmetrics.cli.main import COMMANDS

    assert {c for c, _ in CASES} >= set(COMMANDS) - {"demo"}


@pytest.mark.parametrize("command, argv, says", [
    # the working form of a column mapping (it printed `--qrels-column --relevance <your column>`)
    ("eval", ["run.csv", "run.csv"], "Rename it (or map it: --qrels-column relevance=<your column>)."),
    # trec_eval maps no columns: the hint that cannot be followed there is left out
    ("trec_eval", ["run.csv", "run.csv"], "no column for 'relevance' (columns: query_id, doc_id, score). Rename it."),
    # convert reads one input, whose columns --column maps
    ("convert", ["qrels", "run.csv", "-o", "out.txt"], "Rename it (or map it: --column relevance=<your column>)."),
    # a keyword without its '=' was left untranslated: `group_by 'arm' is not a column`
    ("eval", ["qrels.txt", "run.txt", "--group-by", "arm"], "--group-by arm is not a column"),
    # `pass history=` printed as `pass --history (--history on the command line)`
    ("eval", ["qrels.txt", "run.txt", "-m", "Novelty"], "pass --history, a table of user and item"),
    # trec_eval's -m with a suggestion, not sixty names
    ("trec_eval", ["-m", "ndcg_cut10", "qrels.txt", "run.txt"], "Did you mean -m ndcg_cut.10"),
    # a suggestion that works (it suggested iprec_at_recall_10, which the fraction refuses)
    ("eval", ["qrels.txt", "run.txt", "-m", "iprec_at_recal"], "'iprec_at_recall_0.50'"),
    # the sample ratio warning names no keyword (it said `split=` on the command line)
    ("compare", ["none", "log.parquet", "--column", "run_name=arm", "--column", "query_id=query_id", "--label", "clicked", "-m", "RR"],
     "give their shares with the split option"),
])
def test_the_hints_that_could_not_be_followed(command, argv, says, files, capsys, monkeypatch):
    monkeypatch.chdir(files)
    main([command, *argv])
    out, err = capsys.readouterr()
    assert says in err, err
    assert "split=" not in out + err and "--relevance <" not in err


def test_a_trec_eval_family_named_bare_is_all_its_cutoffs(files, capsys, monkeypatch):
    """`eval -m iprec_at_recall` as trec_eval's -m reads it: the 11 points (it was refused)."""
    monkeypatch.chdir(files)
    assert main(["eval", "qrels.txt", "run.txt", "-m", "iprec_at_recall", "-f", "csv"]) == 0
    header = capsys.readouterr().out.splitlines()[0].split(",")
    assert header[1:] == [f"IPrec@{r / 10}" for r in range(11)] or header[-11:] == [f"IPrec@{r / 10}" for r in range(11)]


def test_every_suggested_spelling_parses():
    from sqlmetrics.catalogue import names

    for spelling in names._all_spellings():
        if not spelling.endswith("@k"):
            names.parse(spelling)
