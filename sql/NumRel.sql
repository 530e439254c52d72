-- measure: NumRel
-- description: Number of relevant judgments R (summed over queries), whether or not they were retrieved.
-- reference: trec_eval num_rel
-- param rel: level
-- aliases: num_rel
-- aggregate: sum
-- range: 0..
CAST(num_rel AS DOUBLE)
