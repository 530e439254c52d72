"""`sqlmetrics sql`: the evaluation as one SQL statement for a warehouse, over tables that live there."""
from __future__ import annotations

import re

from ..dialects import DIALECTS, render
from ..options import SQL_CMD
from .common import UsageError, add_option_flags, measures_from, option_values


def add_parser(sub, parents) -> None:
    p = sub.add_parser(
        "sql", parents=parents, help="print the evaluation as one SQL statement for a warehouse",
        description="Print the whole evaluation as ONE SQL statement for another engine, over tables that live "
                    "there. Names are bound as identifiers, never pasted: qualified tables (db.schema.table, "
                    "BigQuery project.dataset.table) and mapped columns come out quoted where they must.")
    p.add_argument("-m", "--measure", action="append", required=True, metavar="MEASURE",
                   help="a measure in any spelling (nDCG@10, map, P_10, ...); repeatable or comma-separated")
    p.add_argument("--dialect", default="duckdb", metavar="DIALECT",
                   help=f"the engine's SQL: {', '.join(DIALECTS)} (default duckdb)")
    p.add_argument("--qrels", default="qrels", metavar="TABLE",
                   help="the qrels table (default qrels); 'none' when the judgments are in the run (--label, "
                        "--relevance)")
    p.add_argument("--run", default="run", metavar="TABLE", help="the run table (default run)")
    p.add_argument("-q", "--per-query", action="store_true", help="one row per query (and run) instead of the means")
    p.add_argument("--no-header", action="store_true", help="leave out the comment block naming measures and options")
    p.add_argument("--dbt", action="store_true",
                   help="SQL for a dbt model: no trailing ';', and --qrels / --run may be dbt references, "
                        "\"{{ source('raw', 'run') }}\" or \"{{ ref('stg_run') }}\", kept as they are")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    add_option_flags(p, SQL_CMD)
    p.set_defaults(func=run)


# A Jinja expression given as a table: a dbt reference, which dbt replaces by the table's name.
_JINJA = re.compile(r"\{\{.*\}\}", re.S)
# What stands for it while the statement is rendered: a plain name, which no dialect quotes or folds apart from
# case (Snowflake upper-cases), bracketed (T-SQL) or backquoted (MySQL) at most.
_STAND_IN = "sqlmetrics_dbt_{}"
_STAND_INS = re.compile(r"[\"`\[]?\b" + _STAND_IN.format(r"(qrels|run)") + r"\b[\"`\]]?", re.I)


def run(args) -> tuple:
    options = option_values(args, SQL_CMD)
    if "into" not in options:
        if args.into_mode != "create":
            raise UsageError("--into-mode says how to write the results into --into TABLE; give --into too.")
        options.pop("into_mode", None)
    elif args.dbt:
        raise UsageError("--into and --dbt: dbt writes a model's table itself (its materialization); leave --into out.")
    tables = {"qrels": None if args.qrels.lower() == "none" else args.qrels, "run": args.run}
    references = {role: t.strip() for role, t in tables.items() if t and _JINJA.fullmatch(t.strip())}
    if references and not args.dbt:
        raise UsageError(f"--{next(iter(references))} {next(iter(references.values()))!r} is a dbt reference: "
                         "add --dbt, which keeps it as it is.")
    tables.update({role: _STAND_IN.format(role) for role in references})
    sql = render(measures_from(args, ()), dialect=args.dialect, qrels=tables["qrels"], run=tables["run"],
                 per_query=args.per_query, header=not args.no_header, **options)
    if args.dbt:
        return _STAND_INS.sub(lambda m: references.get(m.group(1).lower(), m.group(0)), sql) + "\n", args.output
    return sql + ";\n", args.output
