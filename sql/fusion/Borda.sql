-- fusion: Borda
-- description: Borda count: each run gives each of the query's candidates (documents any run ranks) points, C - rank + 1 to those it ranks and (C - n + 1) / 2 to the others (C candidates, n ranked by the run).
-- reference: Aslam & Montague 2001, Models for Metasearch (SIGIR); ranx fuse(method="bordafuse")
-- aliases: bordafuse (ranx), borda_count
-- example: runs: q1 d1 3, q1 d2 2, q1 d3 1 | q1 d2 0.9, q1 d4 0.5 => q1 d2 7, q1 d1 11/2, q1 d4 4, q1 d3 7/2
-- note: the rows are the runs that rank the document; the points of the runs that do not are what every run
--   would give an unranked document, (runs * (C + 1) - ranked) / 2 with ranked the query's rows, less what the
--   ranking runs would (SUM(C + 1 - n) / 2). Here C = 4: d1 gets 4 from the first run and (4 - 2 + 1) / 2 = 3/2
--   from the second.
SUM(candidates - rnk + 1) + CAST(runs * (candidates + 1) - ranked - SUM(candidates + 1 - list_n) AS DOUBLE) / 2
