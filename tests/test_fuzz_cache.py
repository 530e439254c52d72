"""Property: whatever the disk cache's folder holds (damaged, truncated, forged, swapped or foreign entries, links,
folders or pipes in an entry's place), a call prints the numbers computed by hand and never fails: an entry is read
only when it is whole, the caller's, and the entry of exactly this call (caches.Stored). The fast tier runs the
hand-picked cases; the slow tier lets hypothesis mutate the entries of a real call."""
import hashlib
import json
import os
import pickle
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlmetrics import caches, plan
from sqlmetrics.caches import Kept
from sqlmetrics.catalogue import names, templates
from sqlmetrics.cli import main
from sqlmetrics.local import evaluate as local_evaluate
from sqlmetrics.statement import aggregate

QRELS = "q1 0 d1 1\nq1 0 d2 0\nq1 0 d3 2\nq2 0 d1 1\nq2 0 d4 1\n"
RUN = "q1 Q0 d1 1 0.9 r\nq1 Q0 d2 2 0.8 r\nq1 Q0 d3 3 0.7 r\nq2 Q0 d9 1 0.9 r\nq2 Q0 d4 2 0.5 r\n"
# By hand: P@2 = (1/2 + 1/2) / 2; AP q1 = (1/1 + 2/3) / 2 = 5/6, q2 = (1/2) / 2 = 1/4: MAP = 13/24 = 0.5417.
EXPECTED = ["map                   \tall\t0.5417", "P_2                   \tall\t0.5000"]


def _new_process(mp, folder: Path) -> None:
    """This process as a new one would start, with its cache in `folder`: nothing read or built yet (another test
    in it may have read the catalogue, and then the measures' entry is never written)."""
    mp.setenv("SQLMETRICS_CACHE_DIR", str(folder))
    for cached in (templates.catalogue_folder, templates.measures, templates.shared_columns, names._aliases):
        cached.cache_clear()
    for module, name in ((plan, "_PLANS"), (local_evaluate, "_STATEMENTS"), (aggregate, "_AGGREGATES")):
        mp.setattr(module, name, Kept())


def _call(folder: Path, qrels: Path, run: Path, capsys) -> list:
    """`sqlmetrics trec_eval -m P.2 -m map` as a new process would run it, with its cache in `folder`: the lines."""
    with pytest.MonkeyPatch.context() as mp:
        _new_process(mp, folder)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # nothing about a damaged entry is the caller's business
            assert main(["trec_eval", "-m", "P.2", "-m", "map", str(qrels), str(run)]) == 0
    out = capsys.readouterr().out.splitlines()
    return [line for line in out if line.startswith(("P_2 ", "map "))]


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A real call's entries, in a folder the tests copy and spoil."""
    root = tmp_path_factory.mktemp("made")
    (root / "qrels").write_text(QRELS)
    (root / "run").write_text(RUN)
    folder = root / "cache"
    with pytest.MonkeyPatch.context() as mp:
        _new_process(mp, folder)
        assert main(["trec_eval", "-m", "P.2", "-m", "map", str(root / "qrels"), str(root / "run")]) == 0
    entries = {p.relative_to(folder): p.read_bytes() for p in folder.glob("*/*.entry")}
    assert {p.parent.name for p in entries} == {"measures", "statements", "aggregates"}
    # A second call's entries (another level), to swap in: valid entries of other keys.
    with pytest.MonkeyPatch.context() as mp:
        _new_process(mp, root / "other")
        assert main(["trec_eval", "-l", "2", "-m", "P.2", "-m", "map", str(root / "qrels"), str(root / "run")]) == 0
    others = [p.read_bytes() for p in (root / "other").glob("*/*.entry")]
    return root, entries, others


def _spoil(folder: Path, entries: dict, how) -> None:
    folder.mkdir(mode=0o700)
    for relative, data in entries.items():
        (folder / relative.parent).mkdir(mode=0o700, exist_ok=True)
        how(folder / relative, data)


def _entry(name: bytes, value) -> bytes:
    """An entry as Stored writes one: its name, the SHA-256 of its value, the value as JSON."""
    body = value if isinstance(value, bytes) else json.dumps(value).encode()
    return b"%s\n%s\n%s" % (name, hashlib.sha256(body).hexdigest().encode(), body)


def _forged(edit):
    """The entry's (name, value) changed by `edit`, written with a digest that matches: read only if still right."""
    def how(path, data):
        name, _, body = data.split(b"\n", 2)
        path.write_bytes(_entry(*edit(name, json.loads(body))))
    return how


HAND_PICKED = {
    "empty": lambda p, d: p.write_bytes(b""),
    "truncated": lambda p, d: p.write_bytes(d[: len(d) // 2]),
    "one byte changed": lambda p, d: p.write_bytes(d[:-3] + bytes([d[-3] ^ 1]) + d[-2:]),
    "not utf-8": lambda p, d: p.write_bytes(b"\xff\xfe" + d),
    "NUL bytes": lambda p, d: p.write_bytes(d.replace(b",", b"\0,", 1)),
    "a digit of a number changed": lambda p, d: p.write_bytes(d.replace(b"1", b"2", 1) if b"1" in d else b""),
    "another name": _forged(lambda n, v: (b"0" * 64, v)),
    "no name": lambda p, d: p.write_bytes(d.split(b"\n", 1)[1]),
    "a list": _forged(lambda n, v: (n, [v])),
    "value a number": _forged(lambda n, v: (n, 7)),
    "value an unknown tag": _forged(lambda n, v: (n, {"pickle": "gASVBQAAAAAAAACMAXiULg=="})),
    "a class not named": _forged(lambda n, v: (n, [{"dataclass": ["Path", {"x": 1}]}])),
    "deeply nested": _forged(lambda n, v: (n, b"[" * 100_000 + b"]" * 100_000)),
    "a pickle": lambda p, d: p.write_bytes(pickle.dumps(7)),
    "a folder": lambda p, d: p.mkdir(),
    "a pipe": lambda p, d: os.mkfifo(p),
    "a dangling link": lambda p, d: p.symlink_to(p.with_name("absent")),
    "a link to itself": lambda p, d: p.symlink_to(p),
    "no read permission": lambda p, d: (p.write_bytes(d), p.chmod(0)),
}


# The fast tier's few; the rest in the full suite.
FAST = ("one byte changed", "another name", "value a number", "a pickle", "a link to itself")


@pytest.mark.parametrize("how", [h if h in FAST else pytest.param(h, marks=pytest.mark.slow) for h in HAND_PICKED])
def test_a_spoiled_entry_is_built_again(how, made, tmp_path, capsys):
    root, entries, _ = made
    _spoil(tmp_path / "cache", entries, HAND_PICKED[how])
    assert _call(tmp_path / "cache", root / "qrels", root / "run", capsys) == EXPECTED


def test_another_calls_entries_swapped_in_are_not_taken(made, tmp_path, capsys):
    root, entries, others = made
    for i, other in enumerate(others):
        folder = tmp_path / f"cache{i}"
        _spoil(folder, entries, lambda p, d, other=other: p.write_bytes(other))
        assert _call(folder, root / "qrels", root / "run", capsys) == EXPECTED


@st.composite
def spoilers(draw, entries: dict, others: list):
    """For each entry: leave it, or put bytes, a cut, a flipped byte, one of its lines replaced, another call's
    entry, or another kind's entry in its place. (An entry forged with its right name and a matching digest is
    the caller's own doing, as editing the package's code would be: the hand-picked cases check only that one
    holding a value of the wrong shape is not used.)"""
    plans = {}
    for relative, data in entries.items():
        kind = draw(st.sampled_from(["keep", "bytes", "cut", "flip", "edit", "other", "kind"]))
        if kind == "keep":
            new = data
        elif kind == "bytes":
            new = draw(st.binary(max_size=64))
        elif kind == "cut":
            new = data[: draw(st.integers(0, len(data) - 1))]
        elif kind == "flip":
            at = draw(st.integers(0, len(data) - 1))
            new = data[:at] + bytes([data[at] ^ draw(st.integers(1, 255))]) + data[at + 1:]
        elif kind == "edit":
            name, digest, body = data.split(b"\n", 2)
            part = draw(st.sampled_from(["name", "digest", "body"]))
            junk = draw(st.binary(max_size=16))
            new = b"\n".join([junk if part == "name" else name, junk if part == "digest" else digest,
                              junk if part == "body" else body])
        elif kind == "other":
            new = draw(st.sampled_from(others))
        else:
            new = draw(st.sampled_from([d for r, d in entries.items() if r != relative]))
        plans[relative] = new
    return plans


@pytest.mark.slow
def test_whatever_the_entries_hold_the_numbers_are_right(made, tmp_path_factory, capsys):
    root, entries, others = made

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(spoilers(entries, others))
    def check(plans):
        folder = tmp_path_factory.mktemp("spoiled") / "cache"
        _spoil(folder, entries, lambda p, d: p.write_bytes(plans[p.relative_to(folder)]))
        assert _call(folder, root / "qrels", root / "run", capsys) == EXPECTED
        # What the call read or built is then right for the next call, too.
        assert _call(folder, root / "qrels", root / "run", capsys) == EXPECTED

    check()


def test_the_cache_folder_is_used_after_all(made, tmp_path, capsys):
    """The cases above are not passing because nothing is read: untouched entries are read, and not rewritten."""
    root, entries, _ = made
    _spoil(tmp_path / "cache", entries, lambda p, d: p.write_bytes(d))
    stamps = {p: p.stat().st_mtime_ns for p in (tmp_path / "cache").glob("*/*.entry")}
    assert _call(tmp_path / "cache", root / "qrels", root / "run", capsys) == EXPECTED
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "cache").glob("*/*.entry")} == stamps
    assert caches.cache_folder() is not None
