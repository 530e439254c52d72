-- fusion: RBC
-- description: Rank-biased centroid: the sum of (1 - phi) * phi^(rank - 1) over the runs that rank the document.
-- reference: Bailey, Moffat, Scholer & Thomas 2017, Retrieval consistency in the presence of query variations (SIGIR); ranx fuse(method="rbc")
-- param phi: fraction = 0.8
-- aliases: rbc (ranx)
-- example: (phi=0.5) runs: q1 d1 3, q1 d2 2, q1 d3 1 | q1 d2 0.9, q1 d4 0.5 => q1 d2 3/4, q1 d1 1/2, q1 d4 1/4, q1 d3 1/8
-- note: ranx has no default for phi; 0.8 is RBP's usual persistence.
SUM((1 - :phi) * POWER(:phi, rnk - 1))
