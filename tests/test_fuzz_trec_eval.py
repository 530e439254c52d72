"""Property: `sqlmetrics trec_eval` on odd qrels and runs (every whitespace trec_eval splits at, CRLF and lone carriage
returns, blank and comment lines, missing and extra fields, negative, huge and fractional grades, odd scores) and odd
flags (-l below 0 and huge, -M 0 and huge, -J, -c, -q, -n, -N, both versions) either prints well-formed trec_eval lines
and exits 0, or exits 2 (or trec_eval's own stops, 4 and 7) with one error line naming the file or the flag: never a
traceback, never an internal error (exit 1), never nan or inf. Whether the bytes are trec_eval's was checked against
the trec_eval binaries by hand (CI has none); tests/test_trec_eval_cli.py holds each difference found, with
trec_eval's bytes."""
import contextlib
import io
import os
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlmetrics.cli.main import main

SEP = st.sampled_from([" "] * 6 + ["\t", "  ", " \t", "\v", "\f", "\r"])
# A run's blank lines are skipped; the qrels' stop trec_eval (and this command), so they are rarer there.
RUN_END = st.sampled_from(["\n"] * 6 + ["\r\n", "\r", "\n\n", "\n \t\n"])
QRELS_END = st.sampled_from(["\n"] * 25 + ["\r\n"] * 4 + ["\n\n"])
QUERY = st.sampled_from(["1", "2", "10", "a", "#q"])
DOC = st.sampled_from(["d1", "d2", "d3", "d4", "d#"])
GRADE = st.sampled_from(["0", "1", "1", "2", "-1", "-2", "12"] * 6 + ["3.7", "x", "99999999999"])
SCORE = st.sampled_from(["1", "0.5", "0.5", "-2", "1e3", "2.25", "0"] * 6 + ["nan", "abc", "1_0"])
ODD_LINE = st.sampled_from(["", "   ", "\t", "# a comment", "  # indented comment", "1 0", "1 Q0 d1 1 2 t x y"])
LEVEL = st.sampled_from(["-3", "-2", "-1", "0", "1", "2", "99999"])
DEPTH = st.sampled_from(["0", "1", "2", "1000000", "0", "1", "2", "-1"])
MEASURES = st.sampled_from([[], ["-m", "all_trec"], ["-m", "P.1,2", "-m", "relstring.3", "-m", "ndcg_cut.2"],
                            ["-m", "utility.1,-1,2,0.5", "-m", "set_F", "-m", "yaap"], ["-m", "bpref", "-m", "infAP"]])
FLAGS = st.tuples(st.sets(st.sampled_from(["-q", "-c", "-J", "-n"])), st.none() | LEVEL, st.none() | DEPTH,
                  st.none() | st.sampled_from(["0", "50"]), MEASURES,
                  st.sampled_from(["trec_eval-10.0", "trec_eval-9.0.8"]))
# trec_eval's line: the name left-justified in 22 characters, the query, the value (a count, 4 decimals, a quoted
# relstring, trec_eval's -nan, or the run tag).
LINE = re.compile(r"^(\S+) *\t(\S+)\t(-?\d+|-?\d+\.\d{4}|'[^']*'|  -nan|\S+)$")
SETTINGS = settings(max_examples=int(os.environ.get("SQLMETRICS_FUZZ", "40")), deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def text_file(draw, fields: int, value, end):
    """Lines of `fields` fields (a few with one too few or too many), odd lines among them, odd separators and ends."""
    lines = []
    for query, doc in draw(st.lists(st.tuples(QUERY, DOC), min_size=1, max_size=8, unique=True)):
        if draw(st.integers(0, 19)) == 0:
            row = draw(ODD_LINE)
        else:
            row = [query, "Q0" if fields == 6 else "0", doc, *(["1", draw(value), "t"] if fields == 6
                                                                else [draw(value)])]
            if draw(st.integers(0, 24)) == 0:
                row = row[:-1] if draw(st.booleans()) else row + ["extra"]
            row = "".join(f + draw(SEP) for f in row[:-1]) + row[-1]
            row = draw(st.sampled_from(["", "", "", " ", "\t"])) + row
        lines.append(row + draw(end))
    return "".join(lines)


def _command(qrels: str, run: str, flags) -> tuple:
    switches, level, depth, size, measures, compat = flags
    argv = ["trec_eval", "--compat", compat, *sorted(switches), *measures]
    argv += [*(["-l", level] if level else []), *(["-M", depth] if depth else []), *(["-N", size] if size else [])]
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "q.txt").write_bytes(qrels.encode())
        Path(folder, "r.txt").write_bytes(run.encode())
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([*argv, str(Path(folder, "q.txt")), str(Path(folder, "r.txt"))])
    return code, out.getvalue(), err.getvalue()


@pytest.mark.slow  # hypothesis, 40 commands; test_trec_eval_cli.py has a fast case of each difference found
@SETTINGS
@given(qrels=text_file(4, GRADE, QRELS_END), run=text_file(6, SCORE, RUN_END), flags=FLAGS)
def test_trec_eval_prints_well_formed_lines_or_one_clear_error(qrels, run, flags):
    code, out, err = _command(qrels, run, flags)
    assert "Traceback" not in err and "internal error" not in err, err
    *warnings, last = err.splitlines() or [""]
    assert all(w.startswith("sqlmetrics: warning: ") for w in warnings), err
    if code == 0:
        assert not last or last.startswith("sqlmetrics: warning: "), err
        assert out or "-n" in flags[0], "exit 0 with nothing printed"  # -n alone prints nothing, as trec_eval
        # trec_eval's -nan (test_trec_eval_cli.py): an emptied ranking's interpolated precision; Rndcg at a level
        # where a relevant document may have no positive gain.
        nan_of = (("iprec_at_recall", "11pt_avg") if "-J" in flags[0] or flags[2] == "0" else ()) + (
            ("Rndcg",) if int(flags[1] or 1) <= 0 else ())
        for line in out.splitlines():
            name, query, value = LINE.match(line).groups()
            assert len(line.split("\t")[0]) >= 22, line
            assert not re.search(r"nan|inf", value, re.I) or value == "  -nan" and name.startswith(nan_of), line
        return
    assert code in (2, 4, 7), (code, err)
    assert out == "" and last.startswith("sqlmetrics trec_eval: error: "), (out, err)
    # The file at fault (and its line, where one is), or the flag.
    assert re.search(r"[qr]\.txt|-M|-l|-N", last), last
