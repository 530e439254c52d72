-- measure: Compat
-- description: Compatibility: the rank-biased overlap (persistence p) of the ranking with its ideal ranking, the relevant documents by grade with equal grades in the ranking's order, normalised by the ideal ranking's overlap with itself.
-- reference: Clarke, Vtyurina & Smucker 2021 (Assessing top-k preferences, TOIS); ir_measures Compat(p=..., normalize=...) (its compat provider, ir_measures 0.4)
-- param p: prob = 0.95
-- param normalize: choice = True
--   True: 1
--   False: 0
-- rows: overlap
-- aliases: Compat (ir_measures)
-- aggregate: mean
-- range: 0..1
-- example: qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6 => 0.3445887755
-- example: (p=0.5) qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6 => 38/177
-- example: (p=0.5,normalize='False') qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6 => 19/90
-- example: (p=0.5) qrels: q1 d1 1, q1 d2 1, q2 d1 0, q3 d1 1 run: q1 d2 0.9, q1 d1 0.8, q2 d1 0.9 => 1/3
-- note: rows: overlap: one row per depth i = 1..D of the list, D the larger of its length and its relevant count
--   R (num_rel; relevant: graded at least the evaluation's relevance level), with overlap_count, how many
--   documents the list's top i and the ideal ranking's top i share. The ideal ranking is the list's own: the
--   relevant documents by grade, equal grades in the list's order, the unretrieved ones after them. The value is
--   sum w_i overlap_i / i over sum w_i min(i, R) / i (normalize, the ideal's own overlap), or over sum w_i
--   (normalize=False), with w_i = p^(i-1); 0 when the query has no relevant document.
-- note: ir_measures orders the ideal ranking's equal grades by the run's scores, an unretrieved document
--   scoring 0, and ties between those in the order of the qrels file, and breaks the run's score ties by doc
--   id ascending. The same value here needs positive scores (a run with scores <= 0 can place an unretrieved
--   document above a retrieved one in ir_measures' ideal) and, with score ties, ties='docid_asc' and qrels
--   listed by doc id within a query.
-- note: PostgreSQL raises an error where POWER underflows: a weight below e^-700 (1e-304) counts as 0.
-- note: Example 1 (R = 3, D = 4): ideal d3, d1, d4; the tops share 0, 1 (d1), 1, 2 (d1, d3) documents at
--   depths 1..4: (p/2 + p^2/3 + p^3 2/4) / (1 + p 2/2 + p^2 3/3 + p^3 3/4), with p = 0.95 0.34458...; with p = 1/2
--   (19/48) / (59/32) = 38/177 (example 2), and over 1 + p + p^2 + p^3 = 15/8, 19/90 (example 3). Example 4: q1
--   ranks its two relevant documents, equal in grade: its ideal ranking is its own order, 1; q2 has no relevant
--   document and q3 is not ranked: 0 each, the mean is 1/3.
CASE WHEN MAX(num_rel) = 0 THEN 0
  WHEN :normalize = 1 THEN SUM((CASE WHEN (rnk - 1) * LN(:p) < -700 THEN 0 ELSE POWER(:p, rnk - 1) END) * overlap_count / CAST(rnk AS DOUBLE))
    / SUM((CASE WHEN (rnk - 1) * LN(:p) < -700 THEN 0 ELSE POWER(:p, rnk - 1) END) * (CASE WHEN rnk < num_rel THEN rnk ELSE num_rel END) / CAST(rnk AS DOUBLE))
  ELSE SUM((CASE WHEN (rnk - 1) * LN(:p) < -700 THEN 0 ELSE POWER(:p, rnk - 1) END) * overlap_count / CAST(rnk AS DOUBLE))
    / SUM(CASE WHEN (rnk - 1) * LN(:p) < -700 THEN 0 ELSE POWER(:p, rnk - 1) END)
END
