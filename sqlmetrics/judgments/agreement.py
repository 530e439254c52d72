"""How far two judgment sets agree on the (query, document) pairs both judged: Cohen's κ (unweighted, linear,
quadratic; as scikit-learn's cohen_kappa_score), Krippendorff's α for two coders (nominal, ordinal, interval; as the
krippendorff package), the observed agreement and the confusion table, overall and per query.

The inputs are read once: one FULL OUTER JOIN on (query, doc) grouped to counts per (query, label in a, label in b)
(sqlm_agree_pairs, at most queries × (labels + 1)² rows however many judgments there are). Every statistic is then
exact integer arithmetic (HUGEINT) on those counts, in one statement, divided once at the end: κ and α as
1 − observed disagreement / expected disagreement, the expected sums from each side's label counts by moments
(quadratic, interval, ordinal) or cumulative counts (linear), never a labels × labels cross product.

A negative grade (TREC's 'unjudged', e.g. -1) counts as not judged on that side."""
from __future__ import annotations

import dataclasses
import shutil

import duckdb

from ..errors import SqlmetricsError
from ..identifiers import quote_identifier as _q
from ..local import checks
from ..local.connection import connect
from ..local.readers import Loaded, load
from ..local.readers.loaded import _first_line
from ..stats.report import aligned

# A label past this is no grade (an id, a timestamp); below it every sum of the interval α fits a HUGEINT.
MAX_LABEL = 2 ** 31
STATISTICS = ("observed_agreement", "kappa", "kappa_linear", "kappa_quadratic", "alpha_nominal", "alpha_ordinal",
              "alpha_interval")


@dataclasses.dataclass(frozen=True)
class Agreement:
    """agreement()'s result: pyarrow tables. overall: one row (pairs both judged, only in a, only in b, labels seen
    on the pairs both judged, then the statistics); per_query: one row per query either side judged, with a note
    where a statistic is NULL (None without per_query=True); confusion: label_a, label_b, pairs (overall);
    query_confusion: the same per query, query_id first (None without per_query=True)."""

    overall: object
    per_query: object
    confusion: object
    query_confusion: object = None

    def text(self) -> str:
        """The overall row as two aligned columns, then the confusion table."""
        row = self.overall.to_pylist()[0]
        lines = [["statistic", "value"], *([k, _shown(v)] for k, v in row.items())]
        confusion = [["label_a", "label_b", "pairs"], *(list(r.values()) for r in self.confusion.to_pylist())]
        return aligned(lines, ["l", "r"]) + "\n\nconfusion (pairs both judged):\n" + aligned(confusion, ["r"] * 3)

    def __str__(self) -> str:
        return self.text()


def _shown(value) -> str:
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def agreement(a, b, *, per_query: bool = False, columns: dict | None = None, memory_limit=None, threads=None,
              temp_directory=None) -> Agreement:
    """Agreement between two judgment sets over the (query, document) pairs both judged: a and b are anything
    evaluate() takes as qrels (TREC qrels, CSV/TSV/Parquet/JSON Lines, frames, dicts, DuckDB tables), with
    integer grades as labels; columns= maps the roles query_id, doc_id, relevance in both. A negative grade counts
    as not judged on that side. κ's weights are over the ranks of the labels seen on the pairs both judged (as
    scikit-learn's, whose labels are the sorted labels either side gave); per query the same ranks (as
    cohen_kappa_score(..., labels=those labels)). α treats each pair both judged as a unit of two coders.
    per_query=True adds .per_query: a query where a statistic is undefined (no pair both judged, or one label on
    both sides) has NULL and a note. Overall, an undefined statistic is a SqlmetricsError.
    memory_limit, threads and temp_directory are DuckDB's, as evaluate() takes them. See docs/rag.md."""
    con = connect(memory_limit, threads, temp_directory)
    inputs: list[Loaded] = []
    try:
        con.execute("SET enable_progress_bar = false")  # DuckDB's own bar on standard error, past two seconds
        for given, what in ((a, "judgments a"), (b, "judgments b")):
            inputs.append(load(con, given, "qrels", columns, what=what))
            _check(con, inputs[-1])
        la, lb = inputs
        con.execute(_PAIRS.format(a=_side(la), b=_side(lb)))
        _refuse_no_overlap(con, la.label, lb.label)
        table = con.sql(_STATISTICS).to_arrow_table()
        confusion = _confusion(con, "")
        query_confusion = _confusion(con, "query AS query_id, ") if per_query else None
    except duckdb.Error as e:  # e.g. past memory_limit with nowhere to spill
        raise SqlmetricsError(f"{' and '.join(i.label for i in inputs) or 'judgments'}: agreement failed: "
                              f"{_first_line(e)}") from None
    finally:
        con.close()
        for i in inputs:
            if i.temporary:
                shutil.rmtree(i.temporary, ignore_errors=True)
    overall = table.filter(table["query_id"].is_null())
    _refuse_undefined(overall.to_pylist()[0], la.label, lb.label)
    per_query = table.filter(table["query_id"].is_valid()).drop_columns(["single_label"]) if per_query else None
    return Agreement(overall.drop_columns(["query_id", "note", "single_label"]), per_query, confusion,
                     query_confusion)


def _confusion(con, key: str):
    """The pairs both judged per (label in a, label in b), after the key columns given (none: overall)."""
    return con.sql(f"SELECT {key}la AS label_a, lb AS label_b, SUM(n) AS pairs FROM sqlm_agree_pairs "
                   "WHERE la IS NOT NULL AND lb IS NOT NULL GROUP BY ALL ORDER BY ALL").to_arrow_table()


def _check(con, loaded: Loaded) -> None:
    """evaluate's qrels checks (ids, numbers, repeats), with every grade an integer, and no grade past MAX_LABEL."""
    checks.check(con, dataclasses.replace(loaded, integer_grades=True), "qrels")
    grade = f"TRY_CAST({_q(loaded.columns['relevance'])} AS DOUBLE)"
    too_big = f"abs({grade}) >= {MAX_LABEL}"
    if con.execute(f"SELECT COUNT(*) FILTER ({too_big}) FROM {loaded.view}").fetchall()[0][0]:
        line = checks._locate(con, loaded, too_big)
        raise SqlmetricsError(f"{loaded.at(line)}: column {loaded.columns['relevance']!r} holds a grade beyond "
                              f"±{MAX_LABEL}: labels are relevance grades (small integers). Fix the value or map "
                              "another column.")


def _side(loaded: Loaded) -> str:
    """SQL: the input as (query, doc, label), the label NULL where the grade is negative (not judged)."""
    c = {role: _q(loaded.columns[role]) for role in ("query_id", "doc_id", "relevance")}
    grade = f"CAST(CAST({c['relevance']} AS DOUBLE) AS BIGINT)"
    return (f"SELECT CAST({c['query_id']} AS VARCHAR) AS query, CAST({c['doc_id']} AS VARCHAR) AS doc, "
            f"CASE WHEN {grade} >= 0 THEN {grade} END AS label FROM {loaded.view}")


def _refuse_no_overlap(con, a: str, b: str) -> None:
    both, only_a, only_b = con.execute(
        "SELECT COUNT(*) FILTER (la IS NOT NULL AND lb IS NOT NULL), SUM(n) FILTER (lb IS NULL AND la IS NOT NULL), "
        "SUM(n) FILTER (la IS NULL AND lb IS NOT NULL) FROM sqlm_agree_pairs").fetchall()[0]
    if not both:
        raise SqlmetricsError(f"{a} and {b}: no (query, document) pair is judged on both sides ({only_a or 0} "
                              f"only in a, {only_b or 0} only in b), so there is nothing to agree on. Check that "
                              "the two sets judge the same queries and documents, with the same ids (a negative "
                              "grade counts as not judged).")


def _refuse_undefined(row: dict, a: str, b: str) -> None:
    if row["kappa"] is None:
        label = row["single_label"]
        raise SqlmetricsError(f"{a} and {b}: both hold the one label {label} on all {row['pairs']} pairs both "
                              "judged, so agreement beyond chance is undefined (κ and α divide by zero). Compare "
                              "over a sample where the labels vary (more queries, or documents of every grade).")


# One pass over both inputs: counts per (query, label in a, label in b); a NULL label is a side that did not judge.
_PAIRS = """
CREATE TEMP TABLE sqlm_agree_pairs AS
SELECT COALESCE(a.query, b.query) AS query, CAST(a.label AS HUGEINT) AS la, CAST(b.label AS HUGEINT) AS lb,
       CAST(COUNT(*) AS HUGEINT) AS n
FROM ({a}) a FULL OUTER JOIN ({b}) b ON a.query = b.query AND a.doc = b.doc
GROUP BY ALL"""

# Every group (a query, and overall: query '' — ids are never empty) in one statement. Per group, N pairs both
# judged; n_a(i), n_b(i) each side's count of the label of rank i; κ's weights are on the ranks r, α's distances on
# the labels (interval) or on twice the ordinal position 2·Σ_{g<c} n_g + n_c (ordinal: Krippendorff's δ(c,k) is the
# squared difference of the positions, n_g counting both coders' values; doubled to stay integer).
#   κ = 1 − N·Σ w(r_a, r_b) / E, E = N²·Σ_ij w(i,j)·p_a(i)·p_b(j):
#     unweighted E = N² − Σ n_a(i)·n_b(i); quadratic E = N·Σ n_a r² + N·Σ n_b r² − 2·Σ n_a r·Σ n_b r;
#     linear E = Σ over the gaps between ranks k, k+1 of C_a(k)·(N − C_b(k)) + C_b(k)·(N − C_a(k)), C cumulative
#   α = 1 − (m − 1)·2·Σ δ(x, y) / Σ_ck n_c n_k δ(c, k), m = 2N values; Σ_ck n_c n_k (v_c − v_k)² = 2m·Σ n v² − 2(Σ n v)²
_STATISTICS = """
WITH both_judged AS (
    SELECT g.overall, CASE WHEN g.overall THEN '' ELSE p.query END AS query, la, lb, n
    FROM sqlm_agree_pairs p CROSS JOIN (VALUES (true), (false)) g(overall)
    WHERE la IS NOT NULL AND lb IS NOT NULL),
labels AS (
    SELECT label, ROW_NUMBER() OVER (ORDER BY label) - 1 AS r
    FROM (SELECT la AS label FROM both_judged UNION SELECT lb FROM both_judged)),
marginals AS (
    SELECT overall, query, label, ANY_VALUE(r) AS r, SUM(na) AS na, SUM(nb) AS nb
    FROM (SELECT overall, query, la AS label, n AS na, 0 AS nb FROM both_judged
          UNION ALL SELECT overall, query, lb, 0, n FROM both_judged) JOIN labels USING (label)
    GROUP BY overall, query, label),
cumulative AS (
    SELECT *, SUM(na) OVER w AS ca, SUM(nb) OVER w AS cb, 2 * SUM(na + nb) OVER w - (na + nb) AS pos2,
           LEAD(r) OVER w - r AS gap, SUM(na) OVER (PARTITION BY overall, query) AS total
    FROM marginals WINDOW w AS (PARTITION BY overall, query ORDER BY r)),
expected AS (
    SELECT overall, query, COUNT(*) AS seen, ANY_VALUE(label) AS single_label,
           SUM(na * nb) AS e_same,
           SUM(COALESCE(gap, 0) * (ca * (total - cb) + cb * (total - ca))) AS e_linear,
           SUM(na * r) AS sa1, SUM(na * r * r) AS sa2, SUM(nb * r) AS sb1, SUM(nb * r * r) AS sb2,
           SUM((na + nb) * (na + nb)) AS nv2, SUM((na + nb) * label) AS v1, SUM((na + nb) * label * label) AS v2,
           SUM((na + nb) * pos2) AS o1, SUM((na + nb) * pos2 * pos2) AS o2
    FROM cumulative GROUP BY overall, query),
observed AS (
    SELECT p.overall, p.query, SUM(p.n) AS n, SUM(CASE WHEN la = lb THEN p.n ELSE 0 END) AS same,
           SUM(p.n * abs(x.r - y.r)) AS d_linear, SUM(p.n * (x.r - y.r) * (x.r - y.r)) AS d_quadratic,
           SUM(p.n * (la - lb) * (la - lb)) AS d_interval, SUM(p.n * (x.pos2 - y.pos2) * (x.pos2 - y.pos2)) AS d_ordinal
    FROM both_judged p
    JOIN cumulative x ON x.overall = p.overall AND x.query = p.query AND x.label = p.la
    JOIN cumulative y ON y.overall = p.overall AND y.query = p.query AND y.label = p.lb
    GROUP BY p.overall, p.query),
statistics AS (
    SELECT o.*, e.seen, e.single_label,
           n * n - e_same AS e_unweighted, e_linear, n * sa2 + n * sb2 - 2 * sa1 * sb1 AS e_quadratic,
           4 * n * n - nv2 AS a_nominal, 4 * n * o2 - 2 * o1 * o1 AS a_ordinal, 4 * n * v2 - 2 * v1 * v1 AS a_interval
    FROM observed o JOIN expected e USING (overall, query)),
counts AS (
    SELECT g.overall, CASE WHEN g.overall THEN '' ELSE p.query END AS query,
           SUM(n) FILTER (la IS NOT NULL AND lb IS NOT NULL) AS pairs,
           SUM(n) FILTER (la IS NOT NULL AND lb IS NULL) AS only_a, SUM(n) FILTER (la IS NULL AND lb IS NOT NULL) AS only_b
    FROM sqlm_agree_pairs p CROSS JOIN (VALUES (true), (false)) g(overall)
    GROUP BY ALL)
SELECT CASE WHEN c.overall THEN NULL ELSE c.query END AS query_id,
       CAST(COALESCE(c.pairs, 0) AS BIGINT) AS pairs, CAST(COALESCE(c.only_a, 0) AS BIGINT) AS only_a,
       CAST(COALESCE(c.only_b, 0) AS BIGINT) AS only_b, CAST(COALESCE(s.seen, 0) AS BIGINT) AS labels,
       CAST(s.same AS DOUBLE) / CAST(s.n AS DOUBLE) AS observed_agreement,
       {kappa}, {kappa_linear}, {kappa_quadratic}, {alpha_nominal}, {alpha_ordinal}, {alpha_interval},
       CASE WHEN s.n IS NULL THEN 'no pair judged on both sides'
            WHEN s.e_unweighted = 0 THEN 'one label on both sides: kappa and alpha undefined' END AS note,
       CASE WHEN s.e_unweighted = 0 THEN CAST(s.single_label AS BIGINT) END AS single_label
FROM counts c LEFT JOIN statistics s USING (overall, query)
ORDER BY c.overall DESC, c.query"""


def _ratio(name: str, observed: str, expected: str, factor: str) -> str:
    """SQL: 1 − factor·observed / expected, NULL where nothing is expected to disagree (the sums exact, divided
    once as DOUBLE)."""
    return (f"CASE WHEN s.{expected} <> 0 THEN 1 - CAST(({factor}) * (s.{observed}) AS DOUBLE) / "
            f"CAST(s.{expected} AS DOUBLE) END AS {name}")


_STATISTICS = _STATISTICS.format(
    kappa=_ratio("kappa", "n - s.same", "e_unweighted", "s.n"),
    kappa_linear=_ratio("kappa_linear", "d_linear", "e_linear", "s.n"),
    kappa_quadratic=_ratio("kappa_quadratic", "d_quadratic", "e_quadratic", "s.n"),
    # (m − 1)·2 = (2N − 1)·2
    alpha_nominal=_ratio("alpha_nominal", "n - s.same", "a_nominal", "(2 * s.n - 1) * 2"),
    alpha_ordinal=_ratio("alpha_ordinal", "d_ordinal", "a_ordinal", "(2 * s.n - 1) * 2"),
    alpha_interval=_ratio("alpha_interval", "d_interval", "a_interval", "(2 * s.n - 1) * 2"))
