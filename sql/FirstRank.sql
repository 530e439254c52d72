-- measure: FirstRank
-- description: Position of the first relevant document ("mean rank"; lower is better); undefined when none is retrieved, and the mean skips those queries.
-- reference: seed 002 "MR"
-- param rel: level
-- aggregate: mean
-- better: lower
-- empty: null
-- range: 1..
CAST(MIN(CASE WHEN is_rel = 1 THEN rnk END) AS DOUBLE)
