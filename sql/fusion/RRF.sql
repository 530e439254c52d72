-- fusion: RRF
-- description: Reciprocal rank fusion: the sum of 1 / (k + rank) over the runs that rank the document.
-- reference: Cormack, Clarke & Buettcher 2009, Reciprocal rank fusion outperforms Condorcet and individual rank learning methods (SIGIR); ranx fuse(method="rrf")
-- param k: number = 60
-- aliases: rrf (ranx), reciprocal_rank_fusion
-- example: (k=1) runs: q1 d1 3, q1 d2 2, q1 d3 1 | q1 d2 0.9, q1 d4 0.5 => q1 d2 5/6, q1 d1 1/2, q1 d4 1/3, q1 d3 1/4
-- example: runs: q1 d1 3, q1 d2 2, q1 d3 1 | q1 d2 0.9, q1 d4 0.5 => q1 d2 123/3782, q1 d1 1/61, q1 d4 1/62, q1 d3 1/63
-- note: the rank is the position in the run's own list (scores descending, ties by document id descending);
--   the normalisation changes no rank, so it changes nothing here.
SUM(1 / CAST(:k + rnk AS DOUBLE))
