-- sqlmetrics: ranked-retrieval evaluation, rendered for clickhouse
-- measures: ap = AP, bpref = Bpref, cg = CG, contextprecision = ContextPrecision, dcg = DCG, err = ERR, f1 = F1, firstrank = FirstRank, gmap = GMAP, hits = Hits, iprec_at_0_5 = IPrec@0.5, judged = Judged, numq = NumQ, numrel = NumRel, numrelret = NumRelRet, numret = NumRet, p_at_10 = P@10, r_at_10 = R@10, rbp = RBP, rr = RR, rprec = Rprec, setf = SetF, setp = SetP, setr = SetR, success = Success, ndcg = nDCG
-- qrels: qrels (query_id=query_id, doc_id=doc_id, relevance=relevance)
-- run: run (query_id=query_id, doc_id=doc_id, score=score)
-- options: queries='qrels', ties='docid_desc', relevance_level=1, score_precision='float64'
-- one row per evaluation: ap, bpref, cg, contextprecision, dcg, err, f1, firstrank, gmap, hits, iprec_at_0_5, judged, numq, numrel, numrelret, numret, p_at_10, r_at_10, rbp, rr, rprec, setf, setp, setr, success, ndcg
WITH judgments AS (
  SELECT
    CAST(query_id AS Nullable(String)) AS query_id,
    CAST(doc_id AS Nullable(String)) AS doc_id,
    CAST(relevance AS Nullable(Float64)) AS relevance
  FROM qrels
), run_rows AS (
  SELECT
    CAST(query_id AS Nullable(String)) AS query_id,
    CAST(doc_id AS Nullable(String)) AS doc_id,
    CAST(score AS Nullable(Float64)) AS score
  FROM run
), ideal AS (
  SELECT
    query_id,
    relevance,
    ROW_NUMBER() OVER (PARTITION BY query_id ORDER BY relevance DESC, doc_id DESC) AS ideal_rnk
  FROM judgments
), query_stats AS (
  SELECT
    query_id,
    SUM(CASE WHEN relevance >= 1 THEN 1 ELSE 0 END) AS num_rel,
    SUM(CASE WHEN relevance >= 0 AND relevance < 1 THEN 1 ELSE 0 END) AS num_nonrel,
    SUM(
      CASE
        WHEN TRUE AND relevance > 0
        THEN relevance / (
          LN(ideal_rnk + 1) / LN(2)
        )
        ELSE 0
      END
    ) AS idcg_2
  FROM ideal
  GROUP BY
    query_id
), collection AS (
  SELECT
    MAX(relevance) AS max_relevance
  FROM judgments
), judged_run AS (
  SELECT
    run_rows.query_id AS query_id,
    run_rows.doc_id AS doc_id,
    run_rows.score AS score,
    judgments.relevance AS relevance
  FROM run_rows
  LEFT JOIN judgments
    ON run_rows.query_id = judgments.query_id AND run_rows.doc_id = judgments.doc_id
  WHERE
    run_rows.query_id IN (
      SELECT
        query_id
      FROM query_stats
    )
), ranking AS (
  SELECT
    query_id,
    relevance,
    ROW_NUMBER() OVER (PARTITION BY query_id ORDER BY score DESC, doc_id DESC) AS rnk,
    COALESCE(lead(1) OVER (PARTITION BY query_id ORDER BY score DESC, doc_id DESC), 0) AS has_next
  FROM judged_run
), list_ends AS (
  SELECT
    query_id,
    relevance,
    rnk,
    MAX(rnk) OVER (PARTITION BY query_id) AS num_ret
  FROM ranking
  WHERE
    NOT (
      relevance IS NULL
    ) OR rnk = 1 OR has_next = 0
), judged_ranking AS (
  SELECT
    query_id,
    relevance,
    rnk,
    num_ret,
    CASE WHEN relevance >= 1 THEN 1 ELSE 0 END AS is_rel,
    SUM(CASE WHEN relevance >= 1 THEN 1 ELSE 0 END) OVER (
      PARTITION BY query_id
      ORDER BY rnk ASC NULLS FIRST
      ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
    ) AS rel_so_far,
    SUM(CASE WHEN relevance >= 0 AND relevance < 1 THEN 1 ELSE 0 END) OVER (
      PARTITION BY query_id
      ORDER BY rnk ASC NULLS FIRST
      ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
    ) AS nonrel_so_far,
    EXP(
      COALESCE(
        SUM(
          LN(
            1 - (
              POWER(
                2,
                CASE
                  WHEN relevance > max_relevance
                  THEN max_relevance
                  WHEN relevance > 0
                  THEN relevance
                  ELSE 0
                END
              ) - 1
            ) / POWER(2, max_relevance)
          )
        ) OVER (
          PARTITION BY query_id
          ORDER BY rnk ASC NULLS FIRST
          ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
        ),
        0
      )
    ) AS err_reach_1
  FROM list_ends
  CROSS JOIN collection
  WHERE
    NOT (
      relevance IS NULL
    ) OR rnk = 1
), lists AS (
  SELECT
    query_id
  FROM query_stats
), list_values AS (
  SELECT
    lists.query_id AS query_id,
    COALESCE(
      SUM(CASE WHEN is_rel = 1 THEN CAST(rel_so_far AS Nullable(Float64)) / rnk ELSE 0 END) / nullIf(num_rel, 0),
      0
    ) AS ap,
    COALESCE(
      SUM(
        CASE
          WHEN is_rel = 1 AND nonrel_so_far = 0
          THEN 1
          WHEN is_rel = 1
          THEN 1 - CAST(CASE WHEN nonrel_so_far < num_rel THEN nonrel_so_far ELSE num_rel END AS Nullable(Float64)) / nullIf(CASE WHEN num_nonrel < num_rel THEN num_nonrel ELSE num_rel END, 0)
          ELSE 0
        END
      ) / nullIf(num_rel, 0),
      0
    ) AS bpref,
    COALESCE(SUM(CASE WHEN TRUE AND relevance > 0 THEN relevance ELSE 0 END), 0) AS cg,
    COALESCE(
      SUM(CASE WHEN is_rel = 1 THEN CAST(rel_so_far AS Nullable(Float64)) / rnk ELSE 0 END) / nullIf(SUM(is_rel), 0),
      0
    ) AS contextprecision,
    COALESCE(
      SUM(
        CASE
          WHEN TRUE AND relevance > 0
          THEN relevance / (
            LN(rnk + 1) / LN(2)
          )
          ELSE 0
        END
      ),
      0
    ) AS dcg,
    COALESCE(
      SUM(
        err_reach_1 * (
          POWER(
            2,
            CASE
              WHEN relevance > max_relevance
              THEN max_relevance
              WHEN relevance > 0
              THEN relevance
              ELSE 0
            END
          ) - 1
        ) / POWER(2, max_relevance) / rnk
      ),
      0
    ) AS err,
    COALESCE(2 * CAST(SUM(is_rel) AS Nullable(Float64)) / nullIf(MAX(num_ret) + num_rel, 0), 0) AS f1,
    CAST(MIN(CASE WHEN is_rel = 1 THEN rnk END) AS Nullable(Float64)) AS firstrank,
    COALESCE(
      SUM(CASE WHEN is_rel = 1 THEN CAST(rel_so_far AS Nullable(Float64)) / rnk ELSE 0 END) / nullIf(num_rel, 0),
      0
    ) AS gmap,
    COALESCE(CAST(SUM(is_rel) AS Nullable(Float64)), 0) AS hits,
    COALESCE(
      MAX(
        CASE
          WHEN rel_so_far >= FLOOR(CAST(0.5 AS Nullable(Float64)) * num_rel + 0.9)
          THEN CAST(rel_so_far AS Nullable(Float64)) / rnk
        END
      ),
      0
    ) AS iprec_at_0_5,
    COALESCE(
      CAST(SUM(CASE WHEN NOT (
        relevance IS NULL
      ) THEN 1 ELSE 0 END) AS Nullable(Float64)) / nullIf(MAX(num_ret), 0),
      0
    ) AS judged,
    COALESCE(CAST(1 AS Nullable(Float64)), 0) AS numq,
    COALESCE(CAST(num_rel AS Nullable(Float64)), 0) AS numrel,
    COALESCE(CAST(SUM(is_rel) AS Nullable(Float64)), 0) AS numrelret,
    COALESCE(CAST(MAX(num_ret) AS Nullable(Float64)), 0) AS numret,
    COALESCE(CAST(SUM(CASE WHEN rnk <= 10 THEN is_rel ELSE 0 END) AS Nullable(Float64)) / 10, 0) AS p_at_10,
    COALESCE(
      CAST(SUM(CASE WHEN rnk <= 10 THEN is_rel ELSE 0 END) AS Nullable(Float64)) / nullIf(num_rel, 0),
      0
    ) AS r_at_10,
    COALESCE((
      1 - 0.8
    ) * SUM((
      is_rel
    ) * POWER(0.8, rnk - 1)), 0) AS rbp,
    COALESCE(1 / CAST(MIN(CASE WHEN is_rel = 1 THEN rnk END) AS Nullable(Float64)), 0) AS rr,
    COALESCE(
      CAST(SUM(CASE WHEN rnk <= num_rel THEN is_rel ELSE 0 END) AS Nullable(Float64)) / nullIf(num_rel, 0),
      0
    ) AS rprec,
    COALESCE(
      (
        1 + 1
      ) * CAST(SUM(is_rel) AS Nullable(Float64)) / nullIf(1 * num_rel + MAX(num_ret), 0),
      0
    ) AS setf,
    COALESCE(CAST(SUM(is_rel) AS Nullable(Float64)) / nullIf(MAX(num_ret), 0), 0) AS setp,
    COALESCE(CAST(SUM(is_rel) AS Nullable(Float64)) / nullIf(num_rel, 0), 0) AS setr,
    COALESCE(CAST(MAX(is_rel) AS Nullable(Float64)), 0) AS success,
    COALESCE(
      SUM(
        CASE
          WHEN TRUE AND relevance > 0
          THEN relevance / (
            LN(rnk + 1) / LN(2)
          )
          ELSE 0
        END
      ) / nullIf(idcg_2, 0),
      0
    ) AS ndcg
  FROM lists
  JOIN query_stats
    ON lists.query_id = query_stats.query_id
  CROSS JOIN collection
  LEFT JOIN judged_ranking
    ON lists.query_id = judged_ranking.query_id
  GROUP BY
    lists.query_id,
    query_stats.num_rel,
    query_stats.num_nonrel,
    query_stats.idcg_2,
    collection.max_relevance
)
SELECT
  AVG(ap) AS ap,
  AVG(bpref) AS bpref,
  AVG(cg) AS cg,
  AVG(contextprecision) AS contextprecision,
  AVG(dcg) AS dcg,
  AVG(err) AS err,
  AVG(f1) AS f1,
  AVG(firstrank) AS firstrank,
  EXP(AVG(LN(CASE WHEN gmap > 0.00001 THEN gmap ELSE 0.00001 END))) AS gmap,
  AVG(hits) AS hits,
  AVG(iprec_at_0_5) AS iprec_at_0_5,
  AVG(judged) AS judged,
  SUM(numq) AS numq,
  SUM(numrel) AS numrel,
  SUM(numrelret) AS numrelret,
  SUM(numret) AS numret,
  AVG(p_at_10) AS p_at_10,
  AVG(r_at_10) AS r_at_10,
  AVG(rbp) AS rbp,
  AVG(rr) AS rr,
  AVG(rprec) AS rprec,
  AVG(setf) AS setf,
  AVG(setp) AS setp,
  AVG(setr) AS setr,
  AVG(success) AS success,
  AVG(ndcg) AS ndcg
FROM list_values
SETTINGS join_use_nulls = 1
