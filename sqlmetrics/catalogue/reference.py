"""The documents generated from declarations: docs/measures.md from the sql/ headers, and docs/options.md's
option table from sqlmetrics.options.

    python -m sqlmetrics.catalogue.reference           # rewrite both (in the current folder's checkout)
    python -m sqlmetrics.catalogue.reference --check   # exit 1 when either is stale (CI)
"""
from __future__ import annotations

import sys
from pathlib import Path

from ..options import options_table
from .fusion import fusion_methods, normalisations
from .templates import Measure, measures

MEASURES_DOC = Path("docs") / "measures.md"
OPTIONS_DOC = Path("docs") / "options.md"
OPTIONS_START, OPTIONS_END = "<!-- options:start -->", "<!-- options:end -->"


def _params(m: Measure) -> str:
    return ", ".join(
        f"`{'@' if p.name == m.at else ''}{p.name}`"
        + (f" {'/'.join(p.options)}" if p.type == "choice" else f" {p.type}")
        + f" ({p.describe_default()})"
        for p in m.params.values()) or "–"


def _body_of(m: Measure) -> list:
    """A `body:` measure's line: whose SQL it takes (shown below), and each of its parameters left out here."""
    if not m.body_of:
        return []
    absent = "".join(f"; `{n}`: {p.describe_default()}" for n, p in m.absent_params.items())
    return [f"- per-list value: [`{m.body_of}`](#{m.body_of.lower()})'s SQL (below){absent}"]


def _aliases(m: Measure, tool) -> str:
    return ", ".join(f"`{a.pattern}`" for a in m.aliases if a.tool == tool)


def _range(m: Measure) -> str:
    low, high = m.range
    show = lambda v: "" if v is None else (str(int(v)) if float(v).is_integer() else str(v))  # noqa: E731
    return f"{show(low)}..{show(high)}" if m.range != (None, None) else "–"


def table() -> str:
    """One row per measure: what `sqlmetrics list -f markdown` prints."""
    rows = ["| measure | parameters (default) | aggregate | trec_eval | ranx | what it is |",
            "|---|---|---|---|---|---|"]
    for m in measures().values():
        rows.append(f"| [`{m.name}`](#{m.name.lower()}) | {_params(m)} | {m.aggregate} | "
                    f"{_aliases(m, 'trec_eval') or '–'} | {_aliases(m, 'ranx') or '–'} | {m.description} |")
    return "\n".join(rows)


def fusion_table() -> str:
    """One row per fusion method (sql/fusion/)."""
    rows = ["| fusion method | parameters (default) | ranx | what it is |", "|---|---|---|---|"]
    for m in fusion_methods().values():
        params = ", ".join(f"`{p.name}` {p.type} ({p.describe_default()})" for p in m.params.values()) or "–"
        ranx = ", ".join(f"`{a.text}`" for a in m.aliases if a.tool == "ranx") or "–"
        rows.append(f"| `{m.name}` | {params} | {ranx} | {m.description} |")
    return "\n".join(rows)


def document() -> str:
    parts = [
        "# Measure reference",
        "",
        "Generated from the headers of `sql/*.sql` by `python -m sqlmetrics.catalogue.reference`; do not edit "
        "by hand (CI fails when this file is stale). Names follow ir_measures (`nDCG@10`, `P(rel=2)@5`, "
        "`RBP(p=0.9)`); the aliases are trec_eval's and ranx's spellings. `sqlmetrics list NAME` shows what "
        "any spelling resolves to.",
        "",
        table(),
        "",
        "## Fusion methods",
        "",
        "Generated from the headers of `sql/fusion/*.sql` (`sqlmetrics list` shows them with kind `fusion`): "
        "each method is one aggregate over a (query, document)'s normalised scores, one row per run that ranks "
        f"it. Normalisations: {', '.join(f'`{n}`' for n in normalisations())} (`sql/fusion/_shared.sql`).",
        "",
        fusion_table(),
    ]
    for m in measures().values():
        other = ", ".join(filter(None, (_aliases(m, tool) for tool in (None, "ir_measures", "ndeval"))))
        parts += [
            "", f"## {m.name}", "", m.description, "",
            f"- parameters: {_params(m)}",
            *_body_of(m),
            f"- aggregate over lists: {m.aggregate}; {m.better} is better; range {_range(m)}; "
            f"a list with nothing ranked scores {'null' if m.empty is None else f'{m.empty:g}'}",
            f"- trec_eval: {_aliases(m, 'trec_eval') or '–'}",
            f"- ranx: {_aliases(m, 'ranx') or '–'}",
            *([f"- also accepted: {other}"] if other else []),
            f"- reference: {m.reference}",
            "- worked examples (checked by the test suite on DuckDB and SQLite):",
            *(f"  - `{e.call}` on qrels `{', '.join(' '.join(map(_cell, r)) for r in e.qrels)}` and run "
              f"`{', '.join(' '.join(map(_cell, r)) for r in e.run)}` = **{e.value}**" for e in m.examples),
            "",
            f"```sql\n{m.body}\n```",
        ]
    return "\n".join(parts) + "\n"


def _cell(v) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def readme_with_options(readme: str) -> str:
    head, start, rest = readme.partition(OPTIONS_START)
    _, end, tail = rest.partition(OPTIONS_END)
    if not (start and end):
        raise SystemExit(f"{OPTIONS_DOC} has no {OPTIONS_START} ... {OPTIONS_END} block for the option table")
    return f"{head}{OPTIONS_START}\n{options_table()}\n{OPTIONS_END}{tail}"


def main(argv=None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    check = "--check" in args
    roots = [a for a in args if a != "--check"]
    root = Path(roots[0]) if roots else Path(".")
    options_doc = (root / OPTIONS_DOC).read_text(encoding="utf-8")
    wanted = {root / MEASURES_DOC: document(), root / OPTIONS_DOC: readme_with_options(options_doc)}
    stale = [path for path, text in wanted.items()
             if not path.is_file() or path.read_text(encoding="utf-8") != text]
    if check:
        for path in stale:
            print(f"{path} is stale: run `python -m sqlmetrics.catalogue.reference`", file=sys.stderr)
        return 1 if stale else 0
    for path in stale:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(wanted[path], encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
