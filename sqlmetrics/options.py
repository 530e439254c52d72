"""Every option, declared once: its Python keyword, command-line flag, type, default, choices, help, and
which functions and commands take it. evaluate(), compare(), render() and evaluate_on() resolve their
keyword arguments here (`resolve`), the command line builds its flags here (`cli/`), and the README's
option table is generated from here (`python -m sqlmetrics.catalogue.reference`).
"""
from __future__ import annotations

import difflib
import inspect
import math
from dataclasses import dataclass

from .errors import SqlmetricsError

QRELS_ROLES = ("query_id", "doc_id", "relevance")
RUN_ROLES = ("run_name", "query_id", "doc_id", "score", "rank_position")
# The qrels' judgment group and subgroup (qrels_format='qrels_jg', 'prefs', 'qrels_prefs'), read only when
# the format says so.
GROUP_ROLES = ("judgment_group", "judgment_subgroup")
# The subtopic of a judgment (qrels_format='subtopics', ndeval's `query subtopic document grade`): the
# diversity measures (alpha_nDCG, ERR_IA, ...) read it.
SUBTOPIC_ROLE = "subtopic"
# The extra roles each qrels format reads.
FORMAT_GROUPS = {"qrels": (), "qrels_jg": ("judgment_group",), "prefs": GROUP_ROLES, "qrels_prefs": ("judgment_group",),
                 "subtopics": (SUBTOPIC_ROLE,)}
# The columns of a RAG pipeline's judged statements (verdicts=) beside its query id, named so in every table.
VERDICT_COLUMNS = ("statement_of", "verdict")
# The item features' columns (items=): a list of numbers (vector), a category, or one row per dimension (long form).
ITEM_ROLES = ("vector", "category", "dimension", "value")
# The nugget inputs' columns beside the topic (nuggets=: nugget, importance, weight; assignments=: run, nugget,
# assignment), found by name or mapped by columns=.
NUGGET_ROLES = ("nugget", "importance", "weight", "run", "assignment")
ROLES = (*RUN_ROLES, "relevance", *GROUP_ROLES, SUBTOPIC_ROLE, *ITEM_ROLES, *NUGGET_ROLES)

TESTS = {
    "student": "paired Student's t-test",
    "fisher": "Fisher's randomization test",
    "bootstrap": "paired bootstrap test",
    "wilcoxon": "Wilcoxon signed-rank test",
    "tukey": "Tukey's HSD test",
    "welch": "Welch's t-test",
    "mannwhitney": "Mann-Whitney U test",
}
# Tests of paired data, and their counterpart on unpaired data (different queries, sessions or users per run).
UNPAIRED = {"student": "welch", "wilcoxon": "mannwhitney", "bootstrap": "bootstrap", "welch": "welch",
            "mannwhitney": "mannwhitney"}
CORRECTIONS = {None: None, "bonferroni": "Bonferroni correction", "holm": "Holm-Bonferroni correction",
               "bh": "Benjamini-Hochberg false discovery rate"}

# Who takes an option: Python functions and command-line subcommands.
EVALUATE, EVALUATE_ON, RENDER, COMPARE = "evaluate", "evaluate_on", "render", "compare"
EVAL_CMD, COMPARE_CMD, DEMO_CMD, SQL_CMD, CONVERT_CMD = "eval", "compare", "demo", "sql", "convert"
DECIDE_CMD = "decide"  # `sqlmetrics decide`: compare's report from the statistics of `sqlmetrics sql --compare`
COUNTERFACTUAL_CMD = "counterfactual"  # `sqlmetrics ips` and `sqlmetrics interleaving`
FUSE_CMD = "fuse"  # `sqlmetrics fuse`
CLICKS, CLICKS_CMD = "fit_clicks", "clicks"  # a click model fitted to a log (sqlmetrics.clicks), and its command
AGREEMENT_CMD = "agreement"  # `sqlmetrics agreement`: two judgment sets compared (sqlmetrics.judgments)
PPI_CMD = "ppi"  # `sqlmetrics ppi`: prediction-powered inference over LLM qrels (sqlmetrics.judgments.ppi)
REPORT = "report"  # the HTML report: stats.html.build_report() and `sqlmetrics report`
_EVERYWHERE = frozenset({EVALUATE, EVALUATE_ON, RENDER, COMPARE, EVAL_CMD, COMPARE_CMD, SQL_CMD, REPORT})
_LOCAL = frozenset({EVALUATE, COMPARE, EVAL_CMD, COMPARE_CMD, REPORT})
# DuckDB's resources: every command that opens a DuckDB database for its work
_RESOURCES = _LOCAL | {COUNTERFACTUAL_CMD, FUSE_CMD, CONVERT_CMD, CLICKS, CLICKS_CMD, AGREEMENT_CMD, PPI_CMD}
_CLICKS = frozenset({CLICKS, CLICKS_CMD})
_LOGS = frozenset({EVALUATE, EVALUATE_ON, RENDER, COMPARE, EVAL_CMD, COMPARE_CMD, SQL_CMD, REPORT})
_COMPARING = frozenset({COMPARE, COMPARE_CMD, DEMO_CMD, REPORT})
# compare's settings that `sqlmetrics sql --compare` writes into its statement
_RENDERED_TEST = _COMPARING | {SQL_CMD}


@dataclass(frozen=True)
class Option:
    name: str  # the Python keyword
    default: object
    help: str
    takers: frozenset  # functions and subcommands that take it
    choices: tuple = ()
    # text | int | float | flag (True/False) | mapping (ROLE=NAME pairs) | shares (NAME=NUMBER pairs) |
    # names (repeatable) | object (a Python
    # object such as a connection: a keyword only, never a flag; compare() and `sqlmetrics compare` share a name)
    kind: str = "text"
    flags: tuple = ()  # command-line spellings; default: --name-with-dashes
    metavar: str | None = None
    group: str = "evaluation options"
    roles: tuple = ROLES  # a mapping's roles
    minimum: int | None = None  # an int's smallest value

    @property
    def cli_flags(self) -> tuple:
        return self.flags or ("--" + self.name.replace("_", "-"),)

    def check(self, value):
        """The value, validated; an error names the keyword and what it takes."""
        if value is None and self.default is None:
            return None
        if self.choices:
            if value not in self.choices:
                shown = ", ".join(repr(c) for c in self.choices)
                raise SqlmetricsError(f"{self.name}={value!r} is not valid: use one of {shown}.")
        elif self.kind == "int":
            if isinstance(value, bool) or not isinstance(value, int):
                raise SqlmetricsError(f"{self.name}={value!r} must be an integer. {self.help}")
            if self.minimum is not None and value < self.minimum:
                raise SqlmetricsError(f"{self.name}={value!r} must be at least {self.minimum}. {self.help}")
        elif self.kind == "flag":
            if not isinstance(value, bool):
                raise SqlmetricsError(f"{self.name}={value!r} must be True or False. {self.help}")
        elif self.kind == "float":
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise SqlmetricsError(f"{self.name}={value!r} must be a number. {self.help}")
        elif self.kind == "mapping":
            if not isinstance(value, dict):
                raise SqlmetricsError(f"{self.name}= must be a dict {{role: column}}, got {type(value).__name__}.")
            for role, column in value.items():
                if role not in self.roles:
                    raise SqlmetricsError(f"{self.name}= names an unknown role {role!r}; the roles are "
                                          f"{', '.join(self.roles)}.")
                if not isinstance(column, str) or not column:
                    raise SqlmetricsError(f"{self.name}= maps {role!r} to {column!r}; give a column name.")
        elif self.kind == "shares":
            if not isinstance(value, dict) or not value:
                raise SqlmetricsError(f"{self.name}= must be a dict {{name: share}}, such as {{'control': 1, "
                                      f"'treatment': 1}}; got {value!r}.")
            for name, share in value.items():
                if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share < math.inf:
                    raise SqlmetricsError(f"{self.name}= gives {name!r} the share {share!r}; a share is a positive "
                                          "number (the shares need not add up to 1).")
        return value


# The nugget inputs: wherever a run is evaluated (compare(), report and their commands evaluate the runs they test).
_NUGGET_TAKERS = frozenset({EVALUATE, EVALUATE_ON, RENDER, COMPARE, EVAL_CMD, COMPARE_CMD, SQL_CMD, REPORT})

OPTIONS = (
    Option("queries", "qrels", "which queries are averaged: every judged query, missing ones scoring 0 ('qrels', "
           "trec_eval -c) or only those in both qrels and run ('intersection', trec_eval without -c)",
           _EVERYWHERE, choices=("qrels", "intersection")),
    Option("ties", "docid_desc", "order within equal scores: document id descending (trec_eval), ascending, or "
           "the run's own rank_position column ('rank')", _EVERYWHERE, choices=("docid_desc", "docid_asc", "rank")),
    Option("relevance_level", 1, "grades >= this are relevant (trec_eval -l)", _EVERYWHERE, kind="int",
           flags=("-l", "--relevance-level"), metavar="N"),
    Option("compat", "trec_eval-10.0", "which trec_eval's definitions where its versions differ (interpolated "
           "precision's recall rounding, a judged query the run misses in utility and yaap): 10.0, the current "
           "release, or 9.0.8, which pytrec_eval and ir_measures reproduce",
           _EVERYWHERE, choices=("trec_eval-9.0.8", "trec_eval-10.0")),
    Option("depth", None, "evaluate only each ranking's first N documents, after sorting (trec_eval -M); 0 leaves "
           "every ranking empty", _EVERYWHERE, kind="int", flags=("-M", "--depth"), metavar="N", minimum=0),
    Option("judged_only", False, "drop the documents without a judgment (or with a negative grade) from each "
           "ranking before evaluating it (trec_eval -J, ir_measures judged_only)", _EVERYWHERE, kind="flag",
           flags=("-J", "--judged-only")),
    Option("score_precision", "float64", "float32 rounds scores as trec_eval <= 9.0.8 and pytrec_eval do",
           _EVERYWHERE, choices=("float64", "float32")),
    Option("columns", None, "the column playing a role (query_id, doc_id, relevance, score, rank_position, "
           "judgment_group, judgment_subgroup, subtopic, run_name; vector, category, dimension, value in items=), in both tables wherever the role exists; run_name evaluates every run of the table",
           _EVERYWHERE, kind="mapping", flags=("--column",), metavar="ROLE=NAME"),
    Option("list_run", False, "the run has one row per query: doc_id is a list of document ids in rank order, "
           "score (when mapped) the list of their scores; a list position is the rank (read so locally whenever "
           "the doc_id column is a list)", frozenset({EVALUATE, EVALUATE_ON, RENDER, SQL_CMD}), kind="flag"),
    Option("qrels_columns", None, "the qrels' own column for a role, where it differs from the shared mapping",
           _EVERYWHERE, kind="mapping", flags=("--qrels-column",), metavar="ROLE=NAME", roles=(*QRELS_ROLES, *GROUP_ROLES, SUBTOPIC_ROLE)),
    Option("qrels_format", "qrels", "how the qrels are read (trec_eval -R): 'qrels_jg' takes TREC text's second "
           "field (or the judgment_group column) as the judgment group, and every measure is computed per group and "
           "averaged over the query's groups (map_avgjg, P_avgjg_k, ...); 'prefs' reads preferences (query, group, "
           "subgroup, document, level; or the judgment_group and judgment_subgroup columns) for the prefs_* measures; "
           "'qrels_prefs' reads qrels as preferences, the second field being the group; 'subtopics' reads ndeval's "
           "diversity qrels (query, subtopic, document, grade; or the subtopic column) for the diversity measures "
           "(alpha_nDCG, ERR_IA, ...), the other measures taking each document's highest grade",
           _EVERYWHERE, choices=("qrels", "qrels_jg", "prefs", "qrels_prefs", "subtopics"),
           flags=("-R", "--qrels-format")),
    Option("duplicates", "error", "a document ranked twice for a query: refuse (as trec_eval), keep the best-placed "
           "row ('max'), or the first line ('first')", _LOCAL, choices=("error", "max", "first")),
    Option("empty_run", "error", "a run without a single ranked document: refuse it (almost always a step that "
           "failed before writing it), or score every judged query 0 ('score', as trec_eval -c scores a run file of "
           "blank lines)", _LOCAL, choices=("error", "score")),
    Option("glob", False, "read a file name holding * ? [ ] { }, or a folder, as a pattern of files read as one table "
           "(Parquet, CSV, TSV, JSON Lines, TREC text; hive partition keys such as day=2024-06-01/ become columns); "
           "without it such a name is one file",
           _LOCAL, kind="flag"),
    Option("memory_limit", None, "DuckDB's memory limit, e.g. '2GB'; past it DuckDB spills to disk", _RESOURCES,
           metavar="SIZE", group="resources (DuckDB's)"),
    Option("threads", None, "DuckDB's worker threads (default: all cores)", _RESOURCES, kind="int", metavar="N",
           group="resources (DuckDB's)"),
    Option("temp_directory", None, "where DuckDB spills past the memory limit", _RESOURCES, metavar="DIR",
           group="resources (DuckDB's)"),
    Option("model", "pbm", "the click model fitted to a click log: 'cascade', 'sdbn' (closed forms) or 'pbm', "
           "'ubm', 'dcm', 'dbn' (EM); any case (docs/clicks.md); on the command line several (repeated or "
           "comma-separated) with --held-out", _CLICKS, kind="names", metavar="MODEL", group="click models"),
    Option("iterations", None, "the most EM iterations of a click model fitted by EM (pbm, ubm, dcm, dbn; default "
           "100)", _CLICKS, kind="int", metavar="N", minimum=1, group="click models"),
    Option("tolerance", None, "EM stops when no parameter of the click model changes by this much in an iteration "
           "(pbm, ubm, dcm, dbn; default 1e-06)", _CLICKS, kind="float", metavar="T", group="click models"),
    Option("group_by", None, "segment columns of the run (date, market, arm): one row per segment",
           _LOGS, kind="names", metavar="COLUMN", group="logs"),
    Option("history", None, "the training interactions (user as query_id, item as doc_id, read as qrels are: "
           "a file, table or data frame; a table's name for another engine) that the measures of a run's "
           "recommendations read (CatalogCoverage, Novelty, GiniIndex, ...)",
           frozenset({EVALUATE, EVALUATE_ON, RENDER, COMPARE, EVAL_CMD, COMPARE_CMD, SQL_CMD}), metavar="TABLE",
           group="recommenders"),
    Option("items", None, "the item features that IntraListDiversity and Serendipity compare items by (similarity='features'): "
           "a file, table or data frame (a table's name for another engine) with the item (doc_id's column) and a "
           "list of numbers (`vector`), a `category`, or one row per item and dimension (`dimension`, `value`: the "
           "long form, which rendered SQL reads unless columns= maps vector or category)",
           frozenset({EVALUATE, EVALUATE_ON, RENDER, COMPARE, EVAL_CMD, COMPARE_CMD, SQL_CMD}), metavar="TABLE",
           group="recommenders"),
    Option("verdicts", None, "a RAG pipeline's judged statements that Faithfulness, ContextRecall and "
           "ContextRelevancy read: one row per statement with query_id (as the qrels name it), statement (a claim or "
           "sentence), statement_of ('answer': a claim of the answer, supported by the context or not; 'reference': "
           "a claim of the reference answer, attributable to the context or not; 'context': a sentence of the "
           "retrieved context, relevant to the question or not) and verdict (1 or 0): a file, table or data frame; "
           "a table's name for another engine",
           frozenset({EVALUATE, EVALUATE_ON, RENDER, EVAL_CMD, SQL_CMD}), metavar="TABLE", group="RAG"),
    Option("embeddings", None, "the question embeddings AnswerRelevancy reads: one row per question with query_id (as "
           "the qrels name it), generated (0: the question asked; 1, 2, ...: the questions generated from the answer), "
           "embedding (a list or array of numbers) or, in long form, one row per dimension with dimension and value, "
           "and noncommittal (1 when that generation judged the answer noncommittal, else 0; optional locally): a file, "
           "table or data frame; for another engine a table's name, with an array where it unnests one WITH ORDINALITY "
           "(DuckDB, PostgreSQL, Trino, Presto, Athena) and the long form elsewhere",
           frozenset({EVALUATE, EVALUATE_ON, RENDER, EVAL_CMD, SQL_CMD}), metavar="TABLE",
           group="RAG"),
    Option("nuggets", None, "the topics' nuggets that the nugget measures (NuggetAll, NuggetVitalStrict, NuggetWeighted, "
           "NuggetRecall, ...) read: one row per nugget with query_id (the topic: topic, qid, ...), nugget (nugget_id "
           "or nugget), importance ('vital' or 'okay') and, optionally, weight (a positive number; default vital 1, "
           "okay 0.5): a file, table or data frame; a table's name for another engine",
           _NUGGET_TAKERS, metavar="TABLE", group="RAG"),
    Option("assignments", None, "the runs' support of the nuggets (nuggets=): one row per (topic, run, nugget) "
           "with query_id, run (the run's name, as evaluate names it: a file's stem, a dict's key), nugget and "
           "assignment ('support', 'partial_support' or 'not_support'; a nugget not listed is not_support). With "
           "no qrels and runs, the nuggets' topics are scored for each run the assignments name",
           _NUGGET_TAKERS, metavar="TABLE", group="RAG"),
    Option("judge", None, "a function judging statements: given the verdicts= rows (a list of dicts: query_id, "
           "statement, statement_of and any other columns, such as the answer or the context), it returns a verdict, 1 "
           "or 0, for each; verdicts= then has no verdict column", frozenset({EVALUATE}), kind="object", group="RAG"),
    Option("embed", None, "a function embedding texts: given a list of strings, it returns a vector (a list of numbers) "
           "for each; embeddings= then has a question column (the text) instead of embedding",
           frozenset({EVALUATE}), kind="object", group="RAG"),
    Option("label", None, "the run's column holding each document's grade (with qrels=None)", _LOGS,
           metavar="COLUMN", group="logs"),
    Option("relevance", None, "a grade computed from the run's columns, e.g. '2*purchased + clicked', or "
           "{column: grade} (with qrels=None)", _LOGS, metavar="EXPR", group="logs"),
    Option("test", "student", "the significance test; on unpaired runs student, wilcoxon and bootstrap become "
           "welch, mannwhitney and the unpaired bootstrap", _COMPARING, choices=tuple(TESTS), group="comparison"),
    Option("pairing", "auto", "paired tests over the queries the runs share, or unpaired tests (runs with different "
           "queries, sessions or users); 'auto': paired when, in every segment, at least half of each run's "
           "queries are shared by all runs", _RENDERED_TEST, choices=("auto", "paired", "unpaired"), group="comparison"),
    Option("baseline", None, "test every run against this run only (▲/▼: significantly better/worse than it) "
           "instead of every pair", frozenset({COMPARE, COMPARE_CMD, DECIDE_CMD}), metavar="RUN", group="comparison"),
    Option("max_p", 0.01, "significance threshold", _RENDERED_TEST, kind="float", metavar="P", group="comparison"),
    Option("unit", None, "the unit of randomisation when it is not the list: a column of the log, such as user_id; "
           "each arm's lists are summed per unit and Welch's test takes the delta method's variance of their ratio",
           frozenset({COMPARE, COMPARE_CMD, SQL_CMD, REPORT}), metavar="COLUMN", group="comparison"),
    Option("pre_period", None, "a log from before the experiment, read as the run is (the same columns and options): "
           "each unit's values there are CUPED's covariate, which removes the variance they predict (needs unit=)",
           frozenset({COMPARE, COMPARE_CMD, SQL_CMD, REPORT}), metavar="TABLE", group="comparison"),
    Option("covariate", None, "CUPED's covariate from a column of the log instead of a pre-period log: each unit's "
           "value from before the experiment (the same on all its rows; a unit whose rows disagree or are NULL has "
           "none, as a unit absent from a pre-period), such as the user's click-through last month (needs unit=)",
           frozenset({COMPARE, COMPARE_CMD, SQL_CMD, REPORT}), metavar="COLUMN", group="comparison"),
    Option("sequential", None, "always-valid intervals and p-values for Student's and Welch's tests, which stay valid "
           "however often the results are looked at (asymptotic confidence sequences, as GrowthBook's): the number of "
           "lists (or units) at which the interval is tightest, e.g. 5000",
           frozenset({COMPARE, COMPARE_CMD, DECIDE_CMD, REPORT}),
           kind="int", metavar="N", minimum=1, group="comparison"),
    Option("split", None, "the arms' expected shares of the lists (sessions), e.g. control=1 treatment=1 (default: "
           "equal): an unpaired compare checks the counts against it with a chi-square test and warns of a sample "
           "ratio mismatch when p < 0.001", frozenset({COMPARE, COMPARE_CMD, REPORT, DECIDE_CMD}), kind="shares",
           metavar="ARM=SHARE", group="comparison"),
    Option("max_excluded", 0.01, "with unit=: the units seen in more than one arm and the lists without a unit id "
           "(NULL, empty or spaces) are left out of every arm, with a warning that counts them; above this share of "
           "the units (or of the lists) the comparison is refused (GrowthBook's multiple-exposure threshold, 1%)",
           frozenset({COMPARE, COMPARE_CMD, REPORT, DECIDE_CMD}), kind="float", metavar="SHARE", group="comparison"),
    Option("correction", None, "multiple-comparison correction over every test of the report (pairs x segments x "
           "measures): Bonferroni, Holm or Benjamini-Hochberg (bh)", _COMPARING | {DECIDE_CMD},
           choices=tuple(CORRECTIONS), group="comparison"),
    Option("seed", 42, "seed of the resampling tests", _RENDERED_TEST, kind="int", group="comparison"),
    Option("n_resamples", 10000, "resamples of the fisher and bootstrap tests", _RENDERED_TEST, kind="int",
           metavar="N", group="comparison"),
    Option("engine", None, "a connection or session of another engine (sqlite3, psycopg, chdb, DataFusion, "
           "polars SQLContext, SparkSession, ...): the tables are evaluated where they live",
           frozenset({EVALUATE, COMPARE}), kind="object", group="engines"),
    Option("dialect", None, "the engine's SQL dialect, when it is not recognised from the connection's type",
           frozenset({EVALUATE, EVALUATE_ON}), group="engines"),
    Option("fuse", None, "fused runs evaluated beside the runs, in the same statement: {name: {'method': 'rrf', "
           "'norm': 'min-max', **params}} (the method defaults to the name: {'rrf': {'k': 60}})",
           frozenset({EVALUATE, COMPARE}), group="fusion"),
    Option("output", None, "write the per-query table to this file, typed, in the format its extension names "
           "(.parquet, .csv, .tsv, .json, .jsonl), atomically; or to a table of a DuckDB file, 'results.duckdb:table'",
           frozenset({EVALUATE}), group="output"),
    Option("into", None, "write the results to this table (CREATE TABLE ... AS)", frozenset({RENDER, SQL_CMD}),
           metavar="TABLE", group="logs"),
    Option("into_mode", "create", "how results are written into a table (into=, or -o file.duckdb:table): "
           "'create' it (an existing table is an error), 'replace' it, 'append' the rows, or 'merge' them (rows "
           "with the same run, segments and query_id are replaced); rendered SQL says 'replace' as CREATE OR "
           "REPLACE TABLE and 'merge' as MERGE INTO where the dialect has them",
           frozenset({RENDER, SQL_CMD, EVALUATE, EVAL_CMD, CONVERT_CMD}),
           choices=("create", "replace", "append", "merge"), group="output"),
    Option("row_key", None, "one more column of this name: each row's key (the run, the segments and, per query, "
           "the query) as one text, never NULL, different for any two keys (a NULL and the text 'NULL' too); what a "
           "dbt incremental model's unique_key compares with =, which never matches NULL "
           "(`sqlmetrics sql --dbt --incremental` names it sqlmetrics_key)", frozenset({RENDER}), group="output"),
)
BY_NAME = {o.name: o for o in OPTIONS}


def taken_by(taker: str) -> list[Option]:
    return [o for o in OPTIONS if taker in o.takers]


class UnknownOption(SqlmetricsError, TypeError):
    """A keyword no option has: a TypeError, as Python says of any function, and one of ours."""


class Settings:
    """The resolved options of one call: every option its function takes, validated, defaults filled in."""

    def __init__(self, values: dict):
        object.__setattr__(self, "_values", dict(values))

    def __getattr__(self, name):
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name, value):
        raise AttributeError("Settings are frozen; use replace()")

    def replace(self, **changes) -> Settings:
        return Settings({**self._values, **changes})

    def as_dict(self) -> dict:
        return dict(self._values)


def resolve(taker: str, given: dict) -> Settings:
    """The keyword options of `taker` (evaluate, compare, ...): unknown keywords are an error that
    suggests the closest, each value is checked against its declaration."""
    known = {o.name: o for o in taken_by(taker)}
    for name in given:
        if name not in known:
            close = difflib.get_close_matches(name, list(known), n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            elsewhere = f" ({name}= is not taken by {taker}().)" if name in BY_NAME else ""
            raise UnknownOption(f"{taker}() got an unexpected keyword argument {name!r}.{hint}{elsewhere} "
                                f"Its options: {', '.join(known)}.")
    return Settings({n: o.check(given[n]) if n in given else o.default for n, o in known.items()})


def signature(taker: str, leading: str) -> inspect.Signature:
    """An inspect.Signature for help(): the leading positional parameters, then every option."""
    params = [inspect.Parameter(p.strip(), inspect.Parameter.POSITIONAL_OR_KEYWORD, default=d)
              for p, d in (_split_default(x) for x in leading.split(","))]
    params += [inspect.Parameter(o.name, inspect.Parameter.KEYWORD_ONLY, default=o.default) for o in taken_by(taker)]
    return inspect.Signature(params)


def _split_default(text: str):
    name, eq, default = text.partition("=")
    return name.strip(), (eval(default) if eq else inspect.Parameter.empty)  # noqa: S307 - our own literals


def options_table() -> str:
    """The README's option table."""
    takers = [EVALUATE, COMPARE, RENDER, EVALUATE_ON]
    rows = ["| keyword | command line | default | " + " | ".join(f"{t}()" for t in takers) + " | what it does |",
            "|---|---|---|" + "---|" * len(takers) + "---|"]
    for o in OPTIONS:
        flag = "/".join(f"`{f}`" for f in o.cli_flags) + (f" {o.metavar}" if o.metavar else "")
        commands = {EVAL_CMD, COMPARE_CMD, DEMO_CMD, SQL_CMD, CONVERT_CMD, DECIDE_CMD, COUNTERFACTUAL_CMD, FUSE_CMD,
                    CLICKS_CMD, AGREEMENT_CMD, PPI_CMD}
        if not o.takers & commands or o.kind == "object":
            flag = "–"
        choices = f" ({', '.join(repr(c) for c in o.choices if c is not None)})" if o.choices else ""
        marks = " | ".join("✓" if t in o.takers else "" for t in takers)
        rows.append(f"| `{o.name}` | {flag} | `{o.default!r}` | {marks} | {o.help}{choices} |")
    return "\n".join(rows)


def check_log_options(qrels, group_by, label, relevance) -> tuple:
    """Validate group_by / label / relevance against each other; returns group_by as a tuple of names."""
    if group_by is None:
        segs = ()
    elif isinstance(group_by, str):
        segs = (group_by,)
    elif isinstance(group_by, (list, tuple)) and all(isinstance(g, str) and g for g in group_by):
        segs = tuple(group_by)
    else:
        raise SqlmetricsError(f"group_by= takes column names, e.g. ['date', 'arm']; got {group_by!r}.")
    if len(set(segs)) != len(segs):
        raise SqlmetricsError(f"group_by= names a column twice: {list(segs)!r}.")
    if label is not None and relevance is not None:
        raise SqlmetricsError("label= and relevance= both say where the judgment is: pass one of them.")
    if qrels is None and label is None and relevance is None:
        raise SqlmetricsError("qrels=None needs the judgment in the run: label='<column>' or relevance='<expression>'.")
    if qrels is not None and (label is not None or relevance is not None):
        raise SqlmetricsError("label= and relevance= read the judgment from the run itself: pass qrels=None "
                              "(with qrels, the judgments are the qrels').")
    if label is not None and (not isinstance(label, str) or not label):
        raise SqlmetricsError(f"label= takes the run's column holding the grade; got {label!r}.")
    return segs


def role_columns(columns: dict | None, qrels_columns: dict | None, ties: str, lists: bool = False,
                 qrels_format: str = "qrels"):
    """({role: column} of the run, {role: column} of the qrels): `columns` maps both tables wherever the
    role exists, `qrels_columns` overrides it for the qrels; an unmapped role keeps its own name. A run of
    lists (list_run) has no rank column (the list position is the rank), and a score list only when mapped.
    The qrels have the extra roles their format reads (FORMAT_GROUPS)."""
    columns = dict(columns or {})
    qrels_map = {**columns, **(qrels_columns or {})}
    order = "rank_position" if ties == "rank" else "score"
    if lists:
        order = "score" if "score" in columns else None
    run = {r: columns.get(r, r) for r in ("query_id", "doc_id", order) if r is not None}
    if "run_name" in columns:
        run = {"run_name": columns["run_name"], **run}
    return run, {r: qrels_map.get(r, r) for r in (*QRELS_ROLES, *FORMAT_GROUPS[qrels_format])}
