-- fusion: CombMAX
-- description: The highest of a document's normalised scores; a run that does not rank it counts as -1e9 (ranx).
-- reference: Fox & Shaw 1993, Combination of Multiple Searches (TREC-2); ranx fuse(method="max")
-- aliases: max (ranx), comb_max (ranx)
-- example: (norm='none') runs: q1 d1 3, q1 d2 2, q1 d3 1 | q1 d2 0.9, q1 d4 0.5 => q1 d1 3, q1 d2 2, q1 d3 1, q1 d4 0.5
-- example: (norm='none') runs: q1 d1 -2e9, q1 d2 1 | q1 d2 2 => q1 d2 2, q1 d1 -1000000000
-- note: ranx takes the maximum over every run, with -1e9 for a run that does not rank the document: only a
--   score below -1e9 shows it (second example).
CASE WHEN COUNT(*) < runs AND MAX(score) < -1e9 THEN -1e9 ELSE MAX(score) END
