"""`sqlmetrics sql`: the evaluation as one SQL statement for a warehouse, over tables that live there."""
from __future__ import annotations

import re

from ..dialects import DIALECTS, render, render_fusion
from ..dialects.info import dialect_info
from ..identifiers import column_identifier
from ..options import BY_NAME, SQL_CMD
from ..stats.aggregates import IN_ENGINE, render_compare
from .common import UsageError, add_fusion_flags, add_option_flags, fusion_params, measures_from, option_values


def add_parser(sub, parents) -> None:
    p = sub.add_parser(
        "sql", parents=parents, help="print the evaluation as one SQL statement for a warehouse",
        description="Print the whole evaluation as ONE SQL statement for another engine, over tables that live "
                    "there. Names are bound as identifiers, never pasted: qualified tables (db.schema.table, "
                    "BigQuery project.dataset.table) and mapped columns come out quoted where they must.")
    p.add_argument("-m", "--measure", action="append", metavar="MEASURE",
                   help="a measure in any spelling (nDCG@10, map, P_10, ...); repeatable or comma-separated")
    p.add_argument("--dialect", default="duckdb", metavar="DIALECT",
                   help=f"the engine's SQL: {', '.join(DIALECTS)} (default duckdb)")
    p.add_argument("--qrels", default="qrels", metavar="TABLE",
                   help="the qrels table (default qrels); 'none' when the judgments are in the run (--label, "
                        "--relevance)")
    p.add_argument("--run", default="run", metavar="TABLE", help="the run table (default run)")
    p.add_argument("-q", "--per-query", action="store_true", help="one row per query (and run) instead of the means")
    p.add_argument("--compare", choices=IN_ENGINE, metavar="TEST",
                   help="print compare's sufficient statistics for TEST instead (the runs of one table: --column "
                        f"run_name=COLUMN): {', '.join(IN_ENGINE)}; run it where the tables are, save its rows, and "
                        "`sqlmetrics decide ROWS` prints the comparison (with --max-p, --seed, --n-resamples, "
                        "--pairing, --unit and --pre-period as compare takes them)")
    p.add_argument("--no-header", action="store_true", help="leave out the comment block naming measures and options")
    p.add_argument("--dbt", action="store_true",
                   help="SQL for a dbt model: no trailing ';', and --qrels / --run may be dbt references, "
                        "\"{{ source('raw', 'run') }}\" or \"{{ ref('stg_run') }}\", kept as they are")
    p.add_argument("--incremental", metavar="COLUMN",
                   help="with --dbt: an incremental model on this --group-by segment (a date): each run evaluates "
                        "the log's rows from the table's last COLUMN value on (and those without one), and replaces "
                        "those segments' rows (unique_key: sqlmetrics_key, a column of the run, the segments and, "
                        "with -q, the query, NULL-safe)")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    add_option_flags(p, SQL_CMD)
    fusion = p.add_argument_group("fusion (--fuse prints the fused run's statement instead of an evaluation)")
    add_fusion_flags(fusion, ("--fuse",), required=False)
    fusion.add_argument("--fuse-run", action="append", metavar="TABLE",
                        help="a run table to fuse; give two or more, in the order --weights follows")
    p.set_defaults(func=run)


# A table given as a dbt reference, which dbt replaces by the table's name: {{ ref('model') }}, {{ ref('package',
# 'model', v=2) }} or {{ source('source', 'table') }}, with plain string arguments. Nothing else the user types is
# kept as Jinja: dbt would run it when it compiles the model.
_ARG = r"""\s*(?:'[^'{}%#\\]*'|"[^"{}%#\\]*")\s*"""
_REFERENCE = re.compile(r"\{\{\s*(?:ref|source)\s*\(" + _ARG + "(?:," + _ARG + r")?(?:,\s*(?:v|version)\s*=" +
                        r"""\s*(?:\d+|'[\w.]*'|"[\w.]*")\s*)?\)\s*\}\}""")
_JINJA = re.compile(r"\{[{%#]")  # what opens Jinja: an expression, a statement, a comment
# The incremental model's key column (render()'s row_key), its unique_key: a plain name, which dbt pastes unquoted.
ROW_KEY = "sqlmetrics_key"
# What stands for it while the statement is rendered: a plain name, which no dialect quotes or folds apart from
# case (Snowflake upper-cases), bracketed (T-SQL) or backquoted (MySQL) at most.
_STAND_IN = "sqlmetrics_dbt_{}"
_STAND_INS = re.compile(r"[\"`\[]?\b" + _STAND_IN.format(r"(qrels|run\d*)") + r"\b[\"`\]]?", re.I)


def run(args) -> tuple:
    if args.method is not None:
        if args.measure is not None:
            raise UsageError("--fuse prints the fused run's statement; -m evaluates a run: give one of them.")
        runs = {f"run{i}": table for i, table in enumerate(args.fuse_run or [])}
        references = _references(runs, args.dbt, "--fuse-run")
        runs.update({role: _STAND_IN.format(role) for role in references})
        sql = render_fusion(list(runs.values()), args.method, norm=args.norm, dialect=args.dialect,
                            **fusion_params(args))
        return (_for_dbt(sql, references) if args.dbt else sql + ";\n"), args.output
    if args.measure is None:
        raise UsageError("give the measures to evaluate (-m nDCG@10 ...), or --fuse METHOD with --fuse-run tables.")
    options = option_values(args, SQL_CMD)
    test_settings = {k: options.pop(k) for k in _TEST_SETTINGS if k in options}
    if args.compare is None and (given := [k for k, v in test_settings.items() if v != BY_NAME[k].default]):
        raise UsageError(f"{BY_NAME[given[0]].cli_flags[0]} is a setting of the test: give --compare TEST too.")
    if args.compare is not None and (args.per_query or "into" in options):
        raise UsageError("--compare prints the statistics' statement: leave out -q and --into.")
    if "into" not in options:
        if args.into_mode != "create":
            raise UsageError("--into-mode says how to write the results into --into TABLE; give --into too.")
        options.pop("into_mode", None)
    elif args.dbt:
        raise UsageError("--into and --dbt: dbt writes a model's table itself (its materialization); leave --into out.")
    if args.incremental is not None:
        _check_incremental(args, options)
    tables = {"qrels": None if args.qrels.lower() == "none" else args.qrels, "run": args.run}
    references = _references(tables, args.dbt)
    tables.update({role: _STAND_IN.format(role) for role in references})
    if args.compare is not None:
        sql = render_compare(measures_from(args, ()), dialect=args.dialect, qrels=tables["qrels"], run=tables["run"],
                             test=args.compare, **test_settings, **options)
        return (_for_dbt(sql, references) if args.dbt else sql + ";\n"), args.output
    if args.incremental is not None:
        options["row_key"] = ROW_KEY
    sql = render(measures_from(args, ()), dialect=args.dialect, qrels=tables["qrels"], run=tables["run"],
                 per_query=args.per_query, header=not args.no_header, **options)
    if args.incremental is not None:
        return _incremental(_for_dbt(sql, references), args), args.output
    return (_for_dbt(sql, references) if args.dbt else sql + ";\n"), args.output


def _check_incremental(args, options: dict) -> None:
    segments = options.get("group_by") or []  # the flag's list of columns
    if not args.dbt:
        raise UsageError("--incremental COLUMN makes a dbt model incremental: give --dbt too.")
    if args.compare is not None:
        raise UsageError("--incremental: --compare's statistics are over every row of the log, not per segment; "
                         "build them with a table model (leave --incremental out).")
    if args.incremental not in segments:
        raise UsageError(f"--incremental {args.incremental}: the model's rows are keyed by the --group-by segments; "
                         f"add --group-by {args.incremental}.")
    info = dialect_info(args.dialect)
    names = [column_identifier(s, info.sqlglot, info.fold_case).name for s in segments]  # as the table has them
    quoted = [s for s, name in zip(segments, names) if set('"`') & set(name)]
    if quoted and info.name != "duckdb":
        raise UsageError(f"--group-by {quoted[0]}: dbt's incremental merge on {info.name} pastes a column's name "
                         "between quotes without doubling the quotes in it, so the model's second build would fail; "
                         "rename the column (in a staging model, say). dbt-duckdb merges by name and takes it.")
    if ROW_KEY in (name.lower() for name in names):
        raise UsageError(f"--group-by {ROW_KEY}: the incremental model adds a column of that name, its rows' key "
                         "(unique_key); rename the segment column (in a staging model, say).")
    if not _REFERENCE.fullmatch(args.run.strip()):
        raise UsageError(f"--incremental: --run {args.run!r} must be a dbt reference, \"{{{{ ref('model') }}}}\" or "
                         "\"{{ source('source', 'table') }}\", which the model filters to the new rows.")


def _incremental(model: str, args) -> str:
    """The dbt model made incremental on a segment: its config (unique_key: the row key the statement computes,
    never NULL, which dbt's merge can compare with = and paste unquoted), and the run read from the table's last
    value of the segment on (that value again: its rows may have grown since; every value when the table has
    none), and the rows without one (NULL is before no value), so that dbt replaces those segments' rows and
    keeps the others."""
    info = dialect_info(args.dialect)
    column = _inert(column_identifier(args.incremental, info.sqlglot, info.fold_case).sql(info.sqlglot))
    last = f"(SELECT MAX({column}) FROM {{{{ this }}}})"
    rows = (f"(SELECT * FROM {args.run.strip()}{{% if is_incremental() %}} WHERE {column} IS NULL OR {column} >= "
            f"COALESCE({last}, {column}){{% endif %}})")
    alias = "" if info.name == "oracle" else "AS "

    def filtered(m):  # the run's reference, as a derived table under the name it had (or its own alias)
        return rows + m.group(1) if m.group(1) else f"{rows} {alias}sqlm_run"

    reference = re.compile(re.escape(args.run.strip()) + r"(\s+AS\s+\w+)?")
    model = "\n".join(line if line.startswith("--") else reference.sub(filtered, line) for line in model.split("\n"))
    config = f"{{{{ config(materialized='incremental', unique_key='{ROW_KEY}', incremental_strategy='merge') }}}}\n"
    return config + model


# compare's settings, which --compare writes into its statement
_TEST_SETTINGS = ("max_p", "seed", "n_resamples", "pairing", "unit", "pre_period", "covariate")


def _references(tables: dict, dbt: bool, flag: str | None = None) -> dict:
    """{role: reference} for the tables given as dbt references; other Jinja in a table name is refused."""
    references = {role: t.strip() for role, t in tables.items() if t and _REFERENCE.fullmatch(t.strip())}
    if references and not dbt:
        role, reference = next(iter(references.items()))
        raise UsageError(f"{flag or '--' + role} {reference!r} is a dbt reference: add --dbt, which keeps it as it is.")
    for role, table in tables.items():
        if dbt and role not in references and table and _JINJA.search(table):
            raise UsageError(f"{flag or '--' + role} {table!r}: a dbt model takes a table as a plain name, "
                             "{{ ref('model') }} or {{ source('source', 'table') }}; other Jinja is not kept.")
    return references


def _inert(text: str) -> str:
    """Text for a dbt model: every Jinja opener in it printed by Jinja as text, so that compiling runs nothing."""
    return _JINJA.sub(lambda m: "{{ '%s' }}" % m.group(0), text)


def _for_dbt(sql: str, references: dict) -> str:
    """The statement as a dbt model: every Jinja opener in it (in a column name, a literal, a comment: what the
    user typed) printed by Jinja as text, so that compiling the model runs nothing; then the references put in
    for their stand-ins; no trailing ';'."""
    return _STAND_INS.sub(lambda m: references.get(m.group(1).lower(), m.group(0)), _inert(sql)) + "\n"
