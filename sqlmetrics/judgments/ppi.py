"""Prediction-powered inference (Angelopoulos et al., Science 2023; PPI++, Angelopoulos, Duchi and Zrnic 2024): a
measure's mean over queries that an LLM labels, corrected by the human − LLM difference on the random subset that
humans label too, with its interval. ppi() is ppi-python 0.2.3's ppi_mean_pointestimate and ppi_mean_ci (lam=None:
power-tuned, clipped to [0, 1]) with

    Y              the measure under the human labels, on the queries the human qrels judge (n of them)
    Yhat           the measure under the LLM labels, on those same queries
    Yhat_unlabeled the measure under the LLM labels, on the other queries the LLM qrels judge (N of them)

The unlabeled sample is the queries without human labels, not every query: the theory's two samples are
independent, and the labelled queries' LLM values already enter through Yhat. For a paired difference of two runs
Y and Yhat are the per-query differences run − baseline.

Each run is evaluated twice (evaluate(): the LLM qrels, then the human ones; both score a query the run misses 0,
as trec_eval -c does); the per-query values of both are joined in DuckDB and ONE aggregate gives, per run and per
difference, the sums the closed forms read (counts, means, population variances and the covariance: DuckDB's
numerically stable aggregates). Python only applies the formulas:

    λ  = cov(Y, Yhat) / ((1 + n/N) var₁(Yhat ∪ Yhat_unlabeled)), clipped to [0, 1]
         (cov over the n labelled queries with 1/n; var₁ the sample variance, 1/(n+N−1), of all n+N LLM values)
    θ̂  = λ mean(Yhat_unlabeled) + mean(Y) − λ mean(Yhat)
    se² = λ² var(Yhat_unlabeled)/N + var(Y − λ Yhat)/n   (population variances, ppi-python's std())
    interval θ̂ ± z₁₋α/₂ se

When every LLM value is the same, λ is 0/0 (ppi-python returns NaN); then λ changes neither the estimate nor its
variance, and ppi() takes λ = 0: the human mean and its interval."""
from __future__ import annotations

import math
import warnings
from pathlib import Path

from ..catalogue import parse_all
from ..errors import SqlmetricsError, SqlmetricsWarning
from ..evaluation import evaluate
from ..identifiers import quote_identifier as _q
from ..identifiers import sql_literal as _lit
from ..local.connection import connect
from ..local.runs import named_runs

COLUMNS = ("run", "baseline", "measure", "n_human", "n_unlabeled", "lambda", "human_mean", "human_low", "human_high",
           "llm_mean", "llm_low", "llm_high", "ppi_mean", "ppi_low", "ppi_high")
_TYPES = ("VARCHAR",) * 3 + ("BIGINT",) * 2 + ("DOUBLE",) * 10


def ppi(llm_qrels, human_qrels, runs, measure: str, *, alpha: float = 0.05, baseline: str | None = None,
        memory_limit=None, threads=None, temp_directory=None):
    """A measure's mean over LLM-labelled queries, corrected by a human-labelled random subset (PPI++), per run,
    and the paired difference of every other run with the baseline; a pyarrow Table of COLUMNS, one row each
    (baseline empty for a run's own mean, else the difference run − baseline).

    llm_qrels: the LLM's judgments of every query; human_qrels: the human's of a random subset of them (any qrels
    evaluate() reads). runs: {name: run}, a list of runs (named by file stem) or one run. measure: one measure
    averaged over queries (nDCG@10, AP, ...). alpha: the intervals are at level 1 − alpha. baseline: the run the
    others are compared with (default the first). memory_limit, threads and temp_directory are DuckDB's, as
    evaluate() takes them.

    Each row: n_human labelled and n_unlabeled other queries; the human-only mean and its normal interval; the
    LLM-only mean (every query) and its interval, which ignores the LLM's bias; the power-tuning weight λ; the
    PPI++ estimate and its interval. See docs/rag.md, "Prediction-powered inference"."""
    named = named_runs(runs)
    _check_alpha(alpha)
    if baseline is not None and baseline not in named:
        raise SqlmetricsError(f"baseline={baseline!r} is none of the runs ({', '.join(map(repr, named))}); name one "
                              "of them.")
    call, = _one_measure(measure)
    resources = {"memory_limit": memory_limit, "threads": threads, "temp_directory": temp_directory}
    llm_name, human_name = _described(llm_qrels, "LLM qrels"), _described(human_qrels, "human qrels")
    con = connect(memory_limit, threads, temp_directory)  # the per-query values' join and sums
    try:
        # The human labels first: their count is checked before the larger LLM evaluation runs.
        with warnings.catch_warnings():  # that the runs rank queries the humans did not label is PPI's premise
            warnings.filterwarnings("ignore", ".* with no judgments", SqlmetricsWarning)
            human = _per_query(human_qrels, named, call.text, resources, human_name)
        # (run, query_id, the measure) each, the measure renamed: its name may hold any character
        con.register("human_values", human.rename_columns(["run", "query_id", "value"]))
        _check_humans(con, human_name)
        llm = _per_query(llm_qrels, named, call.text, resources, llm_name)
        con.register("llm_values", llm.rename_columns(["run", "query_id", "value"]))
        _check_queries(con, llm_name, human_name, call.text)
        rows = con.execute(_SUMS.format(baseline=_lit(baseline or next(iter(named))))).fetchall()
        from scipy.stats import norm  # lazily: scipy's import is the slowest of the command

        z = float(norm.ppf(1 - alpha / 2))
        # The rows into Arrow through DuckDB: pyarrow's own pa.array() imports pandas (seconds on a cold start).
        con.execute(f"CREATE TEMP TABLE ppi ({', '.join(f'{_q(c)} {t}' for c, t in zip(COLUMNS, _TYPES))})")
        con.executemany(f"INSERT INTO ppi VALUES ({', '.join('?' * len(COLUMNS))})",
                        [_estimates(row, z, call.text) for row in rows])
        return con.sql("SELECT * FROM ppi").to_arrow_table()
    finally:
        con.close()


def _per_query(qrels, runs: dict, measure: str, resources: dict, name: str):
    """evaluate()'s per-query table (run, query_id, measure); its error says which of the two qrels it had."""
    try:
        return evaluate(qrels, runs, [measure], **resources).per_query
    except SqlmetricsError as e:
        raise SqlmetricsError(f"evaluating the runs with the {name}: {e}") from None


def _check_alpha(alpha) -> None:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise SqlmetricsError(f"alpha={alpha!r}: the intervals are at level 1 - alpha, so alpha is a number strictly "
                              "between 0 and 1 (0.05 for 95% intervals).")


def _one_measure(measure) -> list:
    if not isinstance(measure, str):
        raise SqlmetricsError(f"measure={measure!r}: PPI estimates one measure's mean; name it as a string "
                              "('nDCG@10').")
    calls = parse_all([measure], 1, None)
    if calls[0].measure.aggregate != "mean":
        raise SqlmetricsError(f"{measure} is aggregated as a {calls[0].measure.aggregate}, not a mean over queries: "
                              "PPI corrects a mean. Use a measure averaged over queries (nDCG@10, AP, P@10, ...).")
    return calls


def _described(qrels, what: str) -> str:
    return f"{what} {str(qrels)!r}" if isinstance(qrels, (str, Path)) else what


def _check_humans(con, human_name: str) -> None:
    """At least two human-labelled queries: the human - LLM difference needs a variance."""
    humans = con.execute("SELECT count(DISTINCT query_id), min(query_id) FROM human_values").fetchall()[0]
    if humans[0] < 2:
        raise SqlmetricsError(f"{human_name} labels {humans[0]} quer{'y' if humans[0] == 1 else 'ies'}"
                              + (f" ({humans[1]!r})" if humans[0] else "") + ": PPI needs at least two "
                              "human-labelled queries (a variance of the human - LLM difference), and its interval a "
                              "few dozen. Have more queries, a random subset of the LLM's, judged by humans.")


def _check_queries(con, llm_name: str, human_name: str, measure: str) -> None:
    """What the estimate needs of the two evaluations besides: every human-labelled query LLM-labelled too (its
    Yhat), at least one LLM-only query (the unlabeled sample), and a value of the measure for each (FirstRank has
    none where nothing relevant is retrieved)."""
    missing = con.execute("SELECT count(DISTINCT query_id), min(query_id) FROM human_values WHERE query_id NOT IN "
                          "(SELECT query_id FROM llm_values)").fetchall()[0]
    if missing[0]:
        raise SqlmetricsError(f"{human_name}: query {missing[1]!r}" + (f" and {missing[0] - 1} more" if missing[0] > 1
                              else "") + f" has human labels but no row in the {llm_name}: PPI's human-labelled "
                              "queries are a random subset of the LLM-labelled ones. Have the LLM label it too, or "
                              "leave it out of the human qrels.")
    rest = con.execute("SELECT count(DISTINCT query_id) FROM llm_values WHERE query_id NOT IN "
                       "(SELECT query_id FROM human_values)").fetchall()[0][0]
    if not rest:
        raise SqlmetricsError(f"{llm_name}: every query it labels is human-labelled too, so there is no LLM-only "
                              "query for PPI to add; the human mean (evaluate() with the human qrels) is the "
                              "estimate. Have the LLM label queries the humans did not.")
    for table in ("human_values", "llm_values"):
        empty = con.execute(f"SELECT run, query_id FROM {table} WHERE value IS NULL ORDER BY ALL "
                            "LIMIT 1").fetchall()
        if empty:
            name = human_name if table == "human_values" else llm_name
            raise SqlmetricsError(f"{measure} has no value for run {empty[0][0]!r}, query {empty[0][1]!r} under the "
                                  f"{name}: PPI needs a value for every query. Use a measure defined on every query "
                                  "(RR instead of FirstRank).")


# Per run (baseline NULL) and per difference run − baseline, over the LLM-labelled queries (y NULL: unlabeled).
_SUMS = """
WITH llm AS (SELECT "run", query_id, value AS yhat FROM llm_values),
human AS (SELECT "run", query_id, value AS y FROM human_values),
v AS (SELECT llm."run", llm.query_id, human.y, llm.yhat FROM llm LEFT JOIN human USING ("run", query_id)),
pairs AS (
    SELECT "run", NULL AS baseline, y, yhat FROM v
    UNION ALL
    SELECT a."run", b."run", a.y - b.y, a.yhat - b.yhat
    FROM v a JOIN v b ON a.query_id = b.query_id AND b."run" = {baseline} AND a."run" <> b."run")
SELECT "run", baseline, count(y), count(*) - count(y),
       avg(y), var_pop(y), avg(yhat) FILTER (WHERE y IS NOT NULL), var_pop(yhat) FILTER (WHERE y IS NOT NULL),
       covar_pop(y, yhat), avg(yhat) FILTER (WHERE y IS NULL), var_pop(yhat) FILTER (WHERE y IS NULL),
       avg(yhat), var_pop(yhat), var_samp(yhat)
FROM pairs GROUP BY "run", baseline ORDER BY baseline NULLS FIRST, "run"
"""


def _estimates(row, z: float, measure: str) -> tuple:
    """One row of COLUMNS from the aggregate's row and the normal quantile."""
    run, baseline, n, big_n, mean_y, var_y, mean_l, var_l, cov, mean_u, var_u, mean_all, var_all, var1_all = row
    denominator = (1 + n / big_n) * var1_all
    lam = min(max(cov / denominator, 0.0), 1.0) if denominator > 0 else 0.0  # constant LLM values: any λ, take 0
    estimate = lam * mean_u + mean_y - lam * mean_l
    # var(Y − λ Yhat) expanded; max(0, ...) because rounding can take a zero variance a hair below it
    rectifier = max(var_y + lam * lam * var_l - 2 * lam * cov, 0.0)
    se = math.sqrt(lam * lam * var_u / big_n + rectifier / n)
    human_se, llm_se = math.sqrt(var_y / n), math.sqrt(var_all / (n + big_n))
    return (run, baseline, measure, n, big_n, lam, mean_y, mean_y - z * human_se, mean_y + z * human_se,
            mean_all, mean_all - z * llm_se, mean_all + z * llm_se, estimate, estimate - z * se, estimate + z * se)
