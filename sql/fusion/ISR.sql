-- fusion: ISR
-- description: Inverse square rank: the sum of 1 / rank^2 over the runs that rank the document, times how many do.
-- reference: Mourao, Martins & Magalhaes 2015, Multimodal medical information retrieval with unsupervised rank fusion (CMIG); ranx fuse(method="isr")
-- aliases: isr (ranx)
-- example: runs: q1 d1 3, q1 d2 2, q1 d3 1 | q1 d2 0.9, q1 d4 0.5 => q1 d2 5/2, q1 d1 1, q1 d4 1/4, q1 d3 1/9
SUM(1 / CAST(rnk * rnk AS DOUBLE)) * COUNT(*)
