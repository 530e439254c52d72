"""The statements kept on disk between processes (caches.Stored): a second process reads what the first bound,
and nothing it reads can be stale, damaged or someone else's."""
import dataclasses
import hashlib
import json
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
from sqlmetrics.cli import main
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
    """Every entry by path, with its bytes (whatever the format: the tests below ran against the pickles too)."""
    return {p: p.read_bytes() for p in folder.glob("*/*") if p.is_file() and not p.name.endswith(".tmp")}


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
        path.write_bytes(b"not an entry")
    _as_a_new_process(monkeypatch)
    assert sqlmetrics.evaluate(qrels, run, ["P@2"]).aggregate["P@2"] == pytest.approx(P2)
    assert _entries(cache) == kept  # written again, whole
    # An entry whose owner is not the caller is not read, whatever it holds: here a statement of other numbers.
    statements = [p for p in kept if p.parent.name == "statements"]
    for path in statements:
        path.write_bytes(pickle.dumps("SELECT 'r' AS run, 'q1' AS query_id, 0.25 AS p_at_2"))
    real_fstat = os.fstat
    monkeypatch.setattr(caches.os, "fstat", lambda fd: os.stat_result((*real_fstat(fd)[:4], os.getuid() + 1,
                                                                         *real_fstat(fd)[5:])))
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
    assert {p.name for p in tmp_path.rglob("*")} == {"a_file", "qrels.txt", "run.txt"}


# Issue 42: hostile caches. The cases below failed against the pickled entries (each says how) and hold now.
L2 = "q1 0 d1 1\nq1 0 d2 2\n"  # with -l 2 only d2 is relevant
L2_RUN = "q1 Q0 d1 1 0.9 r\nq1 Q0 d2 2 0.8 r\n"


def _cli(capsys, monkeypatch, *argv) -> str:
    """The command's output, without the footer a table has (which queries the means are over)."""
    _as_a_new_process(monkeypatch)
    assert main(list(argv)) == 0
    return "".join(line for line in capsys.readouterr().out.splitlines(keepends=True) if not line.startswith("Means"))


def test_an_entry_copied_over_another_is_not_taken_for_it(tmp_path, cache, capsys, monkeypatch):
    """-l 2's statement copied over the default's (a sync tool, a backup put back): the default call printed P@1
    0.0 and AP 0.5, the numbers of -l 2, where by hand both are 1 (d1 and d2 relevant at level 1)."""
    (tmp_path / "qrels").write_text(L2)
    (tmp_path / "run").write_text(L2_RUN)
    call = ["eval", str(tmp_path / "qrels"), str(tmp_path / "run"), "-m", "P@1", "-m", "AP"]
    assert _cli(capsys, monkeypatch, *call).split() == ["measure", "run", "P@1", "1.0000", "AP", "1.0000"]
    default = _entries(cache)
    # -l 2 by hand: d2 alone relevant, at rank 2: P@1 0, AP 1/2.
    assert _cli(capsys, monkeypatch, *call, "-l", "2").split() == ["measure", "run", "P@1", "0.0000", "AP", "0.5000"]
    level_2 = {p: b for p, b in _entries(cache).items() if p not in default}
    for kind in ("measures", "statements"):
        (theirs,) = [b for p, b in level_2.items() if p.parent.name == kind] or [None]
        if theirs is not None:
            for ours in (p for p in default if p.parent.name == kind):
                ours.write_bytes(theirs)
    assert _cli(capsys, monkeypatch, *call).split() == ["measure", "run", "P@1", "1.0000", "AP", "1.0000"]


def test_an_entry_holding_another_type_is_built_again(files, cache, capsys, monkeypatch):
    """pickle.dump(7) over every entry gave `internal error: TypeError`; so does any well-formed entry whose value
    is not what its kind holds."""
    qrels, run = map(str, files)
    expected = _cli(capsys, monkeypatch, "trec_eval", "-m", "P.2", qrels, run)
    assert "P_2                   \tall\t0.5000" in expected
    kept = _entries(cache)
    for path in kept:
        path.write_bytes(pickle.dumps(7))
    assert _cli(capsys, monkeypatch, "trec_eval", "-m", "P.2", qrels, run) == expected
    assert _entries(cache) == kept  # built again, the same
    for value in (7, None, [], {"tuple": [1]}, ["not a call"], {"dataclass": ["Path", {}]}):  # in every entry at once
        body = json.dumps(value).encode()
        for path, data in kept.items():
            name = data.split(b"\n")[0]
            path.write_bytes(b"%s\n%s\n%s" % (name, hashlib.sha256(body).hexdigest().encode(), body))
        assert _cli(capsys, monkeypatch, "trec_eval", "-m", "P.2", qrels, run) == expected
        assert _entries(cache) == kept


class _Planted:
    """A pickle that runs code when loaded: it makes the file `MARKER`."""

    def __reduce__(self):
        return (Path.touch, (MARKER[0],))


MARKER: list = []


def test_a_symbolic_link_in_the_folder_is_not_followed(files, cache, tmp_path, monkeypatch):
    """Another user's links, planted in a folder the caller shares, pointing at a file the caller owns: the pickle
    behind the link was loaded (its owner, through the link, was the caller's) and ran its code."""
    qrels, run = map(str, files)
    _as_a_new_process(monkeypatch)
    assert sqlmetrics.evaluate(qrels, run, ["P@2"]).aggregate["P@2"] == pytest.approx(P2)
    MARKER[:] = [tmp_path / "code-ran"]
    payload = tmp_path / "mine.bin"
    payload.write_bytes(pickle.dumps(_Planted()))
    kept = _entries(cache)
    for path in kept:
        path.unlink()
        path.symlink_to(payload)
    _as_a_new_process(monkeypatch)
    assert sqlmetrics.evaluate(qrels, run, ["P@2"]).aggregate["P@2"] == pytest.approx(P2)
    assert not MARKER[0].exists()
    assert payload.read_bytes() == pickle.dumps(_Planted())  # not written through the link either
    assert all(not p.is_symlink() for p in kept)  # the links were replaced by the entries built again


def test_a_folder_others_can_write_is_not_used(files, cache, monkeypatch, recwarn):
    """A cache folder writable by group or others (a shared SQLMETRICS_CACHE_DIR, a folder under /tmp another user
    made): anyone there could plant entries, so it is neither read nor written, with one warning that says why."""
    qrels, run = map(str, files)
    _as_a_new_process(monkeypatch)
    assert sqlmetrics.evaluate(qrels, run, ["P@2"]).aggregate["P@2"] == pytest.approx(P2)
    kept = _entries(cache)
    assert kept and not [w for w in recwarn if "cache folder" in str(w.message)]
    for mode, why in ((0o777, "writable by others (mode 777)"), (0o770, "writable by its group (mode 770)")):
        cache.chmod(mode)
        for path in kept:
            path.write_bytes(b"planted")
        caches._warned.clear()  # as in a new process
        for _ in range(2):
            _as_a_new_process(monkeypatch)
            assert sqlmetrics.evaluate(qrels, run, ["P@2", "P@3"]).aggregate["P@2"] == pytest.approx(P2)
        said = [str(w.message) for w in recwarn if "cache folder" in str(w.message)]
        assert len(said) == 1 and str(cache) in said[0] and why in said[0] and "chmod go-w" in said[0], said
        assert set(_entries(cache).values()) == {b"planted"}  # nothing read, nothing written
        recwarn.clear()
    cache.chmod(0o700)
    monkeypatch.setattr(caches.os, "getuid", lambda: os.stat(cache).st_uid + 1)
    caches._warned.clear()
    _as_a_new_process(monkeypatch)
    assert sqlmetrics.evaluate(qrels, run, ["P@2"]).aggregate["P@2"] == pytest.approx(P2)
    assert [w for w in recwarn if "belongs to another user" in str(w.message)]
    assert set(_entries(cache).values()) == {b"planted"}


def test_a_new_folder_is_private_whatever_the_umask(files, tmp_path, monkeypatch):
    qrels, run = map(str, files)
    monkeypatch.setenv("SQLMETRICS_CACHE_DIR", str(tmp_path / "new" / "cache"))
    old = os.umask(0o002)
    try:
        _as_a_new_process(monkeypatch)
        assert sqlmetrics.evaluate(qrels, run, ["P@2"]).aggregate["P@2"] == pytest.approx(P2)
    finally:
        os.umask(old)
    cache = tmp_path / "new" / "cache"
    assert {oct(p.stat().st_mode & 0o777) for p in (cache, *cache.iterdir())} == {"0o700"}
    assert len(_entries(cache)) == 3  # and used: measures, statement, aggregates


def test_an_interrupted_write_leaves_no_temporary_file(tmp_path, monkeypatch):
    """A signal raises KeyboardInterrupt at whichever instruction it lands on. Raised at each line the write runs
    in turn (its own and those of the Python code it calls), none leaves a temporary file behind: the pickled
    entries' mkstemp() returned before the `try` that removes the file, so a signal just after it left one."""
    folder = tmp_path / "kind"
    folder.mkdir(mode=0o700)
    path = folder / "entry.entry"
    for stop in range(1, 3000):
        lines = [0]

        def tracer(frame, event, arg):
            if event == "line":
                lines[0] += 1
                if lines[0] == stop:
                    raise KeyboardInterrupt
            return tracer

        sys.settrace(tracer)
        try:
            caches._store(folder, path, b"x\ny\n\"v\"", keep=10)
        except KeyboardInterrupt:
            pass
        else:
            break
        finally:
            sys.settrace(None)
        assert not [p.name for p in folder.iterdir() if p.name.endswith(".tmp")], f"interrupted at line {stop}"
        path.unlink(missing_ok=True)
    else:
        pytest.fail("the write never finished")
    assert stop > 3 and path.read_bytes() == b"x\ny\n\"v\""


def test_temporary_files_of_killed_writers_go(tmp_path):
    folder = tmp_path / "kind"
    folder.mkdir(mode=0o700)
    old, new = folder / ".a.1.aa.tmp", folder / ".b.2.bb.tmp"
    old.write_text("x")
    new.write_text("x")
    os.utime(old, (0, 0))
    caches._store(folder, folder / "e.entry", b"{}", keep=10)
    assert not old.exists() and new.exists()


def test_every_catalogue_measure_is_kept_whole():
    """A parsed measure comes back from its JSON entry equal to the one parsed (but its examples, not kept)."""
    calls = [names.parse(e.call) for m in templates.measures().values() for e in m.examples]
    classes = {c.__name__: c for c in (names.MeasureCall, templates.Measure, templates.Param, templates.Alias)}
    kept = [dataclasses.replace(c, measure=dataclasses.replace(c.measure, examples=())) for c in calls]
    text = json.dumps(caches._encoded(kept, classes), allow_nan=False)
    assert caches._decoded(json.loads(text), classes) == kept and len(kept) > 200
