-- measure: GMBpref
-- description: Geometric mean of bpref over queries; per query it is Bpref, floored at 1e-5 when aggregated.
-- reference: trec_eval gm_bpref
-- param rel: level
-- aliases: gm_bpref (trec_eval)
-- aggregate: geometric
-- range: 0..1
-- example: qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1, q2 d7 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6, q2 d8 0.5, q2 d7 0.4 => 0.5773502692
-- example: qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1, q2 d7 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6, q2 d8 0.5 => 0.001825741858
-- note: The body is Bpref's (see Bpref.sql); trec_eval prints gm_bpref only as a summary, exp(mean(ln(max(bpref, 1e-5)))).
SUM(
  CASE
    WHEN is_rel = 1 AND nonrel_so_far = 0 THEN 1
    WHEN is_rel = 1 THEN
      1 - CAST(CASE WHEN nonrel_so_far < num_rel THEN nonrel_so_far ELSE num_rel END AS DOUBLE)
        / NULLIF(CASE WHEN num_nonrel < num_rel THEN num_nonrel ELSE num_rel END, 0)
    ELSE 0
  END
) / NULLIF(num_rel, 0)
