"""`sqlmetrics trec_eval`: trec_eval's own test commands (its Makefile's `quicktest`), with only the program
name changed, print exactly trec_eval's bytes: trec_eval 10.0's suite by default, 9.0.8's under
--compat trec_eval-9.0.8 (the suites and the command behind each file: ../shared/data/trec_eval*_test).
"""
import json
import math
from pathlib import Path

import pytest

V10, V9 = "trec_eval-10.0", "trec_eval-9.0.8"

PARAMS = "-q -miprec_at_recall..10,.20,.25,.75,.50 -m P.5,7,3 -m recall.20,2000 -m Rprec_mult.5.0,0.2,0.35 " \
         "-mutility.2,-1,0,0 -m 11pt_avg..25,.5,.75 -mndcg.1=3,2=9,4=4.5 -mndcg_cut.10,20,23.4 -msuccess.2,5,20 " \
         "qrels.test results.test"
# Every command of both Makefiles: (suite, expected file, the arguments after the program name).
COMMANDS = [
    (V10, "out.test", "qrels.test results.test"),
    (V10, "out.test", "qrels.test.with-comments results.test"),
    (V10, "out.comment.test", "qrels.comment.test results.comment.test"),
    (V10, "out.test.prefs", "-m all_prefs -q -R prefs prefs.test prefs.results.test"),
    (V10, "out.test.prefs", "-m all_prefs -q -R prefs prefs.comment.test prefs.results.test"),
    (V10, "out.test.qrels_prefs", "-m all_prefs -q -R qrels_prefs qrels.test results.test"),
    (V10, "out.test.qrels_jg", "-m qrels_jg -q -R qrels_jg qrels.123 results.test"),
    (V10, "out.test.qrels_jg", "-m qrels_jg -q -R qrels_jg qrels.comments.123 results.test"),
    (V10, "out.test.aqZ", "-q -m all_trec -Z zscores_file qrels.test results.test"),
    (V9, "out.test", "qrels.test results.test"),
] + [(suite, expected, args) for suite in (V10, V9) for expected, args in [
    ("out.test.a", "-m all_trec qrels.test results.test"),
    ("out.test.aq", "-m all_trec -q qrels.test results.test"),
    ("out.test.aqc", "-m all_trec -q -c qrels.test results.trunc"),
    ("out.test.aqcM", "-m all_trec -q -c -M100 qrels.test results.trunc"),
    ("out.test.aql", "-m all_trec -mrelstring.20 -q -l2 qrels.rel_level results.test"),
    ("out.test.meas_params", PARAMS),
]]


def _folder(suite, trec_eval_dir, trec_eval_10_dir):
    return trec_eval_10_dir if suite == V10 else trec_eval_dir


def _run(cli, folder, suite, args):
    paths = [str(folder / a) if (folder / a).exists() else a for a in args.split()]
    code, out, err = cli("trec_eval", "--compat", suite, *paths)
    assert code == 0, err
    return out


# The fast suite runs every command of 10.0's suite (the default) but its qrels_prefs (3 s: the preferences of
# every pair of qrels.test's judged documents; out.test.prefs and out.test.qrels_jg are the fast preference
# cases), its plain all_trec with and without -q (out.test.a, out.test.aq: the fast suite has all_trec -q with -c,
# -c -M100, -l2 and -Z, and 9.0.8's out.test.aq) and the second copies of its inputs with comments
# (out.comment.test is the fast case of comments), and 9.0.8's out.test and out.test.aq; the full suite every
# command of both.
V9_FAST = ("out.test", "out.test.aq")
V10_SLOW = ("out.test.qrels_prefs", "out.test.aq", "out.test.a")
COMMENTED_COPIES = ("qrels.test.with-comments", "prefs.comment.test", "qrels.comments.123")


def _slow(command) -> bool:
    if command[0] == V9:
        return command[1] not in V9_FAST
    return command[1] in V10_SLOW or any(name in command[2].split() for name in COMMENTED_COPIES)


@pytest.mark.parametrize("suite,expected,args", [
    pytest.param(*command, marks=[pytest.mark.slow] if _slow(command) else []) for command in COMMANDS])
def test_trec_eval_command(cli, suite, expected, args, trec_eval_dir, trec_eval_10_dir):
    folder = _folder(suite, trec_eval_dir, trec_eval_10_dir)
    assert _run(cli, folder, suite, args) == (folder / expected).read_text()


def test_the_versions_differ_where_trec_eval_did(cli, trec_eval_dir, trec_eval_10_dir):
    """Interpolated precision's rounding: each suite's numbers come only from its own version."""
    args = "-m iprec_at_recall qrels.test results.test"
    v10 = _run(cli, trec_eval_10_dir, V10, args)
    v9 = _run(cli, trec_eval_dir, V9, args)
    assert v10 != v9
    assert _run(cli, trec_eval_10_dir, V9, args) == v9  # same inputs in both folders


def test_flags(cli, trec_eval_10_dir, tmp_path):
    qrels, run = trec_eval_10_dir / "qrels.test", trec_eval_10_dir / "results.test"
    code, out, _ = cli("trec_eval", "-n", "-q", "-m", "P.5", qrels, run)
    assert code == 0 and "\tall\t" not in out and out.count("P_5") == 3  # -n: no summary
    code, out, _ = cli("trec_eval", "-v")
    assert code == 0 and "trec_eval" in out
    code, out, _ = cli("trec_eval", "-h", "-m", "ndcg_cut.10")
    assert code == 0 and "ndcg_cut" in out and "DCG" in out
    code, _, err = cli("trec_eval", "-m", "P.x", qrels, run)
    assert code == 2 and "P.x" in err
    code, _, err = cli("trec_eval", "-m", "nonsense", qrels, run)
    assert code == 2 and "'nonsense' is not a trec_eval measure" in err
    code, _, err = cli("trec_eval", "-R", "other", qrels, run)
    assert code == 2 and "qrels_jg" in err
    code, _, err = cli("trec_eval", "-T", "other", qrels, run)
    assert code == 2 and "trec_results" in err
    code, _, err = cli("trec_eval", qrels)
    assert code == 2 and "two files" in err
    bad = tmp_path / "z.txt"
    bad.write_text("301 map 0.1\n")
    code, _, err = cli("trec_eval", "-Z", bad, qrels, run)
    assert code == 2 and "line 1" in err


def test_collection_size_flag(cli, tmp_path):
    """-N N: utility's d term is d * (N + rel_ret - num_ret - R), as trec_eval's m_utility.c computes it. q1 ranks
    d1 d2 d5 d3 with d1, d3, d4 relevant: rel_ret 2, num_ret 4, R 3. q2 (judged, not ranked; -c) is ranked by
    trec_eval 10.0 as one document the qrels lack (trec_eval.c's bogus ranking): rel_ret 0, num_ret 1."""
    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 0\nq1 0 d3 2\nq1 0 d4 1\nq2 0 d9 1\n")
    run.write_text("q1 Q0 d1 1 0.9 r\nq1 Q0 d2 2 0.8 r\nq1 Q0 d5 3 0.7 r\nq1 Q0 d3 4 0.6 r\n")
    def lines(*args):
        code, out, _ = cli("trec_eval", *args, "-m", "utility.1,-1,0,0.5", qrels, run)
        assert code == 0
        return [tuple(field.strip() for field in line.split("\t")) for line in out.splitlines()]

    u = "utility_1,-1,0,0.5"
    # 1*2 - 1*(4 - 2) + 0 + 0.5*(100 + 2 - 4 - 3) = 47.5. Without -c, 10.0 stops at q2 (judged, not ranked):
    # 9.0.8 (the same utility) skips it.
    assert lines("-q", "-N", "100", "--compat", V9) == [(u, "q1", "47.5000"), (u, "all", "47.5000")]
    # q2: -1*1 + 0.5*(100 + 0 - 1 - 1) = 48, mean 47.75. Without -N, N = 0: q1 2 - 2 + 0.5*(-5), q2 -1 + 0.5*(-2) =
    # -2, mean -2.25. (Values of trec_eval 10.0; utility without coefficients prints 0 for q2: the plain name alone
    # is reset there.)
    assert lines("-c", "-N", "100") == [(u, "all", "47.7500")]
    assert lines("-c") == [(u, "all", "-2.2500")]
    code, out, _ = cli("trec_eval", "-c", "-q", "-m", "utility", qrels, run)
    assert code == 0 and out.splitlines()[1] == "utility               \tq2\t0.0000"
    # -J drops that document (it has no judgment): q2 is an empty ranking, 0.5*(100 + 0 - 0 - 1) = 49.5; q1 loses
    # the unjudged d5: 2 - 1 + 0.5*(100 + 2 - 3 - 3) = 49.
    assert lines("-c", "-J", "-N", "100") == [(u, "all", "49.2500")]
    assert lines("-c", "-N", "100", "--compat", "trec_eval-9.0.8") == [(u, "all", "23.7500")]  # 9.0.8: q2 is 0
    code, _, err = cli("trec_eval", "-N", "-1", "-m", "utility", qrels, run)
    assert code == 2 and "-N" in err


def test_eval_takes_trec_eval_measure_syntax(cli, trec_eval_10_dir):
    """`sqlmetrics eval -m P.5,7,3 -m official` asks for what trec_eval would compute (each once), and -c."""
    folder = trec_eval_10_dir
    code, out, err = cli("eval", folder / "qrels.test", folder / "results.test", "-m", "P.5,7,3", "-m", "official",
                         "-m", "iprec_at_recall..10,.25", "-c", "--queries", "intersection", "-f", "trec",
                         "--compat", V10)
    assert code == 0, err
    ours = {line.split("\t")[0].strip(): line.split("\t")[2] for line in out.splitlines() if "\tall\t" in line}
    for expected, names in (("out.test.meas_params", ["P_3", "P_5", "P_7", "iprec_at_recall_0.10",
                                                      "iprec_at_recall_0.25"]), ("out.test", ["map", "gm_map", "P_1000"])):
        printed = {line.split("\t")[0].strip(): line.split("\t")[2] for line in
                   (folder / expected).read_text().splitlines() if "\tall\t" in line}
        assert {n: ours[n] for n in names} == {n: printed[n] for n in names}
    assert list(ours).count("P_5") == 1
    code, out, err = cli("eval", folder / "qrels.test", folder / "results.test", "-m", "all_trec", "-f", "json")
    assert code == 0, err
    assert '"Rndcg"' in out and '"Unjudged@5"' in out  # 10.0's all_trec, the default everywhere
    code, out, err = cli("eval", folder / "qrels.test", folder / "results.test", "-m", "all_trec", "-f", "json",
                         "--compat", "trec_eval-9.0.8")
    assert code == 0, err
    assert '"Rndcg"' in out and '"Unjudged@5"' not in out  # 9.0.8's all_trec


def test_depth_cuts_before_judged_only_drops(cli):
    """trec_eval -M2 -J: the cut at 2 leaves d2, d3 (both unjudged), then -J drops them (form_res_rels.c)."""
    Path("q.txt").write_text("q1 0 d1 1\nq1 0 d5 0\n")
    Path("r.txt").write_text("q1 Q0 d2 1 4.0 t\nq1 Q0 d3 2 3.0 t\nq1 Q0 d1 3 2.0 t\nq1 Q0 d5 4 1.0 t\n")
    for compat in ("trec_eval-9.0.8", "trec_eval-10.0"):
        code, out, err = cli("trec_eval", "--compat", compat, "-M2", "-J", "-m", "num_ret", "-m", "P.2", "q.txt", "r.txt")
        assert code == 0 and out == "num_ret               \tall\t0\nP_2                   \tall\t0.0000\n", err


def test_set_F_prints_trec_evals_digit_on_a_boundary(cli):
    """1 hit in 20 ranked, 44 relevant: F = 2PR/(P+R) is 0.03125 exactly, and trec_eval's operation order gives
    0.03125000000000001, which it prints as 0.0313 (the simplified 2*hits/(num_rel+n) printed 0.0312)."""
    Path("q.txt").write_text("".join(f"q1 0 r{i} 1\n" for i in range(44)))
    Path("r.txt").write_text("q1 Q0 r0 1 100 t\n" + "".join(f"q1 Q0 x{i} {i + 2} {99 - i} t\n" for i in range(19)))
    code, out, err = cli("trec_eval", "-m", "set_F", "-m", "set_P", "-m", "set_recall", "q.txt", "r.txt")
    assert code == 0 and out.splitlines()[0] == "set_P                 \tall\t0.0500", out
    assert "set_F                 \tall\t0.0313" in out, out


def test_rbp_prints_trec_eval_10s_digit_on_a_boundary(cli):
    """trec_eval 10.0's rbp (p = 0.9, grades over the query's highest, 2): d3 and d4 gain 1/2 at ranks 3 and 4, so
    RBP = (1 - 0.9) * (0.5 * 0.81 + 0.5 * 0.729) = 0.07695 exactly; in doubles, as trec_eval computes it, 1 - 0.9 is
    0.09999999999999998 and the value 0.07694999999999999, printed 0.0769 (with p a decimal literal, 1 - 0.9 was
    exactly 0.1 and the value printed 0.0770; found on 2 of the bench's 7,000 queries)."""
    Path("q.txt").write_text("q1 0 d3 1\nq1 0 d4 1\nq1 0 d9 2\n")
    Path("r.txt").write_text("".join(f"q1 Q0 d{i} {i} {10 - i} t\n" for i in range(1, 5)))
    code, out, err = cli("trec_eval", "--compat", "trec_eval-10.0", "-m", "rbp", "q.txt", "r.txt")
    assert code == 0 and out == "rbp                   \tall\t0.0769\n", (out, err)


# Where a script would notice, `sqlmetrics trec_eval` exits as trec_eval does (trec_eval.c of 10.0 and 9.0.8):
# 10.0 walks the qrels' queries and stops at one the run does not rank unless -c (exit 4, "result qid ... not
# found in qrels"); 9.0.8 walked the run's and skipped it. Both exit 4 on a repeated document ("Can't calculate
# measure"); both quit reading an empty run (exit 2), and 9.0.8 stops when no query of the run is judged (exit 7).
@pytest.mark.parametrize("compat, qrels, run, flags, status, says", [
    (V10, "q1 0 d1 1\nq2 0 d1 1\n", "q1 Q0 d1 1 1.0 t\n", [], 4, "judged query 'q2' has no ranking"),
    (V10, "q1 0 d1 1\nq2 0 d1 1\n", "q1 Q0 d1 1 1.0 t\n", ["-c"], 0, ""),
    (V9, "q1 0 d1 1\nq2 0 d1 1\n", "q1 Q0 d1 1 1.0 t\n", [], 0, ""),
    (V10, "q1 0 d1 1\n", "q1 Q0 d1 1 2.0 t\nq1 Q0 d1 2 1.0 t\n", [], 4, "appears more than once"),
    (V9, "q1 0 d1 1\n", "q1 Q0 d1 1 2.0 t\nq1 Q0 d1 2 1.0 t\n", [], 4, "appears more than once"),
    (V10, "q1 0 d1 1\n", "", [], 2, "is empty"),
    # With -J a ranked query may keep no document: the judged queries are then read from the qrels themselves.
    (V10, "q1 0 d1 1\nq2 0 d1 1\n", "q1 Q0 d1 1 1.0 t\n", ["-J"], 4, "judged query 'q2' has no ranking"),
    (V10, "q1 0 d1 1\nq2 0 d1 1\n", "q1 Q0 d9 1 1.0 t\nq2 Q0 d1 1 1.0 t\n", ["-J"], 0, ""),
    (V10, "q1 0 d1 1\n", "", ["-J"], 2, "is empty"),
    # 9.0.8 walks the run's queries: when none is judged it stops (exit 7), -c or not. An empty run file stops both
    # versions reading it (exit 2), -c or not.
    (V9, "q1 0 d1 1\n", "q9 Q0 d1 1 1.0 t\n", [], 7, "ranks no query of the qrels"),
    (V9, "q1 0 d1 1\n", "\n \n", ["-c"], 7, "ranks no query of the qrels"),
    (V9, "q1 0 d1 1\n", "", ["-c"], 2, "is empty"),
    (V10, "q1 0 d1 1\n", "", ["-c"], 2, "is empty"),
    # trec_eval (both) stops at the first query it evaluates when it has no judgment graded 0 or more (its table of
    # grade counts has size 0: form_res_rels.c); a later one reuses the table before it (P_1: q1 1, q2 0).
    (V10, "q1 0 d1 -1\nq2 0 d1 1\n", "q1 Q0 d1 1 1.0 t\nq2 Q0 d1 1 1.0 t\n", [], 4, "no judgment graded 0 or more"),
    (V9, "q1 0 d1 -1\nq2 0 d1 1\n", "q1 Q0 d1 1 1.0 t\nq2 Q0 d1 1 1.0 t\n", ["-c"], 4, "no judgment graded 0"),
    (V10, "q1 0 d1 1\nq2 0 d1 -1\n", "q1 Q0 d1 1 1.0 t\nq2 Q0 d1 1 1.0 t\n", [], 0, ""),
    # Every rel_info line is data to trec_eval (get_qrels.c): a blank one, or one of whitespace, is "Malformed line".
    (V10, "q1 0 d1 1\n\nq1 0 d2 0\n", "q1 Q0 d1 1 1.0 t\n", [], 2, "line 2: blank"),
    (V9, "q1 0 d1 1\n \t\r\n", "q1 Q0 d1 1 1.0 t\n", [], 2, "line 2: blank"),
])
def test_exit_statuses_are_trec_evals(cli, compat, qrels, run, flags, status, says):
    Path("q.txt").write_text(qrels)
    Path("r.txt").write_text(run)
    code, out, err = cli("trec_eval", "--compat", compat, *flags, "-m", "P.1", "q.txt", "r.txt")
    assert code == status and says in err, err
    assert (out == "") == (status != 0)


@pytest.mark.parametrize("suite", [V10, V9])
def test_complete_num_rel_summary_is_trec_evals_recount(cli, trec_eval_dir, suite):
    """trec_eval's quirk (m_num_rel.c): with -c the summary num_rel counts the qrels lines graded above 0,
    ignoring -l; the per-query values, and the summary without -c, count the documents at the level."""
    qrels = trec_eval_dir / "qrels.rel_level"
    graded = sum(int(line.split()[3]) > 0 for line in qrels.read_text().splitlines() if line.strip())
    args = ["trec_eval", "--compat", suite, "-q", "-l2", "-m", "num_rel", str(qrels), str(trec_eval_dir / "results.test")]
    for complete in (True, False):
        code, out, err = cli(*args[:3], *(["-c"] if complete else []), *args[3:])
        assert code == 0, err
        rows = [line.split("\t") for line in out.splitlines()]
        per_query = sum(int(v) for _, q, v in rows if q != "all")
        (summary,) = [int(v) for _, q, v in rows if q == "all"]
        assert summary == (graded if complete else per_query) and graded != per_query


# trec_eval's run reader (get_trec_results.c, both versions) splits lines at \n alone and fields at C's whitespace
# (space, \t, \v, \f, \r); a line of whitespace alone is skipped.
@pytest.mark.parametrize("suite", [V10, V9])
def test_blank_run_lines_are_skipped_as_trec_eval_skips_them(cli, trec_eval_dir, trec_eval_10_dir, suite):
    folder = _folder(suite, trec_eval_dir, trec_eval_10_dir)
    lines = (folder / "results.test").read_bytes().split(b"\n")
    lines[3:3] = [b"  \t ", b"", b"\x0b\x0c\r"]
    lines[20] += b"\r"  # one CRLF line among LF ones
    Path("odd.run").write_bytes(b"\n".join(lines))
    code, out, err = cli("trec_eval", "--compat", suite, folder / "qrels.test", "odd.run")
    assert code == 0 and out == (folder / "out.test").read_text(), err


@pytest.mark.parametrize("suite", [V10, V9])
def test_vertical_tabs_and_form_feeds_split_fields(cli, suite):
    """\\v and \\f are whitespace to trec_eval (C's isspace) as a space or a tab, in the qrels and the run (RE2's \\s
    has no \\v): d2 (grade 0) ranks above d1 (1), so P_2 = 1/2 and relstring '01'. A NUL byte, on which trec_eval
    aborts, is refused naming the line."""
    Path("q.txt").write_bytes(b"q1\v0\fd1  1 \r\nq1 0 d2\t0\n")
    Path("r.txt").write_bytes(b"q1\fQ0\vd2 1 3 t\t\nq1 Q0 d1 2 2 t\n")
    code, out, err = cli("trec_eval", "--compat", suite, "-q", "-m", "P.2", "-m", "relstring.2", "q.txt", "r.txt")
    assert code == 0 and out == _lines(("P_2", "q1", "0.5000"), ("relstring_2", "q1", "'01'"), ("P_2", "all", "0.5000"))
    Path("r.txt").write_bytes(b"q1 Q0 d1 1 2 t\nq1 Q0 d2 2 1\0 t\n")
    code, out, err = cli("trec_eval", "--compat", suite, "q.txt", "r.txt")
    assert code == 2 and "'r.txt', line 2" in err and "NUL" in err and out == ""


@pytest.mark.parametrize("suite", [V10, V9])
def test_carriage_returns_and_the_tag_are_read_as_trec_eval_reads_them(cli, suite):
    """A lone \\r is whitespace within its line (one line here: its first 6 fields count, the rest is ignored), and
    the tag trec_eval prints is the last line's (each line's replaces the one before)."""
    Path("q.txt").write_text("q1 0 d1 1\nq1 0 d2 1\n")
    expected = "runid                 \tall\t{}\nnum_ret               \tall\t{}\nP_2                   \tall\t{}\n"
    for run, printed in ((b"q1 Q0 d1 1 2.0 r\rq1 Q0 d2 2 1.0 r\n", ("r", 1, "0.5000")),
                         (b"q1 Q0 d1 1 2.0 first\r\nq1 Q0 d2 2 1.0 last\n\n", ("last", 2, "1.0000"))):
        Path("r.txt").write_bytes(run)
        code, out, err = cli("trec_eval", "--compat", suite, "-m", "runid", "-m", "num_ret", "-m", "P.2", "q.txt", "r.txt")
        assert code == 0 and out == expected.format(*printed), err


def _lines(*rows) -> str:
    return "".join(f"{name:<22}\t{q}\t{value}\n" for name, q, value in rows)


@pytest.mark.parametrize("suite", [V10, V9])
def test_depth_zero_evaluates_empty_rankings(cli, suite):
    """trec_eval -M0 cuts every ranking to nothing (form_res_rels.c: num_results = 0) and evaluates it: num_ret 0,
    map 0, num_rel as judged, utility.1,-1,2,0 = 2 * the relevant documents not retrieved (q1 4, q2 2). q3 is not
    judged. A negative -M crashes trec_eval: refused."""
    Path("q.txt").write_text("q1 0 d1 1\nq1 0 d2 1\nq2 0 d1 1\n")
    Path("r.txt").write_text("q1 Q0 d8 1 2.0 r\nq2 Q0 d1 1 1.0 r\nq3 Q0 d1 1 1.0 r\n")
    code, out, err = cli("trec_eval", "--compat", suite, "-M0", "-q", "-m", "num_ret", "-m", "num_rel", "-m", "map",
                         "-m", "utility.1,-1,2,0", "q.txt", "r.txt")
    u = "utility_1,-1,2,0"
    assert code == 0 and out == _lines(
        ("num_ret", "q1", 0), ("num_rel", "q1", 2), ("map", "q1", "0.0000"), (u, "q1", "4.0000"),
        ("num_ret", "q2", 0), ("num_rel", "q2", 1), ("map", "q2", "0.0000"), (u, "q2", "2.0000"),
        ("num_ret", "all", 0), ("num_rel", "all", 3), ("map", "all", "0.0000"), (u, "all", "3.0000")), err
    code, out, err = cli("trec_eval", "--compat", suite, "-M", "-1", "q.txt", "r.txt")
    assert code == 2 and "-M" in err and out == ""


@pytest.mark.parametrize("suite", [V10, pytest.param(V9, marks=pytest.mark.slow)])
def test_an_emptied_ranking_prints_trec_evals_nan_for_interpolated_precision(cli, suite):
    """-M2 keeps q1's unjudged dx, dy and -J drops them: q1's ranking is empty and evaluated. trec_eval's interpolated
    precision starts there from num_rel_ret / num_ret = 0 / 0, printed -nan, at every recall point needing no
    relevant document (R = 1: 10.0 rounds r to 0 up to 0.4; 9.0.8's r + 0.9 truncates to 0 at 0.0 alone), so
    11pt_avg too, and the means over q1 and q2 (1.0000) are -nan as well. `eval` gives q1 the plain 0."""
    Path("q.txt").write_text("1 0 d1 1\n1 0 d2 0\n2 0 d1 1\n")
    Path("r.txt").write_text("1 Q0 dx 1 3 t\n1 Q0 dy 2 2 t\n1 Q0 d1 3 1 t\n2 Q0 d1 1 1 t\n")
    code, out, err = cli("trec_eval", "--compat", suite, "-q", "-M2", "-J", "-m", "iprec_at_recall.0,0.4,0.5",
                         "-m", "11pt_avg", "q.txt", "r.txt")
    nan, zero, one = "  -nan", "0.0000", "1.0000"
    early, early_mean = (nan, nan) if suite == V10 else (zero, "0.5000")  # recall 0.4 of one relevant document
    names = ("iprec_at_recall_0.00", "iprec_at_recall_0.40", "iprec_at_recall_0.50")
    assert code == 0 and out == _lines(
        *zip(names, ["1"] * 3, [nan, early, zero]), ("11pt_avg", "1", nan),
        *zip(names, ["2"] * 3, [one] * 3), ("11pt_avg", "2", one),
        *zip(names, ["all"] * 3, [nan, early_mean, "0.5000"]), ("11pt_avg", "all", nan)), err
    # At -l 0 the R it needs is the count of judgments graded 0 or more, which the command reads anyway (once asked
    # for twice: "measure 'NumRel(rel=0)' is listed twice", found by a sweep against the binaries). R = 2 for q1.
    code, out, err = cli("trec_eval", "--compat", suite, "-q", "-M2", "-J", "-l", "0", "-m", "iprec_at_recall.0.2",
                         "q.txt", "r.txt")
    assert code == 0 and out.splitlines()[0] == "iprec_at_recall_0.20  \t1\t" + (nan if suite == V10 else zero), out
    code, out, err = cli("eval", "-J", "--depth", "2", "-q", "-f", "trec", "-m", "iprec_at_recall.0", "q.txt", "r.txt")
    assert code == 0 and "iprec_at_recall_0.00  \t1\t0.0000" in out, (out, err)


@pytest.mark.parametrize("suite", [V10, pytest.param(V9, marks=pytest.mark.slow)])
def test_rndcg_without_a_positive_gain_prints_trec_evals_nan(cli, suite):
    """m_Rndcg.c averages nDCG over the R levels where the ideal DCG is positive and divides by their count: at
    -l 0, q1's only judgment is graded 0 (relevant there, R = 1, but no positive gain), so 0 / 0, -nan, and the mean
    with it; q2 has a positive gain and retrieves nothing relevant: 0. `eval` gives q1 the plain 0."""
    Path("q.txt").write_text("1 0 d5 0\n2 0 d2 1\n2 0 d4 0\n")
    Path("r.txt").write_text("1 Q0 d3 0 1 t\n1 Q0 d5 1 2.5 t\n2 Q0 x2 3 2.5 t\n")
    code, out, err = cli("trec_eval", "--compat", suite, "-q", "-l", "0", "-m", "Rndcg", "q.txt", "r.txt")
    assert code == 0 and out == _lines(("Rndcg", "1", "  -nan"), ("Rndcg", "2", "0.0000"), ("Rndcg", "all", "  -nan")), err
    code, out, err = cli("eval", "-l", "0", "-q", "-f", "trec", "-m", "Rndcg", "q.txt", "r.txt")
    assert code == 0 and "Rndcg                 \t1\t0.0000" in out, (out, err)


def test_9_with_c_evaluates_an_emptied_ranking_but_not_a_missing_query(cli):
    """9.0.8 -c: q3, judged but missing from the run, is not evaluated (0); q1, whose only ranked documents -J
    drops, is evaluated as an empty ranking: utility.1,-1,2,0 = 2 R = 2 and yaap ln(1 / (1 + R)) = -ln 2 (once 0,
    found by a sweep against the binary). q2, judged d4 (0) and d1 (1), ranks d3, d4, d1, d5; -J leaves d4, d1:
    utility 1 - 1 = 0, yaap ln((1 + 1/2) / (1 + 1 - 1/2)) = 0. Means over the three judged queries."""
    Path("q.txt").write_text("1 0 d5 1\n2 0 d4 0\n2 0 d1 1\n3 0 d1 1\n")
    Path("r.txt").write_text("1 Q0 d1 0 5 t\n1 Q0 d2 1 3 t\n2 Q0 d5 0 2.5 t\n2 Q0 d1 1 3 t\n2 Q0 d3 2 5 t\n"
                             "2 Q0 d4 3 4 t\n")
    code, out, err = cli("trec_eval", "--compat", V9, "-c", "-q", "-J", "-m", "utility.1,-1,2,0", "-m", "yaap",
                         "q.txt", "r.txt")
    u, ln2 = "utility_1,-1,2,0", math.log(2)
    assert code == 0 and out == _lines(
        (u, "1", "2.0000"), ("yaap", "1", f"{-ln2:.4f}"), (u, "2", "0.0000"), ("yaap", "2", "0.0000"),
        (u, "all", f"{2 / 3:.4f}"), ("yaap", "all", f"{-ln2 / 3:.4f}")), err


def test_judged_only_empty_ranking_is_printed_and_scored_by_9(cli):
    """9.0.8 walks the run's queries: q1, whose only document -J drops, is evaluated as an empty ranking and printed
    (utility.1,-1,2,0: 2 * R = 4); q2 ranks its relevant d1 (1). The mean is (4 + 1) / 2."""
    Path("q.txt").write_text("q1 0 d1 1\nq1 0 d2 1\nq2 0 d1 1\n")
    Path("r.txt").write_text("q1 Q0 d8 1 2.0 r\nq2 Q0 d1 1 1.0 r\n")
    code, out, err = cli("trec_eval", "--compat", V9, "-q", "-J", "-m", "num_ret", "-m", "utility.1,-1,2,0",
                         "q.txt", "r.txt")
    u = "utility_1,-1,2,0"
    assert code == 0 and out == _lines(("num_ret", "q1", 0), (u, "q1", "4.0000"), ("num_ret", "q2", 1),
                                       (u, "q2", "1.0000"), ("num_ret", "all", 1), (u, "all", "2.5000")), err


# trec_eval's reading of a negative -l (form_res_rels.c, both versions): a ranked document the qrels lack is listed at
# -1 and one graded below 0 at -2; the rank-by-rank measures count every listed document at the level or above as
# relevant, while R (num_rel) and num_rel_ret count the judged documents graded 0 or more. q1 ranks d5 (no qrels row:
# -1), d1 (1), d3 (-1: -2), d2 (0); R = 3 (d1, d2, d4). At -l -1 ranks 1, 2 and 4 count: map (1/1 + 2/2 + 3/4) / 3 =
# 0.9167, Rprec 2/3, P_5 3/5, recip_rank 1; bpref counts the judged d1, d2 (2/3). Interpolated precision counts down
# from the 2 judged relevant retrieved, less the 1 unjudged counted: 1 relevant at rank 2, 2 at rank 4, so 0.5000
# wherever r*R rounds to 2 or less (10.0: r <= 0.8; 9.0.8, r*R + 0.9 truncated: r <= 0.7), else 0.
NEGATIVE_QRELS = "q1 0 d1 1\nq1 0 d2 0\nq1 0 d3 -1\nq1 0 d4 1\n"
NEGATIVE_RUN = "q1 Q0 d5 1 4 t\nq1 Q0 d1 2 3 t\nq1 Q0 d3 3 2 t\nq1 Q0 d2 4 1 t\n"


@pytest.mark.parametrize("suite", [V10, V9])
def test_negative_level_is_read_as_trec_eval_reads_it(cli, suite):
    Path("q.txt").write_text(NEGATIVE_QRELS)
    Path("r.txt").write_text(NEGATIVE_RUN)
    code, out, err = cli("trec_eval", "--compat", suite, "-l", "-1", "q.txt", "r.txt")
    iprec = [("iprec_at_recall_0.%d0" % i if i < 10 else "iprec_at_recall_1.00", "all",
              "0.5000" if i <= (8 if suite == V10 else 7) else "0.0000") for i in range(11)]
    precision = [(f"P_{k}", "all", f"{3 / k:.4f}") for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)]
    assert code == 0 and out == _lines(
        ("runid", "all", "t"), ("num_q", "all", 1), ("num_ret", "all", 4), ("num_rel", "all", 3),
        ("num_rel_ret", "all", 2), ("map", "all", "0.9167"), ("gm_map", "all", "0.9167"), ("Rprec", "all", "0.6667"),
        ("bpref", "all", "0.6667"), ("recip_rank", "all", "1.0000"), *iprec, *precision), err
    # At -l -2 every ranked document counts: map (1 + 1 + 1 + 1) / 3, Rprec 3/3; relstring: - for no qrels row.
    code, out, err = cli("trec_eval", "--compat", suite, "-l", "-2", "-q", "-m", "map", "-m", "Rprec", "-m",
                         "relstring.4", "q.txt", "r.txt")
    assert code == 0 and out == _lines(("map", "q1", "1.3333"), ("Rprec", "q1", "1.0000"), ("relstring_4", "q1", "'-1.0'"),
                                       ("map", "all", "1.3333"), ("Rprec", "all", "1.0000")), err


def test_a_measure_left_undefined_by_a_negative_level_is_an_error_naming_the_level(cli):
    """At -l -3 the unjudged d3 (trec_eval's -1) and the judged d1 are both relevant with R = 1: yaap's S = 1 + 2/2
    makes 1 + R - S = 0, and trec_eval prints inf. Once the error blamed an exponential gain the command lacks; the
    cause is the level (found by tests/test_fuzz_trec_eval.py)."""
    Path("q.txt").write_text("1 0 d1 0\n")
    Path("r.txt").write_text("1 Q0 d1 1 1 t\n1 Q0 d3 2 2 t\n")
    code, out, err = cli("trec_eval", "-l", "-3", "-m", "yaap", "q.txt", "r.txt")
    assert code == 2 and out == "" and err.splitlines()[-1] == (
        "sqlmetrics trec_eval: error: yaap has no finite value for query '1': it would be inf. -l -3 counts every "
        "judged document, and those trec_eval marks unjudged, as relevant, which leaves the measure undefined; use a "
        "relevance level of 0 or more."), err


def test_eval_reads_a_negative_level_plainly(cli):
    """`eval -l -1`: a grade >= -1 is relevant, d3's -1 too (it is a judgment), a document without one never: the
    relevant are d1, d3, d2 at ranks 2, 3, 4 and d4, R = 4, so AP = (1/2 + 2/3 + 3/4) / 4 and P@4 = 3/4."""
    Path("q.txt").write_text(NEGATIVE_QRELS)
    Path("r.txt").write_text(NEGATIVE_RUN)
    code, out, err = cli("eval", "-l", "-1", "-m", "AP", "-m", "P@4", "-m", "NumRel", "-f", "json", "q.txt", "r.txt")
    assert code == 0, err
    got = json.loads(out)["runs"]["r"]["aggregate"]
    assert got == pytest.approx({"AP": (1 / 2 + 2 / 3 + 3 / 4) / 4, "P@4": 0.75, "NumRel": 4})


@pytest.mark.parametrize("suite", [V10, V9])
def test_complete_z_scores_sum_what_trec_eval_evaluated(cli, suite):
    """-c -Z: q1 ranks its relevant d1 first (map 1, z (1 - 0.5) / 0.25 = 2; num_rel 1, z (1 - 1) / 0.5 = 0); q2 is not
    ranked. 10.0 evaluates it (map 0: z (0 - 0.2) / 0.1 = -2; num_rel 1: z -2) and averages both: Zmap (2 - 2) / 2;
    9.0.8 evaluates q1 alone and divides by the 2 judged queries: 2 / 2. Znum_rel's summary is trec_eval's recount
    under -c of the qrels lines graded above 0 (m_num_rel.c), 2, not a sum of z-scores."""
    Path("q.txt").write_text("q1 0 d1 1\nq1 0 d2 0\nq2 0 d1 1\n")
    Path("r.txt").write_text("q1 Q0 d1 1 2 t\nq1 Q0 d2 2 1 t\n")
    Path("z.txt").write_text("q1 map 0.5 0.25\nq2 map 0.2 0.1\nq1 num_rel 1 0.5\nq2 num_rel 3 1\n")
    code, out, err = cli("trec_eval", "--compat", suite, "-q", "-c", "-Z", "z.txt", "-m", "num_rel", "-m", "map",
                         "q.txt", "r.txt")
    q2 = [("num_rel", "q2", "-2.0000"), ("map", "q2", "-2.0000")] if suite == V10 else []
    rows = [("num_rel", "q1", "0.0000"), ("map", "q1", "2.0000"), *q2, ("num_rel", "all", "2.0000"),
            ("map", "all", "0.0000" if suite == V10 else "1.0000")]
    assert code == 0 and out == "".join("Z" + line for line in _lines(*rows).splitlines(True)), err  # Z, then the name


@pytest.mark.parametrize("suite", [V10, V9])
def test_measure_parameters_and_numbers_are_read_as_trec_eval_reads_them(cli, suite):
    """The first -m with parameters holds (meas_init.c takes the first it finds), a bare -m does not undo it; -m P.
    is refused (trec_eval: "improper measure in parameter"). A number past a C long is the nearest long (atol):
    utility.1,1,1,1 on q1 is 2 + (4 - 2) + (3 - 2) + (N + 2 - 4 - 3) = N = 2^63 - 1, printed as a double."""
    Path("q.txt").write_text("q1 0 d1 1\nq1 0 d2 0\nq1 0 d3 2\nq1 0 d4 1\n")
    Path("r.txt").write_text("q1 Q0 d1 1 0.9 r\nq1 Q0 d2 2 0.8 r\nq1 Q0 d5 3 0.7 r\nq1 Q0 d3 4 0.6 r\n")
    code, out, err = cli("trec_eval", "--compat", suite, "-m", "P.1", "-m", "P.2", "-m", "P", "q.txt", "r.txt")
    assert code == 0 and out == _lines(("P_1", "all", "1.0000")), err
    code, out, err = cli("trec_eval", "--compat", suite, "-m", "P.", "q.txt", "r.txt")
    assert code == 2 and "-m P." in err and out == ""
    code, out, err = cli("trec_eval", "--compat", suite, "-N", "99999999999999999999999", "-m", "utility.1,1,1,1",
                         "q.txt", "r.txt")
    assert code == 0 and out == _lines(("utility_1,1,1,1", "all", "9223372036854775808.0000")), err
