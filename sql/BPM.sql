-- measure: BPM
-- description: Bejeweled player model (static), as C/W/L: the user reads down to the first rank where the gain so far reaches T, or to rank k, whichever comes first, and the value is the gain read per document read.
-- reference: Zhang et al. 2017; ir_measures BPM(T=..., min_rel=..., max_rel=...)@k (its cwl_eval provider, cwl-eval 1.0.12)
-- param k: cutoff
-- param T: number = 1
-- param min_rel: level = 0
-- param max_rel: grade = max
-- at: k
-- aggregate: mean
-- range: 0..1
-- example: (max_rel=2)@4 qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6 => 3/8
-- example: (max_rel=2)@2 qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6 => 1/4
-- example: (max_rel=2,T=0.5)@4 qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6 => 1/2
-- example: (max_rel=2,min_rel=1)@4 qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6 => 1/4
-- note: Gains as ir_measures' cwl_eval provider makes them: grade g (negative as 0) clipped to [min_rel, max_rel],
--   gain = (g - min_rel) / (max_rel - min_rel); an unjudged document gains 0 (cwl_eval's lower bound, its
--   reported value). ir_measures requires max_rel; here it defaults to 'max', the largest grade in
--   the whole qrels (all queries), so an ir_measures name gives ir_measures' value and a bare one works too.
--   cwl_eval pads or cuts every ranking to 1000 positions, so ranks past 1000 count for nothing.
--   cwl_gain is that gain on each row (a row value among the running ones). With max_rel <= min_rel
--   (max_rel='max' can be) every gain is 0, as is the value; ir_measures refuses such parameters.
-- note: cwl_eval's continuation is 1 while the gain so far (through rank i) is below T and i < k, else 0, so
--   the reader stops at s = min(k, 1000, first rank where the gain so far reaches T) and the value is (gain
--   in the top s) / s. A row counts when the gain above it is below T. Gains are summed in units of
--   1 / (max_rel - min_rel), exact for integer grades, so that "reaches T" is decided exactly; cwl_eval
--   sums float gains, which can land just below T (e.g. six gains of 1/3 against T = 2), and then differs.
-- note: Example 1: gains 1/2 (d1), 0, 0, 1 (d3); T = 1 is reached at rank 4 = k: (1/2 + 1)/4. Example 3:
--   T = 0.5 is reached at rank 1: (1/2)/1. Example 4: min_rel = 1: gains 0, 0, 0, 1: 1/4.
-- window bpm_units_before: COALESCE(SUM(CASE WHEN relevance IS NULL OR :max_rel <= :min_rel THEN 0 WHEN CASE WHEN relevance > 0 THEN relevance ELSE 0 END >= :max_rel THEN :max_rel - :min_rel WHEN CASE WHEN relevance > 0 THEN relevance ELSE 0 END <= :min_rel THEN 0 ELSE CASE WHEN relevance > 0 THEN relevance ELSE 0 END - :min_rel END) OVER (ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)
-- window bpm_units_through: SUM(CASE WHEN relevance IS NULL OR :max_rel <= :min_rel THEN 0 WHEN CASE WHEN relevance > 0 THEN relevance ELSE 0 END >= :max_rel THEN :max_rel - :min_rel WHEN CASE WHEN relevance > 0 THEN relevance ELSE 0 END <= :min_rel THEN 0 ELSE CASE WHEN relevance > 0 THEN relevance ELSE 0 END - :min_rel END) OVER (ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
-- window cwl_gain: (CASE WHEN relevance IS NULL OR :max_rel <= :min_rel THEN 0 WHEN CASE WHEN relevance > 0 THEN relevance ELSE 0 END >= :max_rel THEN :max_rel - :min_rel WHEN CASE WHEN relevance > 0 THEN relevance ELSE 0 END <= :min_rel THEN 0 ELSE CASE WHEN relevance > 0 THEN relevance ELSE 0 END - :min_rel END) / CAST(CASE WHEN :max_rel > :min_rel THEN :max_rel - :min_rel ELSE 1 END AS DOUBLE)
SUM(CASE WHEN rnk <= :k AND rnk <= 1000 AND bpm_units_before < :T * CAST(CASE WHEN :max_rel > :min_rel THEN :max_rel - :min_rel ELSE 1 END AS DOUBLE) THEN cwl_gain ELSE 0 END)
  / COALESCE(
    MIN(CASE WHEN rnk <= :k AND rnk <= 1000 AND bpm_units_through >= :T * CAST(CASE WHEN :max_rel > :min_rel THEN :max_rel - :min_rel ELSE 1 END AS DOUBLE) THEN rnk END),
    CASE WHEN :k < 1000 THEN :k ELSE 1000 END)
