-- measure: PrefsAvgJGRnonrel
-- description: prefs_avgjg with each judgment group's non-relevant documents (level 0) made as many as its relevant ones, R: with fewer, R - N imagined ones fulfil every retrieved relevant document; with more, only the first R count.
-- reference: trec_eval 10.0 prefs_avgjg_Rnonrel (-R prefs, -R qrels_prefs)
-- aliases: prefs_avgjg_Rnonrel (trec_eval)
-- rows: preferences
-- aggregate: mean
-- range: 0..1
-- example: qrels: q1 d1 2, q1 d2 1, q1 d3 0, q1 d4 0 run: q1 d2 0.9, q1 d1 0.8, q1 d3 0.7 => 4/5
-- example: qrels: q1 d1 1, q1 d2 0, q1 d3 0, q1 d4 0 run: q1 d1 0.9, q1 d2 0.8, q1 d3 0.7 => 1/4
-- note: The example's one judgment group (ordinary qrels) prefers d1 (grade 2) and d2 (1) to d3 and d4 (0),
--   and d1 to d2: 5 preferences. The run ranks d2, d1, d3: d1 > d2 fails; d1 > d3 and d2 > d3 are fulfilled
--   with both retrieved; d1 > d4 and d2 > d4 with only the better one retrieved.
-- note: First example: R = 2 relevant (d1, d2), N = 2 non-relevant: the plain ratio, 4/5. Second: R = 1 < N = 3,
--   so only the first R non-relevant document in trec_eval's order (d2) is kept, and trec_eval counts every
--   document of the group (d1, d2, d3, d4) against it: only d1, above d2, fulfils: 1/4. That count also
--   pairs the non-relevant documents with each other (trec_eval's recalculation does), and is kept as is.
CASE WHEN SUM(CASE WHEN jg_first = 1 AND rn IS NULL THEN 1 ELSE 0 END) > 0 THEN 0
  ELSE SUM(CASE WHEN jg_first = 1 THEN rn ELSE 0 END) / MAX(num_jgs) END
