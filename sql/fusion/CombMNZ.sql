-- fusion: CombMNZ
-- description: CombSUM times the number of runs that rank the document.
-- reference: Fox & Shaw 1993, Combination of Multiple Searches (TREC-2); ranx fuse(method="mnz")
-- aliases: mnz (ranx), comb_mnz (ranx)
-- example: (norm='none') runs: q1 d1 3, q1 d2 2, q1 d3 1 | q1 d2 0.9, q1 d4 0.5 => q1 d2 5.8, q1 d1 3, q1 d3 1, q1 d4 0.5
SUM(score) * COUNT(*)
