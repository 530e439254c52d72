-- measure: SetP
-- description: Set precision: relevant documents retrieved, divided by the number retrieved.
-- reference: trec_eval set_P; ranx precision (no cutoff)
-- param rel: level
-- aliases: set_P, precision
-- aggregate: mean
-- range: 0..1
CAST(SUM(is_rel) AS DOUBLE) / NULLIF(MAX(num_ret), 0)
