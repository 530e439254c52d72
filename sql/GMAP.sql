-- measure: GMAP
-- description: Geometric mean of average precision over queries; per query it is AP, floored at 1e-5 when aggregated.
-- reference: trec_eval gm_map
-- param rel: level
-- aliases: gm_map
-- aggregate: geometric
-- range: 0..1
SUM(CASE WHEN is_rel = 1 THEN CAST(rel_so_far AS DOUBLE) / rnk ELSE 0 END) / NULLIF(num_rel, 0)
