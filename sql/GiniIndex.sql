-- measure: GiniIndex
-- description: Gini index of a run's item exposure: 0 when every item of the catalogue is recommended equally often, towards 1 when a few items take all the recommendations; the catalogue is the training interactions' items (history=) and any other item the run recommends; one value per run.
-- reference: the Gini coefficient of the items' recommendation counts sorted ascending, G = sum_i (2i - n - 1) c_i / (n sum_i c_i) over the n catalogue items, as RecBole's GiniIndex computes it (Recommenders has none)
-- rows: recommendations
-- aggregate: once
-- better: lower
-- empty: null
-- range: 0..1
-- example: qrels: u1 i2 1, u2 i3 1 run: u1 i1 0.9, u1 i2 0.8, u2 i1 0.7, u2 i3 0.6 history: u1 i3, u2 i2, u3 i1, u3 i2, u3 i4 => 3/8
-- example: qrels: u1 i2 1 run: u1 i1 0.9, u1 i5 0.8, u2 i1 0.7 history: u1 i3, u3 i1 => 4/9
-- note: The catalogue's unrecommended items take the first n - m places (count 0, adding nothing), the run's m
--   items the last m by exposure_rank: sum (2(n - m + r) - n - 1) c = 2 sum r c + (n - 2m - 1) sum c.
--   Example 1: counts 0 (i4), 1, 1, 2 over n = 4: (-1 + 1 + 6) / (4 * 4). Example 2: counts 0 (i3), 1 (i5),
--   2 (i1) over n = 3: (0 + 0 + 2 * 2) / (3 * 3).
CAST(2 * SUM(exposure_rank * item_recs) + (MAX(hist_items) + SUM(CASE WHEN hist_count IS NULL THEN 1 ELSE 0 END) - 2 * COUNT(*) - 1) * MAX(num_recs) AS DOUBLE)
  / ((MAX(hist_items) + SUM(CASE WHEN hist_count IS NULL THEN 1 ELSE 0 END)) * MAX(num_recs))
