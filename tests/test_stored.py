"""The statements kept on disk between processes (caches.Stored): a second process reads what the first bound,
and nothing it reads can be stale, damaged or someone else's."""
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import sqlmetrics
from sqlmetrics import caches, plan
from sqlmetrics.caches import Kept
from sqlmetrics.catalogue import names, templates
from sqlmetrics.local import evaluate as local_evaluate
from sqlmetrics.statement import aggregate

QRELS = "q1 0 d1 1\nq1 0 d2 0\nq1 0 d3 2\nq2 0 d1 1\nq2 0 d4 1\n"
RUN = "q1 Q0 d1 1 0.9 r\nq1 Q0 d2 2 0.8 r\nq1 Q0 d3 3 0.7 r\nq2 Q0 d9 1 0.9 r\nq2 Q0 d4 2 0.5 r\n"
# P@2: q1 has d1 (1) and d2 (0) in its top 2, q2 d9 (unjudged) and d4 (1): (1/2 + 1/2) / 2.
P2 = 0.5


@pytest.fixture
def files(tmp_path):
    (tmp_path / "qrels.txt").write_text(QRELS)
    (tmp_path / "run.txt").write_text(RUN)
    return tmp_path / "qrels.txt", tmp_path / "run.txt"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("SQLMETRICS_CACHE_DIR", str(folder))
    return folder


@pytest.fixture(autouse=True)
def _catalogue_forgotten_after():
    """A test here may read a changed copy of the catalogue: what it left in memory goes with it (after
    monkeypatch has put sql_dir back), or the next test in this process would read that copy."""
    yield
    for cached in (templates.catalogue_folder, templates.measures, templates.shared_columns, names._aliases):
        cached.cache_clear()


def _entries(folder: Path) -> dict:
    return {p: p.read_bytes() for p in folder.rglob("*.pickle")}


def _as_a_new_process(monkeypatch):
    """Forget what this process keeps in memory (the catalogue, plans, statements, aggregates' SQL): what is
    left is the disk, as for the next process."""
    for cached in (templates.catalogue_folder, templates.measures, templates.shared_columns, names._aliases):
        cached.cache_clear()
    for module, name in ((plan, "_PLANS"), (local_evaluate, "_STATEMENTS"), (aggregate, "_AGGREGATES")):
        monkeypatch.setattr(module, name, Kept())


def test_a_second_process_binds_no_template_and_prints_the_same(files, cache):
    """The second `sqlmetrics trec_eval` call reads the parsed measures, the statement and the aggregates'
    SQL from disk: it loads neither the templates nor sqlglot, writes no new entry, and
    prints what the first printed."""
    probe = ("import sys; from sqlmetrics.cli import main; code = main(['trec_eval', sys.argv[1], sys.argv[2]]); "
             "loaded = [m for m in ('sqlglot', 'sqlmetrics.stats') if m in sys.modules]; "
             "print('loaded:', loaded, file=sys.stderr); sys.exit(code)")
    env = {**os.environ, "SQLMETRICS_CACHE_DIR": str(cache)}
    first = subprocess.run([sys.executable, "-c", probe, *map(str, files)], capture_output=True, text=True, env=env)
    assert first.returncode == 0, first.stderr
    assert "'sqlglot'" in first.stderr  # the first call binds the templates
    kept = _entries(cache)
    assert {p.parent.name for p in kept} == {"measures", "statements", "aggregates"}
    second = subprocess.run([sys.executable, "-c", probe, *map(str, files)], capture_output=True, text=True, env=env)
    assert second.returncode == 0, second.stderr
    assert "loaded: []" in second.stderr
    assert second.stdout == first.stdout and "P_5" in first.stdout
    assert _entries(cache) == kept


def test_a_changed_template_is_never_read_stale(files, cache, tmp_path, monkeypatch):
    folder = tmp_path / "sql"
    shutil.copytree(templates.sql_dir(), folder)
    monkeypatch.setattr(templates, "sql_dir", lambda: folder)
    _as_a_new_process(monkeypatch)
    assert sqlmetrics.evaluate(*map(str, files), ["P@2"]).aggregate["P@2"] == pytest.approx(P2)
    before = _entries(cache)
    body = "CAST(SUM(CASE WHEN rnk <= :k THEN is_rel ELSE 0 END) AS DOUBLE) / :k"
    text = (folder / "P.sql").read_text()
    assert body in text
    (folder / "P.sql").write_text(text.replace(body, f"({body}) / 2"))  # the same size would do as well
    _as_a_new_process(monkeypatch)
    assert sqlmetrics.evaluate(*map(str, files), ["P@2"]).aggregate["P@2"] == pytest.approx(P2 / 2)
    assert set(before) < set(_entries(cache))  # new entries beside the old, which nothing names any more


def test_a_template_edited_while_a_process_runs_is_not_read_stale_by_the_next(files, cache, tmp_path, monkeypatch):
    """A process keeps the catalogue it read: what it stores after a template changed under it is named by the
    bytes it read, so the next process, reading the changed template, does not find it."""
    folder = tmp_path / "sql"
    shutil.copytree(templates.sql_dir(), folder)
    monkeypatch.setattr(templates, "sql_dir", lambda: folder)
    _as_a_new_process(monkeypatch)
    qrels, run = map(str, files)
    assert sqlmetrics.evaluate(qrels, run, ["P@2"]).aggregate["P@2"] == pytest.approx(P2)
    body = "CAST(SUM(CASE WHEN rnk <= :k THEN is_rel ELSE 0 END) AS DOUBLE) / :k"
    (folder / "P.sql").write_text((folder / "P.sql").read_text().replace(body, f"({body}) / 2"))
    # P@3 by hand: q1 has d1 (1), d2 (0), d3 (2) in its top 3, q2 d9 and d4 (1): (2/3 + 1/3) / 2 = 1/2.
    assert sqlmetrics.evaluate(qrels, run, ["P@3"]).aggregate["P@3"] == pytest.approx(1 / 2)  # still the P it read
    _as_a_new_process(monkeypatch)
    assert sqlmetrics.evaluate(qrels, run, ["P@3"]).aggregate["P@3"] == pytest.approx(1 / 4)


def test_changed_code_names_other_entries(tmp_path):
    (tmp_path / "module.py").write_text("X = 1\n")
    first = caches._fingerprint([(tmp_path, "*.py")])
    (tmp_path / "module.py").write_text("X = 2\n")
    caches._code_digest.cache_clear()  # a new process reads the code again
    assert caches._fingerprint([(tmp_path, "*.py")]) != first


def test_a_damaged_or_foreign_entry_is_built_again(files, cache, monkeypatch):
    qrels, run = map(str, files)
    _as_a_new_process(monkeypatch)
    assert sqlmetrics.evaluate(qrels, run, ["P@2"]).aggregate["P@2"] == pytest.approx(P2)
    kept = _entries(cache)
    for path in kept:
        path.write_bytes(b"not a pickle")
    _as_a_new_process(monkeypatch)
    assert sqlmetrics.evaluate(qrels, run, ["P@2"]).aggregate["P@2"] == pytest.approx(P2)
    assert _entries(cache) == kept  # written again, whole
    # An entry whose owner is not the caller is not read, whatever it holds: here a statement of other numbers.
    statements = [p for p in kept if p.parent.name == "statements"]
    for path in statements:
        path.write_bytes(pickle.dumps("SELECT 'r' AS run, 'q1' AS query_id, 0.25 AS p_at_2"))
    monkeypatch.setattr(caches.os, "getuid", lambda: os.stat(statements[0]).st_uid + 1)
    _as_a_new_process(monkeypatch)
    assert sqlmetrics.evaluate(qrels, run, ["P@2"]).aggregate["P@2"] == pytest.approx(P2)


def test_no_folder_no_cache(files, tmp_path, monkeypatch):
    qrels, run = map(str, files)
    monkeypatch.setenv("SQLMETRICS_CACHE_DIR", "")
    _as_a_new_process(monkeypatch)
    assert sqlmetrics.evaluate(qrels, run, ["P@2"]).aggregate["P@2"] == pytest.approx(P2)
    (tmp_path / "a_file").write_text("")
    monkeypatch.setenv("SQLMETRICS_CACHE_DIR", str(tmp_path / "a_file" / "cache"))  # cannot be made
    _as_a_new_process(monkeypatch)
    assert sqlmetrics.evaluate(qrels, run, ["P@2"]).aggregate["P@2"] == pytest.approx(P2)
    assert not list(tmp_path.rglob("*.pickle"))
