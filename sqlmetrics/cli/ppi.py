"""`sqlmetrics ppi LLM_QRELS HUMAN_QRELS RUN... -m MEASURE`: prediction-powered inference (sqlmetrics.judgments.ppi):
each run's mean of the measure over the LLM-labelled queries, corrected by the human-labelled subset, with its
interval, beside the human-only and LLM-only ones; and every other run's paired difference with the baseline. -o
writes the table (atomically, in the format its extension names); -f csv, tsv, json or jsonl prints it as such."""
from __future__ import annotations

from ..judgments.ppi import ppi
from ..options import PPI_CMD
from ..stats.report import aligned
from .common import STDOUT_NAMES, ArrowOutput, add_option_flags, chosen_format, option_values

FORMATS = ("text", "csv", "tsv", "json", "jsonl", "parquet")


def add_parser(sub, parents) -> None:
    p = sub.add_parser("ppi", parents=parents, help="a measure's mean over LLM labels, corrected by a human-labelled "
                                                    "subset (prediction-powered inference)",
                       description="Prediction-powered inference (PPI++): each run's mean of MEASURE over the queries "
                                   "the LLM labels, corrected by the human - LLM difference on the random subset "
                                   "humans label too, with its interval (power-tuned, as ppi-python's ppi_mean_ci); "
                                   "beside it the human-only and LLM-only means and intervals, and every other run's "
                                   "paired difference with the baseline. See docs/rag.md.")
    p.add_argument("llm_qrels", metavar="LLM_QRELS", help="the LLM's judgments of every query")
    p.add_argument("human_qrels", metavar="HUMAN_QRELS", help="the human's judgments of a random subset of them")
    p.add_argument("runs", nargs="+", metavar="RUN", help="run files, named by their stems")
    p.add_argument("-m", "--measure", required=True, metavar="MEASURE", help="one measure averaged over queries "
                                                                             "(nDCG@10, AP, P@10, ...)")
    p.add_argument("--alpha", type=float, default=0.05, help="the intervals are at level 1 - alpha (default 0.05)")
    p.add_argument("--baseline", metavar="RUN", help="the run the others' differences are taken with (its file "
                                                     "stem; default the first)")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write the table to FILE (atomically), in the format its extension names: .parquet, .csv, "
                        ".tsv, .json, .jsonl, or FILE.duckdb:TABLE")
    p.add_argument("-f", "--format", choices=FORMATS, help="text (default), csv, tsv, json, jsonl (parquet with -o)")
    add_option_flags(p, PPI_CMD)
    p.set_defaults(func=run)


def run(args) -> tuple:
    fmt = chosen_format(args, (*FORMATS, "duckdb"), "text")
    table = ppi(args.llm_qrels, args.human_qrels, args.runs, args.measure, alpha=args.alpha, baseline=args.baseline,
                **option_values(args, PPI_CMD))
    if fmt == "text" and (not args.output or args.output in STDOUT_NAMES):
        return text(table, args.alpha), None
    return ArrowOutput(table, ("run", "baseline", "measure"), fmt, "replace"), args.output


def text(table, alpha: float) -> str:
    """One line per run and per difference: the counts, λ, and each mean with its interval, to 4 decimals."""
    rows = table.to_pylist()
    level = f"{100 * (1 - alpha):g}%"
    out = [["run", "n", "N", "lambda", "human", f"[{level}]", "LLM", f"[{level}]", "PPI", f"[{level}]"]]
    for r in rows:
        name = r["run"] if r["baseline"] is None else f"{r['run']} - {r['baseline']}"
        cells = [name, r["n_human"], r["n_unlabeled"], f"{r['lambda']:.3f}"]
        for kind in ("human", "llm", "ppi"):
            cells += [f"{r[kind + '_mean']:.4f}", f"[{r[kind + '_low']:.4f}, {r[kind + '_high']:.4f}]"]
        out.append(cells)
    return f"{rows[0]['measure']}: n human-labelled queries, N LLM-only\n" + aligned(out, ["l"] + ["r"] * 9) + "\n"
