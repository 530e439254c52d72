-- measure: Bpref
-- description: trec_eval's bpref: each relevant document scores 1 - min(judged non-relevant above it, R) / min(N, R); unjudged and negatively judged documents are skipped.
-- reference: trec_eval bpref (Buckley & Voorhees 2004); ranx bpref (see the note)
-- param rel: level
-- aliases: bpref (trec_eval), bpref (ranx)
-- aggregate: mean
-- range: 0..1
-- example: qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1, q2 d7 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6, q2 d8 0.5, q2 d7 0.4 => 2/3
-- note: nonrel_so_far counts judged non-relevant documents (0 <= relevance < level) ranked above; it is > 0
--   only when N > 0, so min(N, R) is never 0 where it is used (NULLIF only keeps engines from erroring).
-- note: ranx's bpref (0.3.21) is this formula with three differences: a query with no judged non-relevant
--   document (N = 0) or no relevant one (R = 0) is NaN there (here: each relevant document retrieved scores
--   1 when N = 0, and R = 0 gives 0); and ranx counts negatively judged documents as judged non-relevant
--   (in N and above a relevant document), where trec_eval and this measure skip them. The name `bpref` is
--   trec_eval's value.
SUM(
  CASE
    WHEN is_rel = 1 AND nonrel_so_far = 0 THEN 1
    WHEN is_rel = 1 THEN
      1 - CAST(CASE WHEN nonrel_so_far < num_rel THEN nonrel_so_far ELSE num_rel END AS DOUBLE)
        / NULLIF(CASE WHEN num_nonrel < num_rel THEN num_nonrel ELSE num_rel END, 0)
    ELSE 0
  END
) / NULLIF(num_rel, 0)
