"""Significance tests on per-query differences, and multiple-comparison corrections.

    student     paired Student's t-test                  (= scipy.stats.ttest_rel)
    fisher      Fisher's randomization test: sign flips  (= scipy.stats.permutation_test, paired)
    bootstrap   paired bootstrap test, percentile CI     (~ scipy.stats.bootstrap, method='percentile')
    wilcoxon    Wilcoxon signed-rank test                (= scipy.stats.wilcoxon)
    tukey       Tukey's HSD over all runs                (= scipy.stats.tukey_hsd)
Unpaired (different queries, sessions or users per run), from per-run aggregates computed in SQL:
    welch       Welch's t-test                           (= scipy.stats.ttest_ind, equal_var=False)
    mannwhitney Mann-Whitney U, normal approximation     (= scipy.stats.mannwhitneyu, method='asymptotic')
                (values within 1e-12, relative, are tied: ranks.py)
    bootstrap   each run resampled apart, percentile CI of the difference of means

The two resampling tests run in DuckDB, not in a Python loop: every resample's sign flips (or bootstrap
draws) come from a seeded integer hash of (seed, resample, position) in portable SQL (draws.py), so results are
deterministic for a seed and identical on every platform, DuckDB version and engine (aggregates.py draws the
same resamples where the data is). When all 2^n sign patterns fit in n_resamples,
the randomization test enumerates them and its p-value is exact (scipy does the same).

`student`, `fisher` and `bootstrap` need nothing beyond the package's own dependencies; `wilcoxon` and
`tukey` import scipy (the optional `stats` extra).
"""
from __future__ import annotations

import math
import warnings

from ..local.connection import connect
from ..errors import SqlmetricsError
from .draws import RESAMPLED_TIE, draw_sql, poisson_sql, replicates_sql, slots_sql
from .ranks import tolerant_ranks_sql



def adjust(p_values: list, correction) -> list:
    """Bonferroni, Holm or Benjamini-Hochberg adjustment of one family of p-values (NaN entries are not part
    of the family). BH's adjusted p is scipy.stats.false_discovery_control's: the step-up minimum of p * m / rank."""
    valid = [i for i, p in enumerate(p_values) if not math.isnan(p)]
    out = list(p_values)
    m = len(valid)
    if correction == "bonferroni":
        for i in valid:
            out[i] = min(1.0, p_values[i] * m)
    elif correction == "holm":
        running = 0.0
        for rank, i in enumerate(sorted(valid, key=lambda i: p_values[i])):
            running = max(running, min(1.0, (m - rank) * p_values[i]))
            out[i] = running
    elif correction == "bh":
        running = 1.0
        for rank, i in reversed(list(enumerate(sorted(valid, key=lambda i: p_values[i]), 1))):
            running = min(running, p_values[i] * m / rank)
            out[i] = running
    return out


# ---------------------------------------------------------------------------------------------- closed-form tests


def student(d: list) -> tuple:
    """Paired t-test on the differences d: (t, two-sided p) as scipy.stats.ttest_rel, without scipy.

    All-zero differences give (0, 1) (scipy: nan); constant non-zero differences give (+-inf, 0) as scipy.
    """
    n = len(d)
    if n < 2:
        return math.nan, math.nan
    mean = math.fsum(d) / n
    return student_moments(n, mean, math.fsum((x - mean) ** 2 for x in d) / (n - 1))


def student_moments(n: int, mean: float, var: float) -> tuple:
    """student() from the differences' count, mean and sample variance (computed where the data is)."""
    if n < 2:
        return math.nan, math.nan
    if var == 0:
        return (0.0, 1.0) if mean == 0 else (math.copysign(math.inf, mean), 0.0)
    t = mean / math.sqrt(var / n)
    return t, t_sf2(t, n - 1)


def t_sf2(t: float, df: float) -> float:
    """Two-sided p of Student's t distribution: P(|T| >= |t|) with df degrees of freedom."""
    return min(1.0, _betai(df / 2, 0.5, df / (df + t * t)))


def t_quantile(q: float, df: float) -> float:
    """The q-quantile (q > 0.5) of Student's t with df degrees of freedom (= scipy.stats.t.ppf), by bisection."""
    lo, hi = 0.0, 1.0
    while t_sf2(hi, df) > 2 * (1 - q):
        hi *= 2
    while True:
        mid = (lo + hi) / 2
        if mid in (lo, hi):  # lo and hi are adjacent doubles: halving further changes neither
            return mid
        lo, hi = (mid, hi) if t_sf2(mid, df) > 2 * (1 - q) else (lo, mid)


def welch(nx: int, mx: float, vx: float, ny: int, my: float, vy: float) -> tuple:
    """Welch's t-test from each sample's size, mean and variance: (t, two-sided p, df), as
    scipy.stats.ttest_ind(x, y, equal_var=False). Two constant samples: (0, 1) if equal, else (+-inf, 0)."""
    if nx < 2 or ny < 2:
        return math.nan, math.nan, math.nan
    sx, sy = vx / nx, vy / ny
    if sx + sy == 0:
        return ((0.0, 1.0) if mx == my else (math.copysign(math.inf, mx - my), 0.0)) + (math.nan,)
    t = (mx - my) / math.sqrt(sx + sy)
    df = (sx + sy) ** 2 / (sx * sx / (nx - 1) + sy * sy / (ny - 1))
    return t, t_sf2(t, df), df


def mann_whitney(nx: int, ny: int, rank_sum_x: float, tie_term: float) -> tuple:
    """Mann-Whitney U from x's rank sum in the pooled sample (average ranks for ties) and the tie term
    sum(t^3 - t) over groups of tied values: (U of x, two-sided p), as scipy.stats.mannwhitneyu(x, y,
    method='asymptotic'): normal approximation with tie correction and continuity correction."""
    if nx == 0 or ny == 0:
        return math.nan, math.nan
    n = nx + ny
    u_x = rank_sum_x - nx * (nx + 1) / 2
    var = nx * ny / 12 * ((n + 1) - tie_term / (n * (n - 1)))
    if var <= 0:  # every value tied: nothing differs
        return u_x, 1.0
    z = (max(u_x, nx * ny - u_x) - nx * ny / 2 - 0.5) / math.sqrt(var)
    return u_x, min(1.0, max(0.0, math.erfc(z / math.sqrt(2))))


def chi2_sf(x: float, df: int) -> float:
    """P(X >= x) for a chi-square variable with df degrees of freedom (= scipy.stats.chi2.sf): the regularized
    upper incomplete gamma Q(df/2, x/2), by its series below a + 1 and its continued fraction above."""
    if x <= 0:
        return 1.0
    a, z = df / 2, x / 2
    log_front = a * math.log(z) - z - math.lgamma(a)
    if z < a + 1:  # P by its series, Q = 1 - P
        term = total = 1 / a
        k = a
        while abs(term) > abs(total) * 1e-17:
            k += 1
            term *= z / k
            total += term
        return max(0.0, 1.0 - total * math.exp(log_front))
    # Q by its continued fraction (modified Lentz)
    tiny = 1e-300
    b, c, d = z + 1 - a, 1 / tiny, 1 / (z + 1 - a)
    h = d
    for i in range(1, 10_000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        h *= d * c
        if abs(d * c - 1) < 1e-16:
            break
    return min(1.0, math.exp(log_front) * h)


def _betai(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b) (continued fraction, Numerical Recipes 6.4)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def _betacf(a: float, b: float, x: float) -> float:
    tiny, eps = 1e-300, 1e-16
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 10000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < eps:
            break
    return h


def _scipy_stats(test: str):
    try:
        from scipy import stats
    except ImportError:  # pragma: no cover - scipy is installed wherever the tests run
        raise SqlmetricsError(f"test={test!r} needs scipy (pip install scipy); 'student', 'fisher' and "
                              "'bootstrap' work without it.") from None
    return stats


def wilcoxon(d: list) -> tuple:
    """Wilcoxon signed-rank test on the differences (scipy.stats.wilcoxon with its defaults)."""
    if not d:
        return math.nan, math.nan
    if all(x == 0 for x in d):
        return 0.0, 1.0
    stats = _scipy_stats("wilcoxon")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = stats.wilcoxon(d)
    return float(res.statistic), float(res.pvalue)


def tukey_hsd(scaled: list) -> tuple:
    """Tukey's HSD over all runs (groups = runs' per-query values): (statistic[i][j], pvalue[i][j])."""
    # the queries where every run has a value (FirstRank is undefined where nothing relevant is retrieved)
    rows = [row for row in zip(*scaled) if all(v is not None for v in row)]
    groups = [list(col) for col in zip(*rows)] if rows else [[] for _ in scaled]
    k = len(groups)
    nan = [[math.nan] * k for _ in range(k)]
    if any(len(g) < 2 for g in groups):
        return nan, nan
    if all(v == groups[0][0] for g in groups for v in g):  # no variance at all: nothing differs
        return [[0.0] * k for _ in range(k)], [[1.0] * k for _ in range(k)]
    stats = _scipy_stats("tukey")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = stats.tukey_hsd(*groups)
    return res.statistic.tolist(), res.pvalue.tolist()


def tukey_moments(groups: list) -> tuple:
    """tukey_hsd() from each group's moments {n, mean, ss (sum of squared deviations)}, as computed where the data
    is: scipy.stats.tukey_hsd's Tukey-Kramer statistic mean_i - mean_j and p = P(Q >= |mean_i - mean_j| / se_ij)
    of the studentized range Q with k groups and N - k degrees of freedom, se_ij = sqrt(MSE / 2 (1/n_i + 1/n_j))."""
    k = len(groups)
    nan = [[math.nan] * k for _ in range(k)]
    if any(g["n"] < 2 for g in groups):
        return nan, nan
    if all(g["ss"] == 0 and g["mean"] == groups[0]["mean"] for g in groups):  # no variance at all: nothing differs
        return [[0.0] * k for _ in range(k)], [[1.0] * k for _ in range(k)]
    stats = _scipy_stats("tukey")
    df = sum(g["n"] for g in groups) - k
    mse = math.fsum(g["ss"] for g in groups) / df
    statistic = [[gi["mean"] - gj["mean"] for gj in groups] for gi in groups]
    p = [[1.0 if i == j else float(stats.studentized_range.sf(
            abs(statistic[i][j]) / math.sqrt(mse / 2 * (1 / gi["n"] + 1 / gj["n"])), k, df))
          for j, gj in enumerate(groups)] for i, gi in enumerate(groups)]
    return statistic, p


# ---------------------------------------------------------------------------------------------- resampling in SQL

def _fixed_point(ascending: list) -> tuple:
    """(integers, scale): each value as an integer times one power-of-two scale, the largest |value| just below
    2^52. A resample's weighted sum of these is an exact integer sum in DuckDB (into a 128-bit integer), so the
    bootstrap's interval has the same bits in every run; a sum of doubles takes the last bits of the order its
    threads happen to add them in. Each value is rounded to 2^-52 of the largest, as a double sum of them rounds
    its partial sums."""
    top = max((abs(x) for x in ascending), default=0.0)
    if top == 0:
        return [0] * len(ascending), 1.0
    exponent = 52 - math.frexp(top)[1]
    return [round(math.ldexp(x, exponent)) for x in ascending], math.ldexp(1.0, -exponent)


def resample(test: str, jobs: list, seed: int, n_resamples: int, confidence: float = 0.99, resources=None) -> list:
    """p-values (and bootstrap percentile intervals) for many difference vectors in one DuckDB session.

    fisher: p = share of sign patterns whose |sum of signed d| reaches the observed |sum d| (all 2^n
    patterns when 2^n <= n_resamples: exact; else (count + 1) / (n_resamples + 1) over hashed patterns).
    bootstrap: resample the differences with replacement (hashed indices); p = (count + 1) /
    (n_resamples + 1) of resamples whose mean, shifted to the null, is at least as far from 0 as the
    observed mean; the interval is the percentile interval of the resampled means. resources: DuckDB's
    memory_limit, threads and temp_directory ({} or None: the process's defaults).
    """
    out = [{"p": math.nan, "exact": None, "ci_low": math.nan, "ci_high": math.nan} for _ in jobs]
    live = [(k, d) for k, d in enumerate(jobs) if d]
    if not live:
        return out
    exact = {k: test == "fisher" and 2 ** len(d) <= n_resamples for k, d in live}
    con = connect(**(resources or {}))
    try:
        # plain INSERTs, not a pyarrow table: building one from Python lists imports pandas
        con.execute("CREATE TEMP TABLE sqlm_jobs (job INTEGER, n INTEGER, dv DOUBLE[], obs DOUBLE, tol DOUBLE, "
                    "exact BOOLEAN, iv BIGINT[], scale DOUBLE)")
        # sorted: a resample's slots are positions in ascending order, never the lists' ids, whose order depends on
        # the engine's collation (aggregates.py draws the same resamples on other engines)
        records = []
        for k, d in live:
            ascending = sorted(float(x) for x in d)
            records.append((k, len(d), ascending, math.fsum(d), RESAMPLED_TIE * math.fsum(abs(x) for x in d), exact[k],
                            *(_fixed_point(ascending) if test == "bootstrap" else (None, None))))
        for start in range(0, len(records), 200):
            chunk = records[start:start + 200]
            con.execute("INSERT INTO sqlm_jobs VALUES " + ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?)"] * len(chunk)),
                        [v for rec in chunk for v in rec])
        rows = []
        if test == "fisher":
            if not all(exact.values()):
                # In resample b the difference at position `slot` (ascending order) flips its sign when h(seed, b,
                # slot) is odd; a resample's statistic is one sum of signed differences, so no table of sign
                # patterns is ever built (memory does not grow with lists x resamples). The tolerance absorbs the
                # last bits that the order of a parallel sum may move.
                rows += con.execute(f"""
                    WITH vals AS (SELECT job, obs, tol, unnest(dv) AS v, generate_subscripts(dv, 1) - 1 AS slot
                                  FROM sqlm_jobs WHERE NOT exact),
                         sums AS (SELECT v.job, v.obs, v.tol,
                                         SUM(CASE WHEN {draw_sql('r.hb', 's.hq')} % 2 = 1 THEN -v.v ELSE v.v END) AS t
                                  FROM vals v JOIN ({slots_sql('SELECT slot FROM vals')}) s ON s.slot = v.slot
                                  CROSS JOIN ({replicates_sql(seed, n_resamples)}) r
                                  GROUP BY v.job, v.obs, v.tol, r.b)
                    SELECT job, SUM(CASE WHEN abs(t) >= abs(obs) - tol THEN 1 ELSE 0 END) AS hits, FALSE AS exact
                    FROM sums GROUP BY job""").fetchall()
            if any(exact.values()):
                # every sign pattern b in 0 .. 2^n - 1: position pos is flipped when bit pos of b is set
                patterns = """
                    SELECT n, b, list(CASE WHEN (b >> pos) & 1 = 1 THEN -1.0::DOUBLE ELSE 1.0::DOUBLE END ORDER BY pos) AS sg
                    FROM (SELECT n, b, unnest(range(n)) AS pos
                          FROM (SELECT n, unnest(range((1::BIGINT << n))) AS b FROM (SELECT DISTINCT n FROM sqlm_jobs WHERE exact)))
                    GROUP BY n, b"""
                rows += con.execute(f"""
                    SELECT j.job, SUM(CASE WHEN abs(list_dot_product(j.dv, s.sg)) >= abs(j.obs) - j.tol
                                      THEN 1 ELSE 0 END) AS hits, TRUE AS exact
                    FROM sqlm_jobs j JOIN ({patterns}) s ON s.n = j.n WHERE j.exact GROUP BY j.job""").fetchall()
            for job, hits, is_exact in rows:
                n = len(jobs[job])
                p = hits / 2**n if is_exact else (hits + 1) / (n_resamples + 1)
                out[job].update(p=min(1.0, p), exact=bool(is_exact))
        else:
            alpha = (1 - confidence) / 2
            # The Poisson bootstrap: in resample b, the difference at position `slot` (ascending order) weighs
            # Poisson(1) drawn from h(seed, b, slot); a resample's mean is one weighted sum, so no table of draws
            # is ever built. A resample drawing no list at all (probability e^-n) keeps the observed mean. The
            # weighted sum is of the fixed-point integers (_fixed_point): exact, so the same in any thread order.
            rows = con.execute(f"""
                WITH vals AS (SELECT job, obs / n AS obs_mean, tol / n AS tol, scale, unnest(iv) AS iv,
                                     generate_subscripts(iv, 1) - 1 AS slot FROM sqlm_jobs),
                     weighted AS (
                        SELECT v.job, v.obs_mean, v.tol, v.scale, r.b, {poisson_sql(draw_sql('r.hb', 's.hq'))} AS w,
                               v.iv
                        FROM vals v JOIN ({slots_sql('SELECT slot FROM vals')}) s ON s.slot = v.slot
                        CROSS JOIN ({replicates_sql(seed, n_resamples)}) r),
                     means AS (SELECT job, obs_mean, tol,
                                      COALESCE(CAST(SUM(w * iv) AS DOUBLE) * scale / NULLIF(SUM(w), 0), obs_mean) AS m
                               FROM weighted GROUP BY job, obs_mean, tol, scale, b)
                SELECT job, SUM(CASE WHEN abs(m - obs_mean) >= abs(obs_mean) - tol THEN 1 ELSE 0 END),
                       quantile_cont(m, {alpha!r}), quantile_cont(m, {1 - alpha!r})
                FROM means GROUP BY job""").fetchall()
            for job, hits, lo, hi in rows:
                out[job].update(p=min(1.0, (hits + 1) / (n_resamples + 1)), exact=False, ci_low=lo, ci_high=hi)
    finally:
        con.close()
    return out



def unpaired(groups: list, pairs: list, seed: int, n_resamples: int, confidence: float, test, resources=None) -> tuple:
    """Per-group moments and what each pair's test needs, in one DuckDB session; only these aggregates come back.

    groups: lists of values (one run in one segment, on one measure); pairs: (x group, y group) indices;
    test: the unpaired test ('welch', 'mannwhitney', 'bootstrap'; None: the moments alone). Returns
    ([{n, mean, var}] per group, [{rank_sum_x, tie_term, p, ci_low, ci_high}] per pair). mannwhitney: the
    rank sum uses average ranks of the pooled values; tie_term is sum(t^3 - t) over groups of t tied values.
    bootstrap: each resample draws each group apart (hashed indices, as resample()); the interval is the
    percentile interval of the resampled differences of means, and p = (count + 1) / (n_resamples + 1) of
    resamples at least as far from the observed difference as it is from 0. Welch's test needs the moments
    alone: it never resamples. resources: as resample().
    """
    con = connect(**(resources or {}))
    try:
        # each group's values; for the bootstrap also in ascending order as fixed-point integers (_fixed_point)
        con.execute("CREATE TEMP TABLE sqlm_groups (g INTEGER, n INTEGER, v DOUBLE[], iv BIGINT[], scale DOUBLE)")
        con.execute("CREATE TEMP TABLE sqlm_pairs (job INTEGER, gx INTEGER, gy INTEGER)")
        records = [(g, len(v), [float(x) for x in v],
                    *(_fixed_point(sorted(float(x) for x in v)) if test == "bootstrap" else (None, None)))
                   for g, v in enumerate(groups)]
        for start in range(0, len(records), 200):
            chunk = records[start:start + 200]
            con.execute("INSERT INTO sqlm_groups VALUES " + ", ".join(["(?, ?, ?, ?, ?)"] * len(chunk)),
                        [x for rec in chunk for x in rec])
        live = [(k, gx, gy) for k, (gx, gy) in enumerate(pairs) if groups[gx] and groups[gy]]
        for start in range(0, len(live), 300):
            chunk = live[start:start + 300]
            con.execute("INSERT INTO sqlm_pairs VALUES " + ", ".join(["(?, ?, ?)"] * len(chunk)),
                        [x for rec in chunk for x in rec])
        moments = [{"n": 0, "mean": math.nan, "var": math.nan} for _ in groups]
        for g, n, mean, var in con.execute(
                "SELECT g, COUNT(x), AVG(x), VAR_SAMP(x) FROM (SELECT g, unnest(v) AS x FROM sqlm_groups) GROUP BY g"
        ).fetchall():
            moments[g] = {"n": n, "mean": mean, "var": math.nan if var is None else var}
        out = [{"rank_sum_x": math.nan, "tie_term": math.nan, "p": math.nan, "ci_low": math.nan,
                "ci_high": math.nan} for _ in pairs]
        if test == "mannwhitney":
            for job, rank_sum, ties in con.execute(f"""
                    WITH pooled AS (
                        SELECT p.job, s.g = p.gx AS is_x, unnest(s.v) AS x
                        FROM sqlm_pairs p JOIN sqlm_groups s ON s.g = p.gx OR s.g = p.gy),
                    ranked AS ({tolerant_ranks_sql("pooled", "job", "is_x")})
                    SELECT job, SUM(CASE WHEN is_x THEN r ELSE 0 END), SUM(t * t - 1) FROM ranked GROUP BY job
                    """).fetchall():
                out[job].update(rank_sum_x=float(rank_sum), tie_term=float(ties))
        if test == "bootstrap" and live:
            alpha = (1 - confidence) / 2
            # The Poisson bootstrap, each run apart: x's values (ascending) weigh by slots 0 .. nx-1, y's by
            # nx .. nx+ny-1, so the two draw independent weights; an arm drawing no list keeps its observed mean. The
            # weighted sums are of the fixed-point integers (_fixed_point): exact, so the same in any thread order.
            x_mean = ("COALESCE(CAST(SUM(CASE WHEN is_x THEN w * iv END) AS DOUBLE) * sx "
                      "/ NULLIF(SUM(CASE WHEN is_x THEN w END), 0), mx)")
            y_mean = ("COALESCE(CAST(SUM(CASE WHEN NOT is_x THEN w * iv END) AS DOUBLE) * sy "
                      "/ NULLIF(SUM(CASE WHEN NOT is_x THEN w END), 0), my)")
            rows = con.execute(f"""
                WITH obs AS (
                    SELECT p.job, x.iv AS vx, y.iv AS vy, x.scale AS sx, y.scale AS sy, x.n AS nx,
                           list_avg(x.v) AS mx, list_avg(y.v) AS my,
                           list_avg(x.v) - list_avg(y.v) AS d, {RESAMPLED_TIE} * (abs(list_avg(x.v)) + abs(list_avg(y.v))) AS tol
                    FROM sqlm_pairs p JOIN sqlm_groups x ON x.g = p.gx JOIN sqlm_groups y ON y.g = p.gy),
                vals AS (
                    SELECT job, mx, my, sx, sy, d, tol, TRUE AS is_x, unnest(vx) AS iv,
                           generate_subscripts(vx, 1) - 1 AS slot FROM obs
                    UNION ALL
                    SELECT job, mx, my, sx, sy, d, tol, FALSE, unnest(vy), nx + generate_subscripts(vy, 1) - 1
                    FROM obs),
                weighted AS (
                    SELECT v.job, v.mx, v.my, v.sx, v.sy, v.d, v.tol, v.is_x, v.iv, r.b,
                           {poisson_sql(draw_sql('r.hb', 's.hq'))} AS w
                    FROM vals v JOIN ({slots_sql('SELECT slot FROM vals')}) s ON s.slot = v.slot
                    CROSS JOIN ({replicates_sql(seed, n_resamples)}) r),
                diffs AS (SELECT job, d, tol, {x_mean} - {y_mean} AS m FROM weighted
                          GROUP BY job, mx, my, sx, sy, d, tol, b)
                SELECT job, SUM(CASE WHEN abs(m - d) >= abs(d) - tol THEN 1 ELSE 0 END),
                       quantile_cont(m, {alpha!r}), quantile_cont(m, {1 - alpha!r})
                FROM diffs GROUP BY job""").fetchall()
            for job, hits, lo, hi in rows:
                out[job].update(p=min(1.0, (hits + 1) / (n_resamples + 1)), ci_low=lo, ci_high=hi)
    finally:
        con.close()
    return moments, out
