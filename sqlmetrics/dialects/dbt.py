"""The dbt package in `dbt/sqlmetrics/`, generated from `sql/`: one macro per measure and `evaluate`.

    python -m sqlmetrics.dialects.dbt            # rewrite dbt/sqlmetrics/ (after changing sql/), from the checkout
    python -m sqlmetrics.dialects.dbt --check    # exit 1 when the shipped package is not what sql/ gives

A measure's macro holds render()'s statements for each dbt adapter, as they are: nothing of statement/ is
re-implemented in Jinja. The tables and the numbers a macro takes are rendered as stand-ins (a name, a number
no measure uses) which become Jinja expressions (`{{ qrels }}`, `{{ k }}`); each substitution is checked
against a statement rendered with a real value, and a macro takes only what passed. The statements of the
option values a macro takes (per_query, queries, with and without a cutoff) differ in a few lines: they are
merged line by line into `{% if %}` blocks, so that each choice of options gives back its statement exactly.
`evaluate` joins the measures' statements on the query (or side by side for the means): a choice made in
Jinja among generated statements, never SQL written there.
"""
from __future__ import annotations

import difflib
import re
import sys
from pathlib import Path

from ..catalogue import measures
from ..errors import SqlmetricsError
from ..plan import column_name
from .render import render

# dbt adapter -> the dialect rendered for it. Each can run a statement with WITH as a derived table and FULL JOIN,
# which evaluate's joins need.
ADAPTERS = {"duckdb": "duckdb", "postgres": "postgres", "snowflake": "snowflake", "bigquery": "bigquery",
            "databricks": "databricks"}
PACKAGE = Path("dbt") / "sqlmetrics"  # in the repository, from its top folder

# Stand-ins rendered in place of what a macro takes. The tables: plain names no dialect quotes. The numbers:
# values no template writes, checked against a real value (CHECK) before they are trusted.
TABLES = {"qrels": "sqlmetrics_dbt_qrels", "run": "sqlmetrics_dbt_run"}
CUTOFF, LEVEL = 987654, 876543
CHECK = {"k": (CUTOFF, 7), "relevance_level": (LEVEL, 2)}
QUERIES = ("qrels", "intersection")


def _statement(dialect: str, name: str, k, per_query: bool, queries: str, level) -> str:
    text = name if k is None else f"{name}@{k}"
    return render([text], dialect=dialect, qrels=TABLES["qrels"], run=TABLES["run"], per_query=per_query,
                  header=False, queries=queries, relevance_level=level)


def _template(dialect: str, name: str, k: bool, per_query: bool, queries: str) -> str:
    """One statement with Jinja in place of the stand-ins, checked against the statement of real values."""
    sentinel = _statement(dialect, name, CUTOFF if k else None, per_query, queries, LEVEL)
    real = _statement(dialect, name, CHECK["k"][1] if k else None, per_query, queries, CHECK["relevance_level"][1])
    if "{{" in sentinel or "{%" in sentinel or "{#" in sentinel:
        raise SqlmetricsError(f"{name}'s SQL for {dialect} holds Jinja delimiters; the dbt package cannot carry it.")
    substituted = sentinel
    for arg, (stand_in, value) in CHECK.items():
        substituted = substituted.replace(str(stand_in), str(value))
        sentinel = sentinel.replace(str(stand_in), "{{ %s }}" % arg)
    if _tokens(substituted) != _tokens(real):
        raise SqlmetricsError(f"{name} for {dialect}: the cutoff or relevance level is not a plain number in its SQL, "
                              "so the dbt macro cannot take it as an argument.")
    for role, stand_in in TABLES.items():
        sentinel = sentinel.replace(stand_in, "{{ %s }}" % role)
    return sentinel + "\n"


def _tokens(sql: str) -> str:
    """The statement without layout: the pretty-printer wraps a line that a longer number makes too long."""
    return re.sub(r"\s*([(),])\s*", r"\1", " ".join(sql.split()))


def _merge(a: list, b: list, condition: str) -> list:
    """Lines of `a` and `b` as one template: `b` where `condition` holds, `a` elsewhere. A block already merged
    is one element, so that merging again never splits it."""
    out = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            out.extend(a[i1:i2])
        else:
            other = "{%% else %%}%s" % "".join(a[i1:i2]) if i2 > i1 else ""
            out.append("{%% if %s %%}%s%s{%% endif %%}" % (condition, "".join(b[j1:j2]), other))
    return out


def _lines(text: str) -> list:
    return text.splitlines(keepends=True)


def _body(dialect: str, name: str, cutoffs: tuple) -> str:
    """Every statement a measure's macro can give for `dialect`, merged: per_query, then queries, then k."""
    by_cutoff = []
    for k in cutoffs:
        by_queries = [_merge(_lines(_template(dialect, name, k, False, q)), _lines(_template(dialect, name, k, True, q)),
                             "per_query") for q in QUERIES]
        by_cutoff.append(_merge(*by_queries, f"queries == {QUERIES[1]!r}"))
    return "".join(by_cutoff[0] if len(by_cutoff) == 1 else _merge(*by_cutoff, "k is not none"))


def _cutoffs(name: str, measure) -> tuple:
    """Whether the macro is rendered without a cutoff, with one, or both (False, True)."""
    found = []
    for k in (False, True):
        if k and (measure.at is None or measure.params[measure.at].type != "cutoff"):
            continue
        try:
            _statement("duckdb", name, CUTOFF if k else None, False, QUERIES[0], 1)
        except SqlmetricsError:  # no statement without a cutoff: the measure needs one (P, R, ...)
            continue
        found.append(k)
    return tuple(found)


def packaged() -> dict:
    """The measures of the package, name -> (cutoffs, measure): those that read a ranked run and plain qrels."""
    chosen = {}
    for name, m in measures().items():
        if m.rows in ("ranking", "positions"):  # RAGAS's context precision too: a ranked run of chunks
            cutoffs = _cutoffs(name, m)
            if cutoffs:
                chosen[name] = (cutoffs, m)
    return chosen


def _measure_file(name: str, cutoffs: tuple, m) -> str:
    needs_k = "" if False in cutoffs else (
        "  {%% if k is none %%}{{ exceptions.raise_compiler_error(\"sqlmetrics.%s needs a cutoff: k=10\") }}"
        "{%% endif %%}\n" % name)
    takes_k = "" if True in cutoffs else (
        "  {%% if k is not none %%}{{ exceptions.raise_compiler_error(\"sqlmetrics.%s takes no cutoff\") }}"
        "{%% endif %%}\n" % name)
    head = (f"{{#- {name}: {m.description} Generated by `python -m sqlmetrics.dialects.dbt` from sql/{name}.sql;"
            f" do not edit. -#}}\n"
            f"{{% macro {name}(qrels, run, k=none, per_query=false, queries='qrels', relevance_level=1) %}}\n"
            f"{needs_k}{takes_k}"
            f"  {{{{ return(adapter.dispatch('{name}', 'sqlmetrics')("
            f"qrels, run, sqlmetrics.checked_options(k, per_query, queries, relevance_level))) }}}}\n"
            f"{{% endmacro %}}\n")
    parts = [head]
    for adapter, dialect in ADAPTERS.items():
        body = _body(dialect, name, cutoffs)
        parts.append(f"\n{{% macro {adapter}__{name}(qrels, run, options) %}}"
                     "{%- set k, per_query, queries, relevance_level = options -%}\n"
                     f"{body}{{% endmacro %}}\n")
    parts.append(f"\n{{% macro default__{name}(qrels, run, options) %}}"
                 "{{ sqlmetrics.unsupported_adapter() }}{% endmacro %}\n")
    return "".join(parts)


def _columns(chosen: dict) -> str:
    """Each measure's output column, without and with a cutoff ({k}), as render() names it."""
    rows = []
    for name, (cutoffs, _) in chosen.items():
        plain = column_name(name) if False in cutoffs else ""
        cut = column_name(f"{name}@{CUTOFF}").replace(str(CUTOFF), "{k}") if True in cutoffs else ""
        rows.append(f"    '{name.lower()}': ['{name}', '{plain}', '{cut}'],\n")
    return "{\n" + "".join(rows) + "  }"


def package_files() -> dict:
    """Path relative to the package -> text, for every file of the package."""
    chosen = packaged()
    files = {"dbt_project.yml": PROJECT,
             "macros/evaluate.sql": EVALUATE.replace("@MEASURES@", _columns(chosen))
                                            .replace("@ADAPTERS@", ", ".join(ADAPTERS))}
    for name, (cutoffs, m) in chosen.items():
        files[f"macros/measures/{name}.sql"] = _measure_file(name, cutoffs, m)
    return files


PROJECT = """\
# Generated by `python -m sqlmetrics.dialects.dbt`; do not edit.
name: sqlmetrics
version: "1.0.0"
config-version: 2
require-dbt-version: [">=1.5.0", "<2.0.0"]
macro-paths: ["macros"]
"""

EVALUATE = """\
{#- Generated by `python -m sqlmetrics.dialects.dbt`; do not edit. -#}

{#- evaluate(ref('qrels'), ref('run'), ['nDCG@10', 'AP'], {'per_query': true}): the measures' values, one column
    each as sqlmetrics names them (ndcg_at_10, ap); the means in one row, or with per_query one row per query_id.
    Options: per_query (false), queries ('qrels' or 'intersection'), relevance_level (1). -#}
{% macro evaluate(qrels, run, measures, options={}) %}
  {%- set known = @MEASURES@ -%}
  {%- for key in options if key not in ('per_query', 'queries', 'relevance_level') -%}
    {{ exceptions.raise_compiler_error("sqlmetrics.evaluate: unknown option '" ~ key ~ "': use per_query, queries or relevance_level") }}
  {%- endfor -%}
  {%- if measures is string or measures | length == 0 -%}
    {{ exceptions.raise_compiler_error("sqlmetrics.evaluate: give the measures as a list, e.g. ['nDCG@10', 'AP']") }}
  {%- endif -%}
  {%- set per_query = options.get('per_query', false) -%}
  {%- set parts = [] -%}
  {%- for text in measures -%}
    {%- set name, at, k = text.partition('@') -%}
    {%- if name.lower() not in known -%}
      {{ exceptions.raise_compiler_error("sqlmetrics.evaluate: unknown measure '" ~ text ~ "': the package has " ~ known.values() | map('first') | join(', ')) }}
    {%- endif -%}
    {%- set macro, plain, cut = known[name.lower()] -%}
    {%- if at and not (k.isdigit() and k | int > 0) -%}
      {{ exceptions.raise_compiler_error("sqlmetrics.evaluate: '" ~ text ~ "': the cutoff after @ is a positive whole number") }}
    {%- endif -%}
    {%- set sql = context['sqlmetrics'][macro](qrels, run, k | int if at else none, per_query,
                                               options.get('queries', 'qrels'), options.get('relevance_level', 1)) -%}
    {%- set column = cut.replace('{k}', k | int | string) if at else plain -%}
    {%- if column in parts | map(attribute='column') -%}
      {{ exceptions.raise_compiler_error("sqlmetrics.evaluate: '" ~ text ~ "' is listed twice") }}
    {%- endif -%}
    {%- do parts.append({'column': column, 'sql': sql}) -%}
  {%- endfor -%}
  {%- if parts | length == 1 -%}
    {{ parts[0].sql }}
  {%- else -%}
select
  {% if per_query -%}
  coalesce({% for p in parts %}m{{ loop.index }}.query_id{{ ', ' if not loop.last }}{% endfor %}) as query_id,
  {% endif -%}
  {% for p in parts %}m{{ loop.index }}.{{ p.column }}{{ ',' if not loop.last }}
  {% endfor -%}
from
  {% for p in parts -%}
  {% if not loop.first %}{{ 'full join' if per_query else 'cross join' }} {% endif %}(
{{ p.sql }}
) as m{{ loop.index }}
  {%- if per_query and not loop.first %} on m{{ loop.index }}.query_id = coalesce({% for i in range(1, loop.index) %}m{{ i }}.query_id{{ ', ' if not loop.last }}{% endfor %}){% endif %}
  {% endfor -%}
  {%- endif -%}
{% endmacro %}

{#- The options every measure's macro takes, checked once: they become SQL, so only their declared values pass. -#}
{% macro checked_options(k, per_query, queries, relevance_level) %}
  {%- if k is not none and not (k is number and k == k | int and k > 0) -%}
    {{ exceptions.raise_compiler_error("sqlmetrics: k=" ~ k ~ " is not a cutoff: give a positive whole number") }}
  {%- endif -%}
  {%- if per_query not in (true, false) -%}
    {{ exceptions.raise_compiler_error("sqlmetrics: per_query=" ~ per_query ~ ": give true or false") }}
  {%- endif -%}
  {%- if queries not in ('qrels', 'intersection') -%}
    {{ exceptions.raise_compiler_error("sqlmetrics: queries='" ~ queries ~ "': give 'qrels' or 'intersection'") }}
  {%- endif -%}
  {%- if not (relevance_level is number and relevance_level == relevance_level | int) -%}
    {{ exceptions.raise_compiler_error("sqlmetrics: relevance_level=" ~ relevance_level ~ " is not a whole number") }}
  {%- endif -%}
  {{ return([k, per_query, queries, relevance_level]) }}
{% endmacro %}

{% macro unsupported_adapter() %}
  {{ exceptions.raise_compiler_error("sqlmetrics' dbt package has SQL for the adapters @ADAPTERS@, not " ~ adapter.type() ~ ": print a model's SQL with `sqlmetrics sql --dbt --dialect ...`") }}
{% endmacro %}
"""


def write(root: Path) -> None:
    files = package_files()
    for old in root.glob("macros/measures/*.sql"):
        if old.relative_to(root).as_posix() not in files:
            old.unlink()
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def stale(root: Path) -> list:
    """The package's files that differ from what sql/ gives now (missing, changed or left over)."""
    files = package_files()
    shipped = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()} if root.is_dir() else set()
    return sorted(rel for rel in shipped | set(files)
                  if rel not in files or rel not in shipped or (root / rel).read_text() != files[rel])


def main(argv=None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    check = "--check" in args
    roots = [a for a in args if a != "--check"]
    root = (Path(roots[0]) if roots else Path(".")) / PACKAGE
    if len(roots) > 1 or not root.parent.parent.joinpath("sql").is_dir():
        print("usage: python -m sqlmetrics.dialects.dbt [--check] [CHECKOUT], in a checkout of sqlmetrics (it has "
              "sql/ and writes dbt/sqlmetrics/)", file=sys.stderr)
        return 2
    if check:
        differ = stale(root)
        if differ:
            print(f"{root} is stale ({', '.join(differ)}): run `python -m sqlmetrics.dialects.dbt`.", file=sys.stderr)
        return 1 if differ else 0
    write(root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
