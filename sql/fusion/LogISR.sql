-- fusion: LogISR
-- description: ISR with the count of runs ranking the document replaced by its natural logarithm (one run: 0).
-- reference: Mourao, Martins & Magalhaes 2015, Multimodal medical information retrieval with unsupervised rank fusion (CMIG); ranx fuse(method="log_isr")
-- aliases: log_isr (ranx), log-isr
-- example: runs: q1 d1 3, q1 d2 2, q1 d3 1 | q1 d2 0.9, q1 d4 0.5 => q1 d2 0.8664339756999316, q1 d4 0, q1 d3 0, q1 d1 0
-- note: d2 is ranked by both runs: (1 + 1/4) * ln 2; the others by one run, ln 1 = 0 (ties by document id descending).
SUM(1 / CAST(rnk * rnk AS DOUBLE)) * LN(COUNT(*))
