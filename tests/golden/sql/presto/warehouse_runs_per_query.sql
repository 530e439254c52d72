-- sqlmetrics: ranked-retrieval evaluation, rendered for presto
-- measures: ndcg_at_10 = nDCG@10, ap = AP, err_gmax_max_at_20 = ERR(gmax='max')@20, rbp_p_0_5 = RBP(p=0.5), p_rel_2_at_5 = P(rel=2)@5, bpref = Bpref, gmap = GMAP, firstrank = FirstRank
-- qrels: analytics.eval.qrels (query_id=query_text, doc_id=item_id, relevance=rating)
-- run: analytics.eval.search_log (run_name=experiment_arm, query_id=query_text, doc_id=item_id, rank_position=position)
-- options: queries='qrels', ties='rank', relevance_level=1, score_precision='float64'
-- one row per run_name and query_id: run_name, query_id, ndcg_at_10, ap, err_gmax_max_at_20, rbp_p_0_5, p_rel_2_at_5, bpref, gmap, firstrank
WITH judgments AS (
  SELECT
    CAST(query_text AS VARCHAR) AS query_id,
    CAST(item_id AS VARCHAR) AS doc_id,
    CAST(rating AS DOUBLE) AS relevance
  FROM analytics.eval.qrels
), run_rows AS (
  SELECT
    CAST(experiment_arm AS VARCHAR) AS run_name,
    CAST(query_text AS VARCHAR) AS query_id,
    CAST(item_id AS VARCHAR) AS doc_id,
    CAST(position AS BIGINT) AS rank_position
  FROM analytics.eval.search_log
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
        WHEN ideal_rnk <= 10 AND relevance >= 0 AND relevance > 0
        THEN CAST(relevance AS DOUBLE) / (
          CAST(LN(ideal_rnk + 1) AS DOUBLE) / LN(2)
        )
        ELSE 0
      END
    ) AS idcg_1
  FROM ideal
  GROUP BY
    query_id
), collection AS (
  SELECT
    MAX(relevance) AS max_relevance
  FROM judgments
), judged_run AS (
  SELECT
    run_rows.run_name AS run_name,
    run_rows.query_id AS query_id,
    run_rows.doc_id AS doc_id,
    run_rows.rank_position AS rank_position,
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
    run_name,
    query_id,
    relevance,
    ROW_NUMBER() OVER (
      PARTITION BY run_name, query_id
      ORDER BY rank_position ASC NULLS FIRST, doc_id DESC
    ) AS rnk,
    COALESCE(
      LEAD(1) OVER (
        PARTITION BY run_name, query_id
        ORDER BY rank_position ASC NULLS FIRST, doc_id DESC
      ),
      0
    ) AS has_next
  FROM judged_run
), list_ends AS (
  SELECT
    run_name,
    query_id,
    relevance,
    rnk,
    MAX(rnk) OVER (PARTITION BY run_name, query_id) AS num_ret
  FROM ranking
  WHERE
    NOT relevance IS NULL OR rnk = 1 OR has_next = 0
), judged_ranking AS (
  SELECT
    run_name,
    query_id,
    relevance,
    rnk,
    num_ret,
    CASE WHEN relevance >= 1 THEN 1 ELSE 0 END AS is_rel,
    SUM(CASE WHEN relevance >= 1 THEN 1 ELSE 0 END) OVER (
      PARTITION BY run_name, query_id
      ORDER BY rnk ASC NULLS FIRST
      ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
    ) AS rel_so_far,
    EXP(
      COALESCE(
        SUM(
          LN(
            1 - CAST((
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
            ) AS DOUBLE) / POWER(2, max_relevance)
          )
        ) OVER (
          PARTITION BY run_name, query_id
          ORDER BY rnk ASC NULLS FIRST
          ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
        ),
        0
      )
    ) AS err_reach_2,
    CASE WHEN relevance >= 2 THEN 1 ELSE 0 END AS is_rel_at_2,
    SUM(CASE WHEN relevance >= 0 AND relevance < 1 THEN 1 ELSE 0 END) OVER (
      PARTITION BY run_name, query_id
      ORDER BY rnk ASC NULLS FIRST
      ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
    ) AS nonrel_so_far
  FROM list_ends
  CROSS JOIN collection
  WHERE
    NOT relevance IS NULL OR rnk = 1
), lists AS (
  SELECT
    runs.run_name AS run_name,
    query_stats.query_id AS query_id
  FROM (
    SELECT DISTINCT
      run_name
    FROM run_rows
  ) AS runs
  CROSS JOIN query_stats
), list_values AS (
  SELECT
    lists.run_name AS run_name,
    lists.query_id AS query_id,
    COALESCE(
      CAST(SUM(
        CASE
          WHEN rnk <= 10 AND relevance >= 0
          THEN CAST(relevance AS DOUBLE) / (
            CAST(LN(rnk + 1) AS DOUBLE) / LN(2)
          )
          ELSE 0
        END
      ) AS DOUBLE) / NULLIF(idcg_1, 0),
      0
    ) AS ndcg_at_10,
    COALESCE(
      CAST(SUM(CASE WHEN is_rel = 1 THEN CAST(rel_so_far AS DOUBLE) / rnk ELSE 0 END) AS DOUBLE) / NULLIF(num_rel, 0),
      0
    ) AS ap,
    COALESCE(
      SUM(
        CASE
          WHEN rnk <= 20
          THEN CAST(CAST(err_reach_2 * (
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
          ) AS DOUBLE) / POWER(2, max_relevance) AS DOUBLE) / rnk
          ELSE 0
        END
      ),
      0
    ) AS err_gmax_max_at_20,
    COALESCE(
      (
        1 - CAST(0.5 AS DOUBLE)
      ) * SUM(is_rel * POWER(CAST(0.5 AS DOUBLE), rnk - 1)),
      0
    ) AS rbp_p_0_5,
    COALESCE(CAST(SUM(CASE WHEN rnk <= 5 THEN is_rel_at_2 ELSE 0 END) AS DOUBLE) / 5, 0) AS p_rel_2_at_5,
    COALESCE(
      CAST(SUM(
        CASE
          WHEN is_rel = 1 AND nonrel_so_far = 0
          THEN 1
          WHEN is_rel = 1
          THEN 1 - CAST(CASE WHEN nonrel_so_far < num_rel THEN nonrel_so_far ELSE num_rel END AS DOUBLE) / NULLIF(CASE WHEN num_nonrel < num_rel THEN num_nonrel ELSE num_rel END, 0)
          ELSE 0
        END
      ) AS DOUBLE) / NULLIF(num_rel, 0),
      0
    ) AS bpref,
    COALESCE(
      CAST(SUM(CASE WHEN is_rel = 1 THEN CAST(rel_so_far AS DOUBLE) / rnk ELSE 0 END) AS DOUBLE) / NULLIF(num_rel, 0),
      0
    ) AS gmap,
    CAST(MIN(CASE WHEN is_rel = 1 THEN rnk END) AS DOUBLE) AS firstrank
  FROM lists
  JOIN query_stats
    ON lists.query_id = query_stats.query_id
  CROSS JOIN collection
  LEFT JOIN judged_ranking
    ON lists.run_name = judged_ranking.run_name
    AND lists.query_id = judged_ranking.query_id
  GROUP BY
    lists.run_name,
    lists.query_id,
    query_stats.num_rel,
    query_stats.num_nonrel,
    query_stats.idcg_1,
    collection.max_relevance
)
SELECT
  run_name,
  query_id,
  ndcg_at_10,
  ap,
  err_gmax_max_at_20,
  rbp_p_0_5,
  p_rel_2_at_5,
  bpref,
  gmap,
  firstrank
FROM list_values
ORDER BY
  run_name,
  query_id
