-- measure: AP
-- description: Average precision: the sum of precision at each relevant document within the top k, divided by R (not by k).
-- reference: trec_eval map, map_cut_k; ranx map@k; ir_measures AP@k
-- param k: cutoff = none
-- param rel: level
-- at: k
-- aliases: map, map_cut_{k}, map_cut.{k}, map@{k}
-- aggregate: mean
-- range: 0..1
SUM(CASE WHEN rnk <= :k AND is_rel = 1 THEN CAST(rel_so_far AS DOUBLE) / rnk ELSE 0 END) / NULLIF(num_rel, 0)
