"""An A/B test on a click log at warehouse scale: `sqlmetrics compare` against `sqlmetrics eval` of the same log.

    python bench/ab.py [--sessions 1000000] [--repeat 3] [--memory-limit 1GB]

The log (generated once into bench/data/, seeded): SESSIONS sessions of 10 results, two arms (A, B) by session, 7
days x 3 countries, about 3% clicks, B slightly better. Both commands run as whole processes (bench/run.py's
run_child: wall time and peak RSS from wait4), interleaved, with --memory-limit; the same at 20,000 sessions. It
prints the medians and compare's ratio to eval, and writes bench/results/ab-<timestamp>.json.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from datetime import datetime
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import CLI, run_child  # noqa: E402 - the bench's own process runner

BENCH = Path(__file__).resolve().parent
COLUMNS = ["--column", "run_name=arm", "--column", "query_id=session", "--column", "doc_id=doc",
           "--column", "rank_position=position"]
MEASURES = ["-m", "RR", "-m", "nDCG@10", "-m", "P@3"]


def generate(sessions: int) -> Path:
    """The log as Parquet: one row per shown result (day, country, arm, session, doc, position, clicked)."""
    path = BENCH / "data" / f"ab-{sessions}.parquet"
    if path.exists():
        return path
    path.parent.mkdir(exist_ok=True)
    con = duckdb.connect()
    con.execute("SELECT setseed(0.31)")
    con.execute(f"""COPY (
        SELECT '2024-06-0' || (1 + s % 7) AS day, ['de', 'fr', 'us'][1 + (s // 7) % 3] AS country,
               CASE WHEN hash(s) % 2 = 0 THEN 'A' ELSE 'B' END AS arm, 's' || s AS session, 'd' || pos AS doc,
               pos AS position,
               CASE WHEN random() < (CASE WHEN hash(s) % 2 = 0 THEN 0.100 ELSE 0.104 END) / pos THEN 1 ELSE 0 END
               AS clicked
        FROM range({sessions}) AS t(s), range(1, 11) AS p(pos)) TO '{path}' (FORMAT parquet)""")
    return path


def commands(log: Path, memory_limit: str) -> dict:
    common = ["none", str(log), *MEASURES, "--label", "clicked", *COLUMNS, "--ties", "rank", "--group-by", "day",
              "--memory-limit", memory_limit, "--quiet"]
    return {"eval": [CLI, "eval", *common], "compare": [CLI, "compare", *common, "--baseline", "A"]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sessions", type=int, default=1_000_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--memory-limit", default="1GB")
    args = p.parse_args()
    env = dict(os.environ)
    results = {}
    for sessions in (20_000, args.sessions):
        runs = {name: [] for name in ("eval", "compare")}
        for _ in range(args.repeat):  # interleaved: the machine's drift falls on both alike
            for name, cmd in commands(generate(sessions), args.memory_limit).items():
                rec = run_child(cmd, env, timeout=3600, max_rss_kb=0)
                if rec["returncode"]:
                    sys.exit(f"{name} failed:\n{rec['stderr'][-2000:]}")
                runs[name].append(rec)
        med = {n: {"wall_s": statistics.median(r["wall"] for r in recs),
                   "peak_mb": max(r["maxrss_mb"] for r in recs)} for n, recs in runs.items()}
        med["compare_vs_eval"] = med["compare"]["wall_s"] / med["eval"]["wall_s"]
        results[sessions] = med
        print(f"{sessions:>9,} sessions ({10 * sessions:,} rows): eval {med['eval']['wall_s']:.2f} s, "
              f"{med['eval']['peak_mb']:.0f} MB; compare {med['compare']['wall_s']:.2f} s, "
              f"{med['compare']['peak_mb']:.0f} MB; compare / eval {med['compare_vs_eval']:.2f}x")
    out = BENCH / "results" / f"ab-{datetime.now():%Y%m%d-%H%M%S}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"memory_limit": args.memory_limit, "repeat": args.repeat, "results": results},
                              indent=2))
    print(out)


if __name__ == "__main__":
    main()
