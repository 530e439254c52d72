"""Time sqlmetrics against pytrec_eval, ranx, ir_measures and a bare DuckDB ranking pass, back to back.

    python bench/run.py --size S --repeat 3 --tools all --measures standard,20

Every (tool, measure set, repetition) is a fresh `python bench/tools.py ...` (or `sqlmetrics eval ...`)
process, so each has its own peak RSS (ru_maxrss from wait4) and cold start. Reports medians, the peak
RSS, each tool's time relative to sqlmetrics, and whether the tools agree on the aggregate numbers.
Results: a markdown table (printed, and bench/results/<size>-<timestamp>.md) and the raw records (.json).

    python bench/run.py --issue18 --size M --small S [--large L]

measures every row of issue 18's table in one session instead (see ISSUE18): each figure as a ratio to its
reference from the same session, with peak memory, printed and written to bench/results/issue18-<timestamp>.json;
`python bench/table.py that.json` puts it in the README.

    python bench/run.py --issue32 --size M --small S --trec-eval /path/to/trec_eval

measures issue 32's table the same way (see ISSUE32): the API against the checked floor, `sqlmetrics trec_eval`
against trec_eval (C), compare and report, the small calls, the JSON outputs, and ir-eval-numba; written to
bench/results/issue32-<timestamp>.json. Commands run as whole processes, their output to a temporary file.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime
from importlib import metadata
from pathlib import Path

from table import _reference as table_cells  # bench/table.py: a reference's cell and target, as the table words them

BENCH = Path(__file__).resolve().parent
PY = sys.executable
# The `sqlmetrics` command next to this interpreter (its venv's bin/), else the first on PATH.
CLI = shutil.which("sqlmetrics", path=os.pathsep.join([os.path.dirname(PY), os.environ.get("PATH", "")]))

# (sqlmetrics / ir_measures-style name, trec_eval & pytrec_eval, ranx, ir_measures, ir_eval_numba); None: the tool
# has none. ir_eval_numba's relevance is binary and its AP divides by the relevant documents retrieved (not all the
# relevant ones), so its nDCG and AP are other measures than these: it has none of them here.
M_STANDARD = [
    ("P@10", "P_10", "precision@10", "P@10", "P@10"),
    ("R@100", "recall_100", "recall@100", "R@100", "R@100"),
    ("AP", "map", "map", "AP", None),
    ("nDCG@10", "ndcg_cut_10", "ndcg@10", "nDCG@10", None),
    ("RR@10", None, "mrr@10", "RR@10", "RR@10"),  # trec_eval / pytrec_eval have no cut-off reciprocal rank
    ("RR", "recip_rank", "mrr", "RR", "RR"),
    ("Rprec", "Rprec", "r-precision", "Rprec", "Rprec"),
    ("Bpref", "bpref", "bpref", "Bpref", None),
]
M_20 = [
    ("P@5", "P_5", "precision@5", "P@5", "P@5"),
    ("P@10", "P_10", "precision@10", "P@10", "P@10"),
    ("P@20", "P_20", "precision@20", "P@20", "P@20"),
    ("P@100", "P_100", "precision@100", "P@100", "P@100"),
    ("R@10", "recall_10", "recall@10", "R@10", "R@10"),
    ("R@100", "recall_100", "recall@100", "R@100", "R@100"),
    ("R@1000", "recall_1000", "recall@1000", "R@1000", "R@1000"),
    ("AP", "map", "map", "AP", None),
    ("AP@100", "map_cut_100", "map@100", "AP@100", None),
    ("nDCG", "ndcg", "ndcg", "nDCG", None),
    ("nDCG@5", "ndcg_cut_5", "ndcg@5", "nDCG@5", None),
    ("nDCG@10", "ndcg_cut_10", "ndcg@10", "nDCG@10", None),
    ("nDCG@20", "ndcg_cut_20", "ndcg@20", "nDCG@20", None),
    ("RR", "recip_rank", "mrr", "RR", "RR"),
    ("Rprec", "Rprec", "r-precision", "Rprec", "Rprec"),
    ("Bpref", "bpref", "bpref", "Bpref", None),
    ("SetP", "set_P", "precision", "SetP", "SetP"),
    ("SetR", "set_recall", "recall", "SetR", "SetR"),
    ("Success@10", "success_10", "hit_rate@10", "Success@10", None),
    ("IPrec@0.5", "iprec_at_recall_0.50", None, "IPrec@0.5", None),  # ranx.evaluate does not expose it
]
M_ONE = [("nDCG@10", "ndcg_cut_10", "ndcg@10", "nDCG@10", None)]
M_THREE = [m for m in M_20 if m[0] in ("AP", "nDCG@10", "P@10")]  # issue 32's compare
# "-": a command that takes no measure list (its own defaults, or all_trec).
MEASURE_SETS = {"standard": M_STANDARD, "20": M_20, "1": M_ONE, "3": M_THREE, "-": []}
SPELLING = {"sqlmetrics": 0, "trec": 1, "ranx": 2, "ir_measures": 3, "ir_eval_numba": 4}


@dataclass
class Tool:
    name: str
    worker: str  # bench/tools.py entry, or "cli"
    fmt: str  # "parquet" or "trec": which files it reads
    spelling: str  # key of SPELLING
    anchor: bool = True  # an in-memory Python tool (skipped on XL by default)
    ties: str = "trec_eval (score desc, doc id desc)"
    env: dict = field(default_factory=dict)
    note: str = ""
    # worker "command": the command line, {cli} {py} {trec_eval} {shared} {qrels} {run} {run2} {tmp} filled in,
    # "{measures}" as -m NAME per measure; its time is the whole process's, its output goes to a temporary file.
    argv: tuple = ()
    warm: bool = False  # a preset runs it once, untimed, before its first repetition


def command(name: str, *argv: str, fmt: str = "trec", warm: bool = False, note: str = "") -> Tool:
    return Tool(name, "command", fmt, "sqlmetrics", anchor=False, argv=argv, warm=warm,
                note=note or "`" + " ".join(argv).replace("{cli}", "sqlmetrics").replace("{py}", "python") + "`")


TWO_RUNS = ("{qrels}", "{run}", "{run2}", "{measures}")


TOOLS = {t.name: t for t in [
    Tool("sqlmetrics", "sqlmetrics", "parquet", "sqlmetrics", anchor=False, note="Python API"),
    Tool("sqlmetrics-trec", "sqlmetrics", "trec", "sqlmetrics", anchor=False, note="Python API on TREC text"),
    Tool("sqlmetrics-cli", "cli", "parquet", "sqlmetrics", anchor=False, note="`sqlmetrics eval -f json`; time = process wall"),
    Tool("pytrec_eval", "pytrec_eval", "trec", "trec", note="parse_qrel/parse_run + evaluate + mean"),
    Tool("ranx", "ranx", "trec", "ranx", ties="input order (unstable argsort)",
         note="from_file(kind='trec'); fresh process, numba disk cache warm"),
    Tool("ranx-parquet", "ranx-parquet", "parquet", "ranx", ties="input order (unstable argsort)",
         note="from_df(pd.read_parquet)"),
    Tool("ranx-nocache", "ranx", "trec", "ranx", ties="input order (unstable argsort)",
         env={"NUMBA_CACHE_DIR": "<fresh>"}, note="empty NUMBA_CACHE_DIR: first use ever, JIT compiles"),
    Tool("ir_measures", "ir_measures", "trec", "ir_measures", note="calc_aggregate(read_trec_qrels, read_trec_run)"),
    Tool("duckdb-floor", "duckdb-floor", "parquet", "sqlmetrics", anchor=False,
         note="ROW_NUMBER() OVER (PARTITION BY query_id ORDER BY score DESC, doc_id DESC)"),
    Tool("duckdb-floor-join", "duckdb-floor-join", "parquet", "sqlmetrics", anchor=False,
         note="the ranking pass LEFT JOIN the qrels"),
    Tool("duckdb-checked-floor", "duckdb-checked-floor", "parquet", "sqlmetrics", anchor=False,
         note="the exact repeat check (hashes sorted, LAG) of run and qrels, then the ranking LEFT JOIN the qrels"),
    Tool("ir-eval-numba", "ir-eval-numba", "parquet", "ir_eval_numba", warm=True,
         note="pyarrow sort (score desc, doc id desc), its per-list numba functions per query; numba disk cache warm"),
    Tool("sqlmetrics-cli-trec", "cli", "trec", "sqlmetrics", anchor=False,
         note="`sqlmetrics eval -f json` on TREC text; time = process wall"),
    Tool("trec_eval", "trec_eval", "trec", "trec", note="the trec_eval command (C; --trec-eval); time = process wall"),
    Tool("python-start", "start", "trec", "sqlmetrics", anchor=False, note="`python -c pass`: the interpreter alone"),
    Tool("sqlmetrics-spark", "sqlmetrics-spark", "parquet", "sqlmetrics", anchor=False,
         note="evaluate(engine=spark): Spark local over run-parts/ (8 Parquet files); evaluate_seconds is Spark's"),
    # Issue 32's commands.
    command("sqlmetrics-trec_eval-all", "{cli}", "trec_eval", "-q", "-m", "all_trec", "{qrels}", "{run}"),
    command("trec_eval-all", "{trec_eval}", "-q", "-m", "all_trec", "{qrels}", "{run}"),
    command("sqlmetrics-trec_eval", "{cli}", "trec_eval", "{qrels}", "{run}"),
    command("trec_eval-default", "{trec_eval}", "{qrels}", "{run}"),
    command("sqlmetrics-eval-2", "{cli}", "eval", *TWO_RUNS, fmt="parquet"),
    command("sqlmetrics-compare", "{cli}", "compare", *TWO_RUNS, "--test", "student", fmt="parquet"),
    command("sqlmetrics-compare-fisher", "{cli}", "compare", *TWO_RUNS, "--test", "fisher", "--n-resamples", "10000",
            fmt="parquet"),
    command("sqlmetrics-compare-bootstrap", "{cli}", "compare", *TWO_RUNS, "--test", "bootstrap", "--n-resamples",
            "10000", fmt="parquet"),
    command("sqlmetrics-report", "{cli}", "report", *TWO_RUNS, "-o", "{tmp}/report.html", fmt="parquet"),
    command("sqlmetrics-trec_eval-test", "{cli}", "trec_eval", "{shared}/data/trec_eval_test/qrels.test",
            "{shared}/data/trec_eval_test/results.test", warm=True),
    command("python-duckdb", "{py}", "-c", "import duckdb", warm=True),
    command("convert-jsonl", "{cli}", "convert", "run", "{run}", "-o", "{tmp}/run.jsonl"),
    command("convert-parquet", "{cli}", "convert", "run", "{run}", "-o", "{tmp}/run.parquet"),
]}
# "all"; ranx-nocache costs a full JIT per run, python-start is only a reference for issue 18's table, and
# Spark takes minutes even at S (a JVM, and a plan per common table expression).
DEFAULT_TOOLS = [n for n, t in TOOLS.items()
                 if n not in ("ranx-nocache", "python-start", "sqlmetrics-spark") and t.worker != "command"]
REFERENCES = ["sqlmetrics", "sqlmetrics-trec", "pytrec_eval", "ir_measures"]  # for the agreement check
IMPORT_CHECK = {"sqlmetrics": "import sqlmetrics; sqlmetrics.evaluate", "pytrec_eval": "import pytrec_eval",
                "ranx": "import ranx", "ranx-parquet": "import ranx, pandas", "ir_measures": "import ir_measures",
                "duckdb-floor": "import duckdb", "duckdb-floor-join": "import duckdb",
                "duckdb-checked-floor": "import duckdb", "ir-eval-numba": "import ir_eval_numba",
                "sqlmetrics-spark": "import pyspark, shutil; assert shutil.which('java'), 'no java'"}


def preflight(tool: Tool, args) -> str | None:
    """None if the tool can run, else why not (reported as missing)."""
    argv = tool.argv or {"cli": ("{cli}", "eval"), "trec_eval": ("{trec_eval}",)}.get(tool.worker, ())
    if "{trec_eval}" in argv:
        return None if args.trec_eval else "no trec_eval command (--trec-eval, $TREC_EVAL or on PATH)"
    if any("{shared}" in a for a in argv) and not Path(args.shared).is_dir():
        return f"no shared data at {args.shared} (--shared)"
    if "{cli}" in argv:
        if not CLI:
            return "no `sqlmetrics` command next to this Python or on PATH"
        cmd = [CLI, argv[1], "--help"]
    elif tool.worker in ("command", "start"):
        return None
    else:
        cmd = [PY, "-c", IMPORT_CHECK[tool.worker]]
    p = subprocess.run(cmd, capture_output=True, text=True)
    return None if p.returncode == 0 else (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1]


def rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    except (OSError, StopIteration):
        return 0


def run_child(cmd: list, env: dict, timeout: float, max_rss_kb: int) -> dict:
    """Run cmd in its own process group; kill it on timeout or when its RSS passes max_rss_kb."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, start_new_session=True)
        killed = None
        while True:
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if killed is None and time.perf_counter() - start > timeout:
                killed = "timeout"
            elif killed is None and max_rss_kb and rss_kb(p.pid) > max_rss_kb:
                killed = "memory"
            if killed:
                os.killpg(p.pid, signal.SIGKILL)
                pid, status, usage = os.wait4(p.pid, 0)
                break
            time.sleep(0.01)
        wall = time.perf_counter() - start
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "maxrss_mb": usage.ru_maxrss / 1024, "returncode": p.returncode, "killed": killed,
                "stdout": out.read().decode(errors="replace"), "stderr": err.read().decode(errors="replace")}


def parse_cli(stdout: str, names: dict) -> dict:
    """Aggregates from `sqlmetrics eval -f json` ({..."aggregate": {measure: value}...}), else from lines
    `measure value` or `measure all value`."""
    wanted = {n: c for c, n in names.items()}

    def walk(node):
        if isinstance(node, dict):
            if any(k in wanted and isinstance(v, (int, float)) for k, v in node.items()):
                return {wanted[k]: float(v) for k, v in node.items() if k in wanted and v is not None}
            return next((r for r in map(walk, node.values()) if r), {})
        return {}
    try:
        return walk(json.loads(stdout))
    except ValueError:
        agg = {}
        for tokens in (line.replace("|", " ").split() for line in stdout.splitlines()):
            if len(tokens) >= 2 and tokens[0] in wanted:
                try:
                    agg[wanted[tokens[0]]] = float(tokens[-1])
                except ValueError:
                    pass
        return agg


def trec_eval_measures(names) -> list:
    """trec_eval's -m arguments for its output names: P_10 and P_5 -> -m P.5,10; iprec_at_recall_0.50 -> -m
    iprec_at_recall (all its levels, 0.50 among them); map -> -m map."""
    params: dict = {}
    for name in names:
        family, _, k = name.rpartition("_")
        if family and k.isdigit():
            params.setdefault(family, []).append(k)
        elif name.startswith("iprec_at_recall_"):
            params.setdefault("iprec_at_recall", [])
        else:
            params.setdefault(name, [])
    return [a for f, ks in params.items() for a in ("-m", f + ("." + ",".join(ks) if ks else ""))]


def run_once(tool: Tool, data: Path, mset: list, args) -> dict:
    col = SPELLING[tool.spelling]
    names = {m[0]: m[col] for m in mset if m[col] is not None}
    ext = "parquet" if tool.fmt == "parquet" else "txt"
    qrels, run, run2 = (str(data / f"{k}.{ext}") for k in ("qrels", "run", "run2"))
    # Every tool runs byte-compiled, as an installed package does (pip compiles at install): a shell that sets
    # PYTHONDONTWRITEBYTECODE would otherwise make an editable checkout compile its modules in every process.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory() as scratch:
        env.update({k: (scratch if v == "<fresh>" else v) for k, v in tool.env.items()})
        if tool.worker == "cli":
            cmd = [CLI, "eval", qrels, run, "-f", "json", *(a for n in names.values() for a in ("-m", n))]
            if os.environ.get("SQLMETRICS_BENCH_MEMORY_LIMIT"):
                cmd += ["--memory-limit", os.environ["SQLMETRICS_BENCH_MEMORY_LIMIT"]]
        elif tool.worker == "trec_eval":
            cmd = [args.trec_eval, *trec_eval_measures(names.values()), qrels, run]
        elif tool.worker == "command":
            places = {"cli": CLI, "py": PY, "trec_eval": args.trec_eval, "shared": args.shared, "qrels": qrels,
                      "run": run, "run2": run2, "tmp": scratch}
            cmd = [x for a in tool.argv for x in (
                [f for n in names.values() for f in ("-m", n)] if a == "{measures}" else [a.format(**places)])]
        elif tool.worker == "start":
            cmd = [PY, "-c", "pass"]
        else:
            cmd = [PY, str(BENCH / "tools.py"), tool.worker, qrels, run, json.dumps(names)]
        r = run_child(cmd, env, args.timeout, int(args.max_rss_gb * 1024 * 1024))
    rec = {"wall": r["wall"], "cpu": r["cpu"], "maxrss_mb": r["maxrss_mb"], "status": "ok", "aggregate": {}, "extra": {}}
    if r["killed"]:
        rec["status"] = r["killed"]
    elif r["returncode"] != 0:
        rec["status"] = "error"
        rec["error"] = (r["stderr"].strip().splitlines() or [f"exit {r['returncode']}"])[-1][:300]
    elif tool.worker in ("cli", "trec_eval", "start", "command"):  # a command: its time is the whole process's
        rec.update(seconds=r["wall"], aggregate={} if tool.worker == "command" else parse_cli(r["stdout"], names))
    else:
        rec.update(json.loads(r["stdout"].strip().splitlines()[-1]))
    return rec


# ---------------------------------------------------------------------------------------------- report

def fmt_s(x: float) -> str:
    return f"{x:.3f}" if x < 10 else f"{x:.1f}" if x < 100 else f"{x:.0f}"


def summarise(recs: list, args) -> dict:
    ok = [r for r in recs if r["status"] == "ok"]
    s = {"status": "ok" if len(ok) == len(recs) else next(r["status"] for r in recs if r["status"] != "ok"),
         "maxrss_mb": max(r["maxrss_mb"] for r in recs), "runs": [r.get("seconds") for r in recs]}
    if s["status"] == "timeout":
        s["cell"] = f"> {args.timeout:g} s"
    elif s["status"] == "memory":
        s["cell"] = f"> {args.max_rss_gb:g} GB RSS, killed"
    elif s["status"] == "error":
        s["cell"] = "error"
        s["error"] = next(r["error"] for r in recs if r["status"] == "error")
    if ok:
        s["median"] = statistics.median(r["seconds"] for r in ok)
        s["wall"] = statistics.median(r["wall"] for r in ok)
        s["cpu"] = statistics.median(r["cpu"] for r in ok)
        s["aggregate"] = ok[0]["aggregate"]
        s["extra"] = ok[0]["extra"]
        for key in ("evaluate_seconds", "warm_evaluate_seconds"):
            if all(key in r["extra"] for r in ok):
                s[key] = statistics.median(r["extra"][key] for r in ok)
    return s


def tie_rule(tool: str, m: tuple, summary: dict) -> str:
    if tool == "ir_measures":  # it delegates each measure to a provider; pytrec_eval's is trec_eval's rule
        provider = summary[tool]["extra"].get("providers", {}).get(m[3], "?")
        return TOOLS["pytrec_eval"].ties if provider == "pytrec_eval" else f"ir_measures {provider} provider"
    return TOOLS[tool].ties


def agreement(summary: dict, mset: list, ties: bool, tol: float) -> tuple[list, int]:
    """Rows (measure, reference, value, {tool: cell}); cells: ok, expected tie difference, or MISMATCH."""
    rows, unexpected = [], 0
    for m in mset:
        have = {t: s["aggregate"][m[0]] for t, s in summary.items() if s.get("aggregate", {}).get(m[0]) is not None}
        ref = next((t for t in REFERENCES if t in have), None)
        if ref is None:
            continue
        cells = {}
        for t, v in have.items():
            d, rule = abs(v - have[ref]), tie_rule(t, m, summary)
            if d <= tol:
                cells[t] = "ok"
            elif ties and rule != tie_rule(ref, m, summary):
                cells[t] = f"ties, Δ {d:.0e}"
            else:
                cells[t] = f"**MISMATCH** Δ {d:.1e}"
                unexpected += 1
        cells[ref] = "ref"
        rows.append((m[0], ref, have[ref], cells))
    return rows, unexpected


def render(meta: dict, results: dict, args, skipped: dict, env: dict) -> str:
    L = [f"# sqlmetrics benchmark: {meta['name']}", ""]
    L.append(f"{meta['queries']:,} queries, depth {meta['depth']}: {meta['rows']['run']:,} run rows, "
             f"{meta['rows']['qrels']:,} qrels rows; {'score ties within queries' if meta['ties'] else 'no score ties'}"
             f" (seed {meta['seed']}). {args.repeat} repetitions, each a fresh process; timeout {args.timeout:g} s, "
             f"RSS limit {args.max_rss_gb:g} GB.")
    L.append("")
    L.append(f"Machine: {env['cpu']}, {env['cores']} cores, {env['ram_gb']:.0f} GB RAM; Python {env['python']}; "
             + ", ".join(f"{k} {v}" for k, v in env["versions"].items()) + f". {env['when']}.")
    other, share = env["other_cpu_seconds"], env["other_cpu_share"]
    L.append("")
    L.append(f"Other processes used {other:.0f} CPU-seconds during the {env['session_seconds']:.0f} s session "
             f"({share:.0%} of the machine)" + (": **the timings are not clean.**" if share > 0.05 else "."))
    if skipped:
        L.append("")
        L += [f"- `{name}` not run: {why}" for name, why in skipped.items()]
    for set_name, (mset, summary) in results.items():
        L += ["", f"## Measures: {set_name} ({len(mset)})", "",
              "| tool | input | median s | runs s | process wall s | process CPU s | peak RSS MB | ÷ sqlmetrics | notes |",
              "|---|---|---:|---|---:|---:|---:|---:|---|"]
        for t, s in summary.items():
            tool = TOOLS[t]
            base = "sqlmetrics-trec" if tool.fmt == "trec" and "median" in summary.get("sqlmetrics-trec", {}) else "sqlmetrics"
            key = "wall" if tool.worker == "cli" else "median"  # a command against the API's whole process
            ratio = (f"{s[key] / summary[base][key]:.2f}" + ("" if base == "sqlmetrics" else " (trec)")
                     if "median" in s and "median" in summary.get(base, {}) else "–")
            note = tool.note
            if "evaluate_seconds" in s:
                note += f"; of which evaluate {fmt_s(s['evaluate_seconds'])} s"
            if "warm_evaluate_seconds" in s:
                note += f", 2nd evaluate in-process {fmt_s(s['warm_evaluate_seconds'])} s"
            if "error" in s:
                note += f"; error: `{s['error']}`"
            col = SPELLING[tool.spelling]
            lacking = [m[0] for m in mset if m[col] is None]
            if lacking and not t.startswith("duckdb"):
                note += f"; lacks {', '.join(lacking)}"
            median = fmt_s(s["median"]) if "median" in s else s.get("cell", "–")
            runs = " ".join(fmt_s(x) if x is not None else "–" for x in s["runs"])
            wall, cpu = (fmt_s(s[k]) if k in s else "–" for k in ("wall", "cpu"))
            L.append(f"| {t} | {tool.fmt} | {median} | {runs} | {wall} | {cpu} | {s['maxrss_mb']:,.0f} | {ratio} | {note} |")
        rows, unexpected = agreement(summary, mset, meta["ties"], args.tol)
        tools = [t for t in summary if summary[t].get("aggregate")]
        L += ["", f"Agreement of aggregates (|Δ| ≤ {args.tol:g} is ok): "
              + ("all as expected." if not unexpected else f"**{unexpected} unexpected mismatches.**"), "",
              "| measure | reference | value | " + " | ".join(tools) + " |",
              "|---|---|---:|" + "---|" * len(tools)]
        for canon, ref, value, cells in rows:
            L.append(f"| {canon} | {ref} | {value:.6f} | " + " | ".join(cells.get(t, "–") for t in tools) + " |")
    L += ["", "Ties: sqlmetrics, pytrec_eval and ir_measures order by score descending, then doc id descending "
          "(trec_eval's rule), except ir_measures' RR@k, which its msmarco provider computes with doc id ascending; "
          "ranx keeps tied documents in whatever order its (unstable) argsort leaves them. On data with ties a tool "
          "whose rule differs from the reference's is expected to differ (\"ties, Δ\"); anything else over the "
          "tolerance is a **MISMATCH**. `python bench/run.py --size S-noties` checks every tool on the same rankings "
          "without ties, where all must agree."]
    L += ["", "Median s: from reading the files to the aggregate numbers, in the tool's process, imports excluded "
          "(the CLI: the whole process). Process wall s: the whole child process (interpreter, imports, work); "
          "process CPU s: its user + system CPU time, all threads (less disturbed than wall time by other load). "
          "÷ sqlmetrics: median over the sqlmetrics API's median on the same input format (Parquet unless marked); "
          "for the CLI, process wall over the API's process wall."]
    return "\n".join(L) + "\n"


def environment() -> dict:
    versions = {}
    for dist in ["sqlmetrics", "duckdb", "pytrec-eval-terrier", "ranx", "ir-measures", "ir-eval-numba", "numba",
                 "pyarrow"]:
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = "not installed"
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return {"cpu": cpu, "cores": os.cpu_count(), "ram_gb": ram, "python": platform.python_version(),
            "versions": versions, "when": datetime.now().strftime("%Y-%m-%d %H:%M")}


def session_environment(cpu_start: tuple, trec_eval: str | None = None) -> dict:
    """environment(), the trec_eval command's version (`trec_eval -v`), and the CPU time other processes used since
    cpu_start (a cpu_seconds())."""
    env = environment()
    if trec_eval and shutil.which(trec_eval):
        p = subprocess.run([trec_eval, "-v"], capture_output=True, text=True)
        env["versions"]["trec_eval"] = (p.stdout + p.stderr).strip() + f" ({trec_eval})"
    machine, ours, wall = (b - a for a, b in zip(cpu_start, cpu_seconds()))
    env.update(session_seconds=wall, other_cpu_seconds=max(0.0, machine - ours),
               other_cpu_share=max(0.0, machine - ours) / (wall * os.cpu_count()))
    return env


def cpu_seconds() -> tuple[float, float, float]:
    """(CPU seconds the whole machine has been busy, CPU seconds of this process and its children, clock)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    busy = sum(fields) - fields[3] - fields[4]  # all but idle and iowait
    ours = sum(getattr(resource.getrusage(who), k) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
               for k in ("ru_utime", "ru_stime"))
    return busy / os.sysconf("SC_CLK_TCK"), ours, time.perf_counter()


# A preset's rows (issue 18's, issue 32's table): (work, the figure, its references, peak-memory bound MB or None,
# seconds bound or None). The figure and each reference are (tool, measure set, size): "main" is --size, "small"
# --small, "large" --large and "spark" --spark (a row is left out without its size); a job shared by rows runs once
# per repetition. A reference's "x" bound: figure/reference at most that (<= 1.2x the bare pass); its
# "faster" bound: reference/figure at least that (>= 5x faster than pytrec_eval).
ISSUE18 = [
    ("{main}, Parquet, 20 measures, Python API", ("sqlmetrics", "20", "main"),
     [("duckdb-floor", "20", "main", "x", 1.2), ("pytrec_eval", "20", "main", "faster", 5)], 600, None),
    ("{main}, Parquet, 1 measure (nDCG@10), Python API", ("sqlmetrics", "1", "main"),
     [("duckdb-floor", "20", "main", "x", None)], None, None),
    ("{main}, TREC text, 20 measures, `sqlmetrics eval`", ("sqlmetrics-cli-trec", "20", "main"),
     [("pytrec_eval", "20", "main", "faster", 4), ("trec_eval", "20", "main", "faster", 3)], None, None),
    ("{large}, Parquet, 20 measures, Python API", ("sqlmetrics", "20", "large"),
     [("pytrec_eval", "20", "large", "faster", 6)], 2048, None),
    ("{main}, 20 measures vs 1 (Parquet, Python API)", ("sqlmetrics", "20", "main"),
     [("sqlmetrics", "1", "main", "x", 1.3)], None, None),
    ("{small} end to end: `sqlmetrics eval`, TREC text, 20 measures", ("sqlmetrics-cli-trec", "20", "small"),
     [("python-start", "20", "small", "x", None)], None, 0.4),
    ("{spark}, 20 measures on Spark local (engine=), partitioned Parquet; files to numbers, session start "
     "excluded", ("sqlmetrics-spark", "20", "spark"), [("sqlmetrics", "20", "spark", "x", None)], None, None),
]
ISSUE32 = [
    ("{main}, Parquet, 20 measures, `evaluate` (Python API)", ("sqlmetrics", "20", "main"),
     [("duckdb-checked-floor", "20", "main", "x", 1.15), ("pytrec_eval", "20", "main", "faster", 2.5)], 700, None),
    ("{main}, TREC text, `sqlmetrics trec_eval -q -m all_trec`", ("sqlmetrics-trec_eval-all", "-", "main"),
     [("trec_eval-all", "-", "main", "faster", 1.5)], None, None),
    ("{main}, TREC text, `sqlmetrics trec_eval` (default measures)", ("sqlmetrics-trec_eval", "-", "main"),
     [("trec_eval-default", "-", "main", "faster", 2)], None, None),
    ("{main}, 2 runs, 3 measures, `sqlmetrics compare` (Student's t)", ("sqlmetrics-compare", "3", "main"),
     [("sqlmetrics-eval-2", "3", "main", "x", 1.25)], 800, None),
    ("{main}, 2 runs, 3 measures, `compare --test fisher` (10,000 resamples)",
     ("sqlmetrics-compare-fisher", "3", "main"), [("sqlmetrics-eval-2", "3", "main", "x", 2)], 1024, None),
    ("{main}, 2 runs, 3 measures, `compare --test bootstrap` (10,000 resamples)",
     ("sqlmetrics-compare-bootstrap", "3", "main"), [("sqlmetrics-eval-2", "3", "main", "x", 2)], 1024, None),
    ("{main}, 2 runs, 3 measures, `sqlmetrics report`", ("sqlmetrics-report", "3", "main"),
     [("sqlmetrics-compare", "3", "main", "x", 1.3)], None, None),
    ("trec_eval's test files, `sqlmetrics trec_eval` (after a warm-up call)",
     ("sqlmetrics-trec_eval-test", "-", "small"), [("python-duckdb", "-", "small", "x", 2)], None, None),
    ("{small}, TREC text, `sqlmetrics trec_eval`", ("sqlmetrics-trec_eval", "-", "small"),
     [("python-duckdb", "-", "small", "x", None)], None, 0.5),
    ("{main}, `sqlmetrics convert run run.txt -o run.jsonl`", ("convert-jsonl", "-", "main"),
     [("convert-parquet", "-", "main", "x", 2)], None, None),
    ("{main}, Parquet, 20 measures, `evaluate` against ir-eval-numba (its 10 of them)", ("sqlmetrics", "20", "main"),
     [("ir-eval-numba", "20", "main", "faster", None)], None, None),
]
PRESETS = {"issue18": ISSUE18, "issue32": ISSUE32}
# Spark's row is timed in-process (evaluate_seconds, else the files-to-numbers `median`): its JVM start
# would otherwise be most of the figure. Every other figure is the whole process's wall time.
IN_PROCESS = {"sqlmetrics-spark"}


def preset(preset_name: str, args) -> None:
    """Run one of PRESETS: every job its rows need, interleaved; the rows printed and written as JSON."""
    sizes = {"main": args.size, "small": args.small, "large": args.large, "spark": args.spark}
    rows = [(work.format(**sizes), (fig[0], fig[1], sizes[fig[2]]), [(t, m, sizes[z], *b) for t, m, z, *b in refs],
             *bounds) for work, fig, refs, *bounds in PRESETS[preset_name] if sizes[fig[2]] is not None]
    jobs = list(dict.fromkeys(j for _, fig, refs, _, _ in rows for j in [fig, *(ref[:3] for ref in refs)]))
    metas, skipped = {}, {}
    for key in dict.fromkeys(j[2] for j in jobs):
        data = BENCH / "data" / key
        if not (data / "meta.json").exists():
            sys.exit(f"{data} has no data: run `python bench/generate.py {key}`")
        metas[key] = json.loads((data / "meta.json").read_text())
    for tool in dict.fromkeys(j[0] for j in jobs):
        if why := preflight(TOOLS[tool], args):
            skipped[tool] = f"missing ({why})"
            print(f"{tool}: {why}", file=sys.stderr)
    jobs = [j for j in jobs if j[0] not in skipped]
    for size in {size for t, _, size in jobs if "{run2}" in TOOLS[t].argv}:
        if not (BENCH / "data" / size / "run2.parquet").exists():
            sys.exit(f"bench/data/{size} has no run2.parquet: run `python bench/generate.py {size}`")
    warm_inputs({(TOOLS[t].fmt, size) for t, _, size in jobs})
    for tool, mset, size in jobs:  # a warm-up call (caches, numba): the rows time the calls after it
        if TOOLS[tool].warm:
            run_once(TOOLS[tool], BENCH / "data" / size, MEASURE_SETS[mset], args)
    # The commit measured: the one checked out when the session starts.
    commit = subprocess.run(["git", "-C", str(BENCH), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    cpu_start = cpu_seconds()
    records: dict = {j: [] for j in jobs}
    for rep in range(args.repeat):  # interleaved: every job once, then every job again
        for tool, mset, size in jobs:
            rec = run_once(TOOLS[tool], BENCH / "data" / size, MEASURE_SETS[mset], args)
            records[(tool, mset, size)].append(rec)
            shown = fmt_s(rec["wall"]) + " s" if rec["status"] == "ok" else rec["status"]
            print(f"[{rep + 1}/{args.repeat}] {tool:28} {mset:>3} measures {size:>3} {shown:>10}  "
                  f"{rec['maxrss_mb']:,.0f} MB {rec.get('error', '')}", file=sys.stderr)
    summary = {j: summarise(recs, args) for j, recs in records.items()}

    def name(job):
        measures = "" if job[1] == "-" else f"{job[1]} measure{'s' if job[1] != '1' else ''}, "
        return f"{job[0]}, {measures}{job[2]}"

    out_rows = []
    for work, fig, refs, peak_mb, seconds_bound in rows:
        in_process = fig[0] in IN_PROCESS

        def seconds(s):
            return s.get("evaluate_seconds", s.get("median")) if in_process else s.get("wall")
        f = summary.get(fig, {})
        row = {"work": work, "size": fig[2], "figure": name(fig), "seconds": seconds(f), "peak_mb": f.get("maxrss_mb"),
               "peak_bound_mb": peak_mb, "seconds_bound": seconds_bound, "status": f.get("status", skipped.get(fig[0])),
               "timed": "in-process" if in_process else "process wall", "references": []}
        if "per_query_max_difference" in f.get("extra", {}):  # Spark's per-query values against DuckDB's
            row["per_query_max_difference"] = f["extra"]["per_query_max_difference"]
        for tool, mset, size, kind, bound in refs:
            r = summary.get((tool, mset, size), {})
            ref = {"reference": name((tool, mset, size)), "seconds": seconds(r), "peak_mb": r.get("maxrss_mb"),
                   "kind": kind, "bound": bound, "status": r.get("status", skipped.get(tool))}
            if row["seconds"] and ref["seconds"]:
                ratio = row["seconds"] / ref["seconds"] if kind == "x" else ref["seconds"] / row["seconds"]
                ref["ratio"] = ratio
                if bound is not None:
                    ref["met"] = ratio <= bound if kind == "x" else ratio >= bound
            row["references"].append(ref)
        if peak_mb is not None and row["peak_mb"] is not None:
            row["peak_met"] = row["peak_mb"] <= peak_mb
        if seconds_bound is not None and row["seconds"] is not None:
            row["seconds_met"] = row["seconds"] <= seconds_bound
        out_rows.append(row)
        print(f"{row['work']}: {fmt_s(row['seconds']) + ' s' if row['seconds'] else row['status']}, "
              f"peak {row['peak_mb'] or 0:,.0f} MB" + "".join(
                  f"; {cell}" + (f" [{target}]" if target != "–" else "") for cell, target in map(
                      table_cells, row["references"])))
    env = session_environment(cpu_start, args.trec_eval)
    report = {"preset": preset_name, "repeat": args.repeat, "sizes": sizes, "meta": metas, "env": env,
              "commit": commit.stdout.strip(), "skipped": skipped, "rows": out_rows,
              "runs": {name(j): s for j, s in summary.items()}}
    stamp = f"{datetime.now():%Y%m%d-%H%M%S}"
    path = Path(args.output) if args.output else BENCH / "results" / f"{preset_name}-{stamp}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1, default=str))
    print(f"wrote {path}; `python bench/table.py {path}` puts it in the README", file=sys.stderr)
    failed = [name(j) for j, s in summary.items() if s["status"] != "ok"]
    if failed:  # the smoke test's failure (CI): a tool that ran and failed, not one that is missing
        sys.exit(f"failed: {', '.join(failed)}")


def warm_inputs(formats_sizes) -> None:
    """Read the inputs once so that no tool pays for the first read from disk, and byte-compile sqlmetrics (an
    editable checkout has no .pyc until a process writes them) so that no repetition pays for that either."""
    package = Path(importlib.util.find_spec("sqlmetrics").origin).parent
    subprocess.run([PY, "-m", "compileall", "-q", str(package)], check=True)
    for fmt, size in formats_sizes:
        for k in ("qrels", "run"):
            with open(BENCH / "data" / size / f"{k}.{'parquet' if fmt == 'parquet' else 'txt'}", "rb") as fh:
                while fh.read(1 << 24):
                    pass


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", required=True, help="a folder under bench/data: S, M, L, XL, S-noties, ...")
    ap.add_argument("--issue18", action="store_true", help="measure issue 18's table instead (see ISSUE18)")
    ap.add_argument("--issue32", action="store_true", help="measure issue 32's table instead (see ISSUE32)")
    ap.add_argument("--small", default="S", help="with a preset: the size of the small rows (default S)")
    ap.add_argument("--large", help="with --issue18: the size of the large row (e.g. L; left out without it)")
    ap.add_argument("--spark", help="with --issue18: the size to run on Spark too (e.g. S; minutes; left out without it)")
    ap.add_argument("--output", help="with a preset: the JSON file to write (default bench/results/<preset>-<time>.json)")
    ap.add_argument("--trec-eval", default=os.environ.get("TREC_EVAL") or shutil.which("trec_eval"),
                    help="the trec_eval command (default $TREC_EVAL, else trec_eval on PATH)")
    ap.add_argument("--shared", default=str(BENCH.parent.parent / "shared"),
                    help="the shared data folder, for trec_eval's test files (default ../shared beside the repo)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tools", default="all", help=f"comma list or 'all' (= {','.join(DEFAULT_TOOLS)}); "
                    f"'all,ranx-nocache' adds the JIT-from-scratch ranx")
    ap.add_argument("--measures", default="standard,20", help="comma list of: " + ", ".join(MEASURE_SETS))
    ap.add_argument("--timeout", type=float, default=900, help="seconds per tool run (default 900)")
    ap.add_argument("--max-rss-gb", type=float, default=round(environment()["ram_gb"] * 0.85),
                    help="kill a run whose RSS passes this (default 85%% of RAM)")
    ap.add_argument("--anchors-on-xl", action="store_true", help="also run pytrec_eval/ranx/ir_measures on XL")
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--memory-limit", help="sqlmetrics' DuckDB memory limit, e.g. 2GB (it spills past it)")
    args = ap.parse_args()
    if args.memory_limit:  # read by the sqlmetrics workers (tools.py and the CLI command line)
        os.environ["SQLMETRICS_BENCH_MEMORY_LIMIT"] = args.memory_limit
    for name in PRESETS:
        if getattr(args, name):
            return preset(name, args)

    data = BENCH / "data" / args.size
    if not (data / "meta.json").exists():
        sys.exit(f"{data} has no data: run `python bench/generate.py {args.size.split('-')[0]}`"
                 + (" --no-ties" if args.size.endswith("-noties") else ""))
    meta = json.loads((data / "meta.json").read_text())
    names = []
    for n in args.tools.split(","):
        names += DEFAULT_TOOLS if n == "all" else [n]
    unknown = [n for n in names if n not in TOOLS]
    if unknown:
        sys.exit(f"unknown tools {unknown}; known: {', '.join(TOOLS)}")
    msets = {m: MEASURE_SETS[m] for m in args.measures.split(",")}

    skipped, tools = {}, []
    for n in dict.fromkeys(names):
        if meta["size"] == "XL" and TOOLS[n].anchor and not args.anchors_on_xl:
            skipped[n] = "skipped on XL: it builds Python dicts of all 200M rows, far beyond this machine's RAM "
            skipped[n] += "(pass --anchors-on-xl to try)"
        elif why := preflight(TOOLS[n], args):
            skipped[n] = f"missing ({why})"
        else:
            tools.append(TOOLS[n])
    for n, why in skipped.items():
        print(f"{n}: {why}", file=sys.stderr)

    warm_inputs({(t.fmt, args.size) for t in tools})

    cpu_start = cpu_seconds()
    records = []
    for rep in range(args.repeat):
        for set_name, mset in msets.items():
            for tool in tools:
                rec = run_once(tool, data, mset, args)
                rec.update(tool=tool.name, set=set_name, rep=rep)
                records.append(rec)
                shown = fmt_s(rec["seconds"]) + " s" if rec["status"] == "ok" else rec["status"]
                print(f"[{rep + 1}/{args.repeat}] {set_name:8} {tool.name:18} {shown:>10}  "
                      f"{rec['maxrss_mb']:,.0f} MB {rec.get('error', '')}", file=sys.stderr)

    results = {}
    for set_name, mset in msets.items():
        results[set_name] = (mset, {t.name: summarise([r for r in records if r["tool"] == t.name and r["set"] == set_name], args)
                                    for t in tools})
    env = session_environment(cpu_start, args.trec_eval)
    md = render(meta, results, args, skipped, env)
    print(md)
    out = BENCH / "results"
    out.mkdir(exist_ok=True)
    stem = out / f"{args.size}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
    stem.with_suffix(".md").write_text(md)
    stem.with_suffix(".json").write_text(json.dumps(
        {"meta": meta, "args": vars(args), "env": env, "skipped": skipped, "records": records,
         "summary": {k: v[1] for k, v in results.items()}}, indent=1, default=str))
    print(f"wrote {stem}.md and .json", file=sys.stderr)


if __name__ == "__main__":
    main()
