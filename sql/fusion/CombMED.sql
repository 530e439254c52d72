-- fusion: CombMED
-- description: The median of a document's normalised scores over the runs that rank it (a missing run does not count).
-- reference: Fox & Shaw 1993, Combination of Multiple Searches (TREC-2); ranx fuse(method="med")
-- aliases: med (ranx), comb_med (ranx)
-- example: (norm='none') runs: q1 d1 3, q1 d2 2, q1 d3 1 | q1 d2 0.9, q1 d4 0.5 | q1 d2 4, q1 d1 0.2 => q1 d2 2, q1 d1 1.6, q1 d3 1, q1 d4 0.5
-- note: the middle score (doc_pos) of an odd count, the mean of the two middle ones of an even count, as
--   numpy's median: 2 * doc_pos falls between doc_runs and doc_runs + 2 exactly for those.
AVG(CASE WHEN 2 * doc_pos BETWEEN doc_runs AND doc_runs + 2 THEN score END)
