-- measure: Bpref
-- description: trec_eval's bpref: each relevant document scores 1 - min(judged non-relevant above it, R) / min(N, R); unjudged and negatively judged documents are skipped.
-- reference: trec_eval bpref (Buckley & Voorhees 2004)
-- param rel: level
-- aliases: bpref
-- aggregate: mean
-- range: 0..1
-- nonrel_so_far counts judged non-relevant documents (0 <= relevance < level) ranked above; it is > 0
-- only when N > 0, so min(N, R) is never 0 where it is used (NULLIF only keeps engines from erroring).
SUM(
  CASE
    WHEN is_rel = 1 AND nonrel_so_far = 0 THEN 1
    WHEN is_rel = 1 THEN
      1 - CAST(CASE WHEN nonrel_so_far < num_rel THEN nonrel_so_far ELSE num_rel END AS DOUBLE)
        / NULLIF(CASE WHEN num_nonrel < num_rel THEN num_nonrel ELSE num_rel END, 0)
    ELSE 0
  END
) / NULLIF(num_rel, 0)
