-- fusion: WSum
-- description: The weighted sum of a document's normalised scores (a run that does not rank it adds 0).
-- reference: ranx fuse(method="wsum"); weights found by optimize_fusion's grid search
-- param weights: weights
-- aliases: wsum (ranx), weighted_sum (ranx)
-- example: (norm='none', weights=[0.25, 0.75]) runs: q1 d1 3, q1 d2 2, q1 d3 1 | q1 d2 0.9, q1 d4 0.5 => q1 d2 47/40, q1 d1 3/4, q1 d4 3/8, q1 d3 1/4
SUM(weight * score)
