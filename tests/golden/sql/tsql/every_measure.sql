-- sqlmetrics: ranked-retrieval evaluation, rendered for tsql
-- measures: ap = AP, bpref = Bpref, cg = CG, contextprecision = ContextPrecision, dcg = DCG, err = ERR, f1 = F1, firstrank = FirstRank, gmap = GMAP, hits = Hits, iprec_at_0_5 = IPrec@0.5, judged = Judged, numq = NumQ, numrel = NumRel, numrelret = NumRelRet, numret = NumRet, p_at_10 = P@10, r_at_10 = R@10, rbp = RBP, rr = RR, rprec = Rprec, setf = SetF, setp = SetP, setr = SetR, success = Success, ndcg = nDCG
-- qrels: qrels (query_id=query_id, doc_id=doc_id, relevance=relevance)
-- run: run (query_id=query_id, doc_id=doc_id, score=score)
-- options: queries='qrels', ties='docid_desc', relevance_level=1, score_precision='float64'
-- one row per evaluation: ap, bpref, cg, contextprecision, dcg, err, f1, firstrank, gmap, hits, iprec_at_0_5, judged, numq, numrel, numrelret, numret, p_at_10, r_at_10, rbp, rr, rprec, setf, setp, setr, success, ndcg
WITH judgments AS (
  SELECT
    CAST(query_id AS NVARCHAR(MAX)) COLLATE Latin1_General_BIN2 AS query_id,
    CAST(doc_id AS NVARCHAR(MAX)) COLLATE Latin1_General_BIN2 AS doc_id,
    CAST(relevance AS FLOAT) AS relevance
  FROM qrels
), run_rows AS (
  SELECT
    CAST(query_id AS NVARCHAR(MAX)) COLLATE Latin1_General_BIN2 AS query_id,
    CAST(doc_id AS NVARCHAR(MAX)) COLLATE Latin1_General_BIN2 AS doc_id,
    CAST(score AS FLOAT) AS score
  FROM run
), ideal AS (
  SELECT
    query_id AS query_id,
    relevance AS relevance,
    ROW_NUMBER() OVER (PARTITION BY query_id ORDER BY relevance DESC, doc_id DESC) AS ideal_rnk
  FROM judgments
), query_stats AS (
  SELECT
    query_id AS query_id,
    SUM(CASE WHEN relevance >= 1 THEN 1 ELSE 0 END) AS num_rel,
    SUM(CASE WHEN relevance >= 0 AND relevance < 1 THEN 1 ELSE 0 END) AS num_nonrel,
    SUM(
      CASE
        WHEN (1 = 1) AND relevance > 0
        THEN CAST(relevance AS FLOAT) / (
          CAST(LOG(ideal_rnk + 1) AS FLOAT) / LOG(2)
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
    query_id AS query_id,
    relevance AS relevance,
    ROW_NUMBER() OVER (PARTITION BY query_id ORDER BY score DESC, doc_id DESC) AS rnk,
    COALESCE(LEAD(1) OVER (PARTITION BY query_id ORDER BY score DESC, doc_id DESC), 0) AS has_next
  FROM judged_run
), list_ends AS (
  SELECT
    query_id AS query_id,
    relevance AS relevance,
    rnk AS rnk,
    MAX(rnk) OVER (PARTITION BY query_id) AS num_ret
  FROM ranking
  WHERE
    NOT relevance IS NULL OR rnk = 1 OR has_next = 0
), judged_ranking AS (
  SELECT
    query_id AS query_id,
    relevance AS relevance,
    rnk AS rnk,
    num_ret AS num_ret,
    CASE WHEN relevance >= 1 THEN 1 ELSE 0 END AS is_rel,
    SUM(CASE WHEN relevance >= 1 THEN 1 ELSE 0 END) OVER (
      PARTITION BY query_id
      ORDER BY rnk ASC
      ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
    ) AS rel_so_far,
    SUM(CASE WHEN relevance >= 0 AND relevance < 1 THEN 1 ELSE 0 END) OVER (
      PARTITION BY query_id
      ORDER BY rnk ASC
      ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
    ) AS nonrel_so_far,
    EXP(
      COALESCE(
        SUM(
          LOG(
            1 - CAST((
              POWER(
                CAST(2 AS FLOAT),
                CASE
                  WHEN relevance > max_relevance
                  THEN max_relevance
                  WHEN relevance > 0
                  THEN relevance
                  ELSE 0
                END
              ) - 1
            ) AS FLOAT) / POWER(CAST(2 AS FLOAT), max_relevance)
          )
        ) OVER (
          PARTITION BY query_id
          ORDER BY rnk ASC
          ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
        ),
        0
      )
    ) AS err_reach_1
  FROM list_ends
  CROSS JOIN collection
  WHERE
    NOT relevance IS NULL OR rnk = 1
), lists AS (
  SELECT
    query_id AS query_id
  FROM query_stats
), list_values AS (
  SELECT
    lists.query_id AS query_id,
    COALESCE(
      CAST(SUM(CASE WHEN is_rel = 1 THEN CAST(rel_so_far AS FLOAT) / rnk ELSE 0 END) AS FLOAT) / NULLIF(num_rel, 0),
      0
    ) AS ap,
    COALESCE(
      CAST(SUM(
        CASE
          WHEN is_rel = 1 AND nonrel_so_far = 0
          THEN 1
          WHEN is_rel = 1
          THEN 1 - CAST(CASE WHEN nonrel_so_far < num_rel THEN nonrel_so_far ELSE num_rel END AS FLOAT) / NULLIF(CASE WHEN num_nonrel < num_rel THEN num_nonrel ELSE num_rel END, 0)
          ELSE 0
        END
      ) AS FLOAT) / NULLIF(num_rel, 0),
      0
    ) AS bpref,
    COALESCE(SUM(CASE WHEN (1 = 1) AND relevance > 0 THEN relevance ELSE 0 END), 0) AS cg,
    COALESCE(
      CAST(SUM(CASE WHEN is_rel = 1 THEN CAST(rel_so_far AS FLOAT) / rnk ELSE 0 END) AS FLOAT) / NULLIF(SUM(is_rel), 0),
      0
    ) AS contextprecision,
    COALESCE(
      SUM(
        CASE
          WHEN (1 = 1) AND relevance > 0
          THEN CAST(relevance AS FLOAT) / (
            CAST(LOG(rnk + 1) AS FLOAT) / LOG(2)
          )
          ELSE 0
        END
      ),
      0
    ) AS dcg,
    COALESCE(
      SUM(
        CAST(CAST(err_reach_1 * (
          POWER(
            CAST(2 AS FLOAT),
            CASE
              WHEN relevance > max_relevance
              THEN max_relevance
              WHEN relevance > 0
              THEN relevance
              ELSE 0
            END
          ) - 1
        ) AS FLOAT) / POWER(CAST(2 AS FLOAT), max_relevance) AS FLOAT) / rnk
      ),
      0
    ) AS err,
    COALESCE(
      CAST(2 * CAST(SUM(is_rel) AS FLOAT) AS FLOAT) / NULLIF(MAX(num_ret) + num_rel, 0),
      0
    ) AS f1,
    CAST(MIN(CASE WHEN is_rel = 1 THEN rnk END) AS FLOAT) AS firstrank,
    COALESCE(
      CAST(SUM(CASE WHEN is_rel = 1 THEN CAST(rel_so_far AS FLOAT) / rnk ELSE 0 END) AS FLOAT) / NULLIF(num_rel, 0),
      0
    ) AS gmap,
    COALESCE(CAST(SUM(is_rel) AS FLOAT), 0) AS hits,
    COALESCE(
      MAX(
        CASE
          WHEN rel_so_far >= FLOOR(CAST(0.5 AS FLOAT) * num_rel + 0.9)
          THEN CAST(rel_so_far AS FLOAT) / rnk
        END
      ),
      0
    ) AS iprec_at_0_5,
    COALESCE(
      CAST(SUM(CASE WHEN NOT relevance IS NULL THEN 1 ELSE 0 END) AS FLOAT) / NULLIF(MAX(num_ret), 0),
      0
    ) AS judged,
    COALESCE(CAST(1 AS FLOAT), 0) AS numq,
    COALESCE(CAST(num_rel AS FLOAT), 0) AS numrel,
    COALESCE(CAST(SUM(is_rel) AS FLOAT), 0) AS numrelret,
    COALESCE(CAST(MAX(num_ret) AS FLOAT), 0) AS numret,
    COALESCE(CAST(SUM(CASE WHEN rnk <= 10 THEN is_rel ELSE 0 END) AS FLOAT) / 10, 0) AS p_at_10,
    COALESCE(
      CAST(SUM(CASE WHEN rnk <= 10 THEN is_rel ELSE 0 END) AS FLOAT) / NULLIF(num_rel, 0),
      0
    ) AS r_at_10,
    COALESCE((
      1 - 0.8
    ) * SUM((
      is_rel
    ) * POWER(CAST(0.8 AS FLOAT), rnk - 1)), 0) AS rbp,
    COALESCE(1 / CAST(MIN(CASE WHEN is_rel = 1 THEN rnk END) AS FLOAT), 0) AS rr,
    COALESCE(
      CAST(SUM(CASE WHEN rnk <= num_rel THEN is_rel ELSE 0 END) AS FLOAT) / NULLIF(num_rel, 0),
      0
    ) AS rprec,
    COALESCE(
      CAST((
        1 + 1
      ) * CAST(SUM(is_rel) AS FLOAT) AS FLOAT) / NULLIF(1 * num_rel + MAX(num_ret), 0),
      0
    ) AS setf,
    COALESCE(CAST(SUM(is_rel) AS FLOAT) / NULLIF(MAX(num_ret), 0), 0) AS setp,
    COALESCE(CAST(SUM(is_rel) AS FLOAT) / NULLIF(num_rel, 0), 0) AS setr,
    COALESCE(CAST(MAX(is_rel) AS FLOAT), 0) AS success,
    COALESCE(
      CAST(SUM(
        CASE
          WHEN (1 = 1) AND relevance > 0
          THEN CAST(relevance AS FLOAT) / (
            CAST(LOG(rnk + 1) AS FLOAT) / LOG(2)
          )
          ELSE 0
        END
      ) AS FLOAT) / NULLIF(idcg_2, 0),
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
  EXP(AVG(LOG(CASE WHEN gmap > 0.00001 THEN gmap ELSE 0.00001 END))) AS gmap,
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
