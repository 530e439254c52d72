-- measure: GMAP
-- description: Geometric mean of average precision over queries; per query it is AP, floored at 1e-5 when aggregated.
-- reference: trec_eval gm_map
-- param rel: level
-- aliases: gm_map (trec_eval)
-- aggregate: geometric
-- range: 0..1
-- example: qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1, q2 d7 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6, q2 d8 0.5, q2 d7 0.4 => 1/2
-- example: qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1, q2 d7 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6, q2 d8 0.5 => 0.0022360680
SUM(CASE WHEN is_rel = 1 THEN CAST(rel_so_far AS DOUBLE) / rnk ELSE 0 END) / NULLIF(num_rel, 0)
