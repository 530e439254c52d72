-- fusion: CombANZ
-- description: The mean of a document's normalised scores over the runs that rank it (CombSUM / number of runs ranking it).
-- reference: Fox & Shaw 1993, Combination of Multiple Searches (TREC-2); ranx fuse(method="anz")
-- aliases: anz (ranx), comb_anz (ranx)
-- example: (norm='none') runs: q1 d1 3, q1 d2 2, q1 d3 1 | q1 d2 0.9, q1 d4 0.5 => q1 d1 3, q1 d2 1.45, q1 d3 1, q1 d4 0.5
AVG(score)
