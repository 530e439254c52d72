"""Time the EM click models (sqlmetrics.clicks: pbm, ubm, dcm) on one simulated click log, side by side: the log's
aggregation and the EM iterations of each. `python bench/clicks_em.py --rows 1000000 --iterations 20` (the log of
clicks_pbm.py: 100,000 sessions of 10 positions, clicked by PBM; the timing does not depend on which model made it)."""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from clicks_pbm import write_log

from sqlmetrics.clicks import dcm, pbm, ubm
from sqlmetrics.clicks.log import checked_log
from sqlmetrics.local.connection import connect
from sqlmetrics.local.readers import load


def _aggregate(con, model: str):
    """Each model's one-off aggregation of the log, and its iteration (pbm.fit's `iterate`; None: PBM's step)."""
    if model == "dcm":
        dcm.aggregate(con)
        return dcm.step
    if model == "ubm":
        con.execute(f"CREATE OR REPLACE TEMP TABLE sqlm_ubm_log AS {ubm._ROWS}")
        pbm.aggregate(con, "sqlm_ubm_log", ubm.SLOT)
    else:
        pbm.aggregate(con)
    return None


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--iterations", type=int, default=20)
    p.add_argument("--threads", type=int)
    p.add_argument("--folder", default="/tmp")
    args = p.parse_args()
    path = Path(args.folder) / f"clicks_{args.rows}.parquet"
    if not path.exists():
        write_log(path, args.rows)
    for model in ("pbm", "ubm", "dcm"):
        con = connect(None, args.threads, None)
        checked_log(con, load(con, str(path), "clicks"), ())
        t0 = time.perf_counter()
        step = _aggregate(con, model)
        t1 = time.perf_counter()
        runs = pbm.fit(con, args.iterations, 1e-300, step)
        t2 = time.perf_counter()
        predicted = ""
        if model != "pbm":  # predict() of every row (PBM's comes with its own branch)
            tables = dcm.parameters(con) if model == "dcm" else pbm.parameters(con, ubm.SLOT)
            predict = (dcm if model == "dcm" else ubm).predict
            con.execute(f"SELECT SUM(conditional), SUM(marginal) FROM ({predict(con, tables)})").fetchall()
            predicted = f", predict {time.perf_counter() - t2:.2f} s"
        print(f"{model}: {args.rows:,} rows, aggregate {t1 - t0:.2f} s, {runs[0][0]} iterations {t2 - t1:.2f} s "
              f"({(t2 - t1) / runs[0][0]:.3f} s each){predicted}")
        con.close()


if __name__ == "__main__":
    main()
