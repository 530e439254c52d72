"""Do two judgment sets rank systems alike? Every run evaluated under each set (evaluate(): one statement over all
runs per set), then per measure the correlation of the two orders of the systems' means: Kendall's τ-b, τ_AP
(Yilmaz, Aslam and Robertson 2008) and Spearman's ρ, as one statement over the means.

τ_AP is asymmetric: a (e.g. the human judgments) is the truth, and the positions are those of b's order (the
ranking under test): τ_AP = 2/(n−1)·Σ_{i=2..n} C(i)/(i−1) − 1, C(i) the systems above position i in b's order that a
also ranks above the system at i. A swap near the top of b's order costs more than one near the bottom.

Ties: means equal to 12 decimals are tied (DuckDB's parallel sums vary in the last bits). τ-b and ρ take ties as
scipy does (τ-b's denominator, average ranks); τ_AP is defined for orders without ties, so with a tie on either
side it is NULL and the note names the tied runs (Urbano and Marrero's tie-aware variants answer other questions:
which of them is meant is the caller's to say)."""
from __future__ import annotations

import dataclasses

from ..errors import SqlmetricsError
from ..evaluation import evaluate
from ..local.connection import connect
from ..stats.report import aligned

DECIMALS = 12


@dataclasses.dataclass(frozen=True)
class RankingAgreement:
    """ranking_agreement()'s result, pyarrow tables. correlations: per measure, systems, kendall_tau, tau_ap,
    spearman_rho, note (why a value is NULL); means: per (measure, run), mean_a and mean_b, the runs' means under
    each judgment set."""

    correlations: object
    means: object

    def text(self) -> str:
        rows = [self.correlations.column_names, *(
            [_shown(v) for v in r.values()] for r in self.correlations.to_pylist())]
        return aligned(rows, ["l", "r", "r", "r", "r", "l"])

    def __str__(self) -> str:
        return self.text()


def _shown(value) -> str:
    if value is None:
        return "-"
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def ranking_agreement(a, b, runs, measures, **options) -> RankingAgreement:
    """How alike judgment sets a and b (anything evaluate() takes as qrels) order the systems `runs` ({name: run},
    or one table whose run_name column, mapped with columns=, names them: at least two) by each of `measures`.
    Each set averages over the queries it judges. The options are evaluate()'s, for both sets (memory_limit=,
    columns=, qrels_columns=, ...). a is the reference: τ_AP counts b's order against a's."""
    import pyarrow as pa

    measures = [measures] if isinstance(measures, str) else list(measures)
    means = {side: evaluate(qrels, runs, measures, **options).aggregate for side, qrels in (("a", a), ("b", b))}
    if not all(isinstance(v, dict) for v in means["a"].values()) or len(means["a"]) < 2:
        raise SqlmetricsError("runs: ranking agreement orders systems: give at least two runs, as {name: run} or one "
                              "table with a run_name column (columns={'run_name': '<its column>'}).")
    names = sorted(means["a"], key=str)
    rows = [(m, str(r), means["a"][r][m], means["b"][r][m]) for m in measures for r in names]
    table = pa.table({k: [row[i] for row in rows] for i, k in enumerate(("measure", "run", "mean_a", "mean_b"))})
    return RankingAgreement(correlations(table), table)


def correlations(means):
    """The correlations table of a means table (measure, run, mean_a, mean_b: pyarrow), its measures in the order
    they first appear."""
    names = means["measure"].to_pylist()
    first = {m: names.index(m) for m in names}
    con = connect()
    try:
        con.register("sqlm_means", means.append_column("no", [[first[m] for m in names]]))
        return con.sql(_CORRELATIONS).to_arrow_table()
    finally:
        con.close()


# Per measure, over the pairs of systems (x above y in b's order): sa, sb the signs of the differences of the
# means. τ-b = Σ sa·sb / sqrt(Σ|sa| · Σ|sb|) (concordant − discordant over the pairs untied on each side);
# τ_AP: Σ over concordant pairs of 1/(position of the lower system in b's order − 1); ρ: Pearson's r of average ranks.
_CORRELATIONS = f"""
WITH m AS (
    SELECT measure, no, run, round(mean_a, {DECIMALS}) AS va, round(mean_b, {DECIMALS}) AS vb,
           ROW_NUMBER() OVER (PARTITION BY measure ORDER BY round(mean_b, {DECIMALS}) DESC) AS pos_b,
           RANK() OVER (PARTITION BY measure ORDER BY round(mean_a, {DECIMALS}))
             + (COUNT(*) OVER (PARTITION BY measure, round(mean_a, {DECIMALS})) - 1) / 2 AS rank_a,
           RANK() OVER (PARTITION BY measure ORDER BY round(mean_b, {DECIMALS}))
             + (COUNT(*) OVER (PARTITION BY measure, round(mean_b, {DECIMALS})) - 1) / 2 AS rank_b,
           COUNT(*) OVER (PARTITION BY measure, round(mean_a, {DECIMALS})) > 1
             OR COUNT(*) OVER (PARTITION BY measure, round(mean_b, {DECIMALS})) > 1 AS tied
    FROM sqlm_means),
pairs AS (
    SELECT x.measure, sign(x.va - y.va) AS sa, sign(x.vb - y.vb) AS sb, y.pos_b
    FROM m x JOIN m y ON x.measure = y.measure AND x.pos_b < y.pos_b),
kendall AS (
    SELECT measure, SUM(sa * sb) AS s, SUM(abs(sa)) AS untied_a, SUM(abs(sb)) AS untied_b,
           SUM(CASE WHEN sa > 0 THEN 1.0 / (pos_b - 1) ELSE 0 END) AS ap
    FROM pairs GROUP BY measure),
per_measure AS (
    SELECT measure, MIN(no) AS no, COUNT(*) AS systems, var_pop(rank_a) AS var_a, var_pop(rank_b) AS var_b,
           covar_pop(rank_a, rank_b) AS cov, string_agg(run, ', ' ORDER BY run) FILTER (tied) AS tied_runs
    FROM m GROUP BY measure)
SELECT p.measure, p.systems,
       CASE WHEN untied_a > 0 AND untied_b > 0 THEN s / sqrt(untied_a * untied_b) END AS kendall_tau,
       CASE WHEN tied_runs IS NULL THEN 2 * ap / (p.systems - 1) - 1 END AS tau_ap,
       CASE WHEN var_a > 0 AND var_b > 0 THEN cov / sqrt(var_a * var_b) END AS spearman_rho,
       CASE WHEN untied_a = 0 OR untied_b = 0 THEN 'every system tied on one side: tau and rho undefined'
            WHEN tied_runs IS NOT NULL THEN 'tied means (tau_ap needs strict orders): ' || tied_runs END AS note
FROM per_measure p JOIN kendall k USING (measure)
ORDER BY p.no"""
