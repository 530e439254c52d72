"""`sqlmetrics demo`: compare the two small demo runs shipped with the package."""
from __future__ import annotations

from pathlib import Path

from .. import demo
from ..options import DEMO_CMD
from .common import add_option_flags, check_output, measures_from
from .compare import add_report_flags, report_text

DEFAULT_MEASURES = ["nDCG@10", "AP", "RR", "P@10", "R@100"]


def add_parser(sub, parents) -> None:
    p = sub.add_parser("demo", parents=parents, help="compare the two demo runs shipped with the package",
                       description="Evaluate and compare two small demo runs (50 queries, graded qrels) "
                                   "shipped with the package.")
    add_report_flags(p, DEFAULT_MEASURES)
    p.add_argument("--path", action="store_true", help="print the folder holding the demo files and exit")
    add_option_flags(p, DEMO_CMD)
    p.set_defaults(func=run)


def run(args) -> tuple:
    if args.path:
        return f"{demo.folder()}\n", None
    check_output(args.output)
    qrels, run_paths = demo.paths()
    measures = measures_from(args, DEFAULT_MEASURES)
    runs = {Path(p).name.split(".")[0]: str(p) for p in run_paths}
    text = report_text(args, str(qrels), runs, measures, DEMO_CMD)
    if args.format in (None, "table") and not args.output:
        folder = demo.folder()
        opts = "".join(f" -m {m}" for m in measures)
        for flag, value, default in (("--test", args.test, "student"), ("--max-p", args.max_p, 0.01),
                                     ("--correction", args.correction, "none")):
            if value != default:
                opts += f" {flag} {value}"
        text = (f"Demo: two runs (bm25, rerank) of depth 100 on 50 queries with graded judgments (0-3), in\n"
                f"  {folder}\n"
                f"The same as: sqlmetrics compare {folder / demo.QRELS} "
                + " ".join(str(folder / r) for r in demo.RUNS) + opts + "\n\n" + text)
    return text, args.output


