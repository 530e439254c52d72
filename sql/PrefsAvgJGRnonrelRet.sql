-- measure: PrefsAvgJGRnonrelRet
-- description: prefs_avgjg_Rnonrel over retrieved documents: R and N count the retrieved relevant and non-relevant documents.
-- reference: trec_eval 10.0 prefs_avgjg_Rnonrel_ret (-R prefs, -R qrels_prefs)
-- aliases: prefs_avgjg_Rnonrel_ret (trec_eval)
-- rows: preferences
-- aggregate: mean
-- range: 0..1
-- example: qrels: q1 d1 2, q1 d2 1, q1 d3 0, q1 d4 0 run: q1 d2 0.9, q1 d1 0.8, q1 d3 0.7 => 4/5
-- example: qrels: q1 d1 1, q1 d2 0, q1 d3 0, q1 d4 0 run: q1 d1 0.9, q1 d2 0.8, q1 d3 0.7 => 1/3
-- note: The example's one judgment group (ordinary qrels) prefers d1 (grade 2) and d2 (1) to d3 and d4 (0),
--   and d1 to d2: 5 preferences. The run ranks d2, d1, d3: d1 > d2 fails; d1 > d3 and d2 > d3 are fulfilled
--   with both retrieved; d1 > d4 and d2 > d4 with only the better one retrieved.
-- note: First example: R = 2 retrieved relevant, N = 1 retrieved non-relevant (d3): (2 fulfilled + 2 x (R - N))
--   / (3 with both retrieved + 2 relevant x (R - N)) = 4/5. Second: R = 1 < N = 2 (d2, d3): the retrieved
--   documents d1, d2, d3 against the first retrieved non-relevant one, d2: only d1 fulfils, 1/3.
CASE WHEN SUM(CASE WHEN jg_first = 1 AND rn_ret IS NULL THEN 1 ELSE 0 END) > 0 THEN 0
  ELSE SUM(CASE WHEN jg_first = 1 THEN rn_ret ELSE 0 END) / MAX(num_jgs) END
