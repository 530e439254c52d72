"""Every fenced code block of README.md and docs/*.md runs as written, from a fresh temporary folder (but those of
docs/measures.md, generated from the sql/ headers: its blocks are the measures' SQL, and tests/test_catalogue.py
checks its worked examples).

- ```sh blocks run with bash (`set -euo pipefail`), this interpreter's bin folder first on PATH; lines starting
  with `pip ` are not run (installing is the reader's step).
- ```python blocks run with this interpreter (sys.executable).
- A ```text block directly after one of them (blank lines between, at most) is its expected standard output,
  compared exactly once the installed package's folder is written as `.../sqlmetrics`.
- A block preceded by `<!-- not run: REASON -->` is not run; every other block must be sh or python.
- A block preceded by `<!-- fast -->` runs in the fast tier; the others are marked slow (each starts an
  interpreter: 0.5 s or more). A block that starts a Spark session needs pyspark and Java, and skips without
  them (a failure under SQLMETRICS_REQUIRE_ENGINES=1, as the engine tests).
- The generated tables the pages quote (docs/options.md's options, docs/performance.md's benchmark) are their
  generators' output, and every relative link points at a file (and heading) that exists.

Blocks not run (test_the_unrun_blocks_are_the_ones_listed_here checks this list):
- README.md: installs the test dependencies and runs the whole test suite, this test included
- docs/compare.md: needs the log in BigQuery, and the statement's rows exported from there
- docs/how-it-works.md: a diagram
- docs/performance.md: a bench of minutes over a 100M-row log it writes first
- docs/performance.md: needs a Spark cluster and tables in its object store
- docs/warehouses.md: a dbt model, compiled by dbt inside a dbt project (tests/test_dbt.py builds one)
- docs/warehouses.md: a dbt model, compiled by dbt inside a dbt project (tests/test_dbt.py builds one twice)
- docs/warehouses.md: needs a PostgreSQL server

docs/development.md ("The examples are tests") says the same for the pages' authors.
"""
from __future__ import annotations

import difflib
import functools
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

import sqlmetrics
from conftest import unavailable
from sqlmetrics.options import options_table

REPO = Path(__file__).resolve().parent.parent
# docs/measures.md is generated from the sql/ headers (sqlmetrics.catalogue.reference): its ```sql blocks are the
# measures' templates, and tests/test_catalogue.py runs its worked examples.
GENERATED = {"measures.md"}
PAGES = [REPO / "README.md", *sorted(p for p in (REPO / "docs").glob("*.md") if p.name not in GENERATED)]
RUN = ("sh", "python")
FENCE = re.compile(r"^(\s*)```\s*([\w+-]*)\s*$")
NOT_RUN = re.compile(r"^<!--\s*not run:\s*(.+?)\s*-->$")
FAST = re.compile(r"^<!--\s*fast\s*-->$")

@functools.cache
def installed() -> str:
    """Where the package is installed, as the examples print it (the demo's folder differs per machine): the
    folder a fresh interpreter outside the checkout imports it from (in CI the installed copy, not the checkout
    this process may import)."""
    done = subprocess.run([sys.executable, "-c", "import pathlib, sqlmetrics; "
                           "print(pathlib.Path(sqlmetrics.__file__).resolve().parent.parent)"],
                          capture_output=True, text=True, cwd=tempfile.gettempdir(), check=True)
    return done.stdout.strip()

TIMEOUT = 900


@dataclass
class Block:
    page: str                # relative to the repository: README.md, docs/inputs.md
    line: int                # the opening fence's line, from 1
    lang: str
    code: str
    not_run: str | None = None
    fast: bool = False
    expected: str | None = None  # the ```text block right after it

    @property
    def name(self) -> str:
        return f"{self.page}:{self.line}"


def blocks_of(path: Path) -> list:
    """The fenced blocks of one Markdown page, each with the HTML comments just above it and the output block
    just after it."""
    lines = path.read_text(encoding="utf-8").splitlines()
    page = path.relative_to(REPO).as_posix()
    found, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, lang = i, m.group(2).lower()
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == "```"), None)
        assert end is not None, f"{page}:{start + 1}: the block is not closed"
        block = Block(page, start + 1, lang, "".join(line + "\n" for line in lines[start + 1:end]))
        k = start - 1
        while k >= 0 and (not lines[k].strip() or lines[k].strip().startswith("<!--")):
            comment = lines[k].strip()
            if (nr := NOT_RUN.match(comment)):
                block.not_run = nr.group(1)
            elif FAST.match(comment):
                block.fast = True
            k -= 1
        i = end + 1
        # the expected output: a text block after blank lines only
        j = i
        while j < len(lines) and not lines[j].strip():
            j += 1
        if j < len(lines) and FENCE.match(lines[j]) and FENCE.match(lines[j]).group(2).lower() == "text" \
                and (lang in RUN or block.not_run):
            out_end = next(e for e in range(j + 1, len(lines)) if lines[e].strip() == "```")
            block.expected = "".join(line + "\n" for line in lines[j + 1:out_end])
            i = out_end + 1
        found.append(block)
    return found


BLOCKS = [b for page in PAGES for b in blocks_of(page)]
RUNNABLE = [b for b in BLOCKS if b.lang in RUN and not b.not_run]


def _run(block: Block, folder: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env["PYTHONIOENCODING"] = "utf-8"  # the tables' superscripts and ▲/▼, whatever the locale
    if block.lang == "sh":  # a `pip ...` line becomes `:`, so that line numbers in bash's messages stay right
        code = "".join(":\n" if line.lstrip().startswith("pip ") else line + "\n" for line in block.code.splitlines())
        argv, stdin = ["bash", "-c", "set -euo pipefail; " + code], ""
    else:
        argv, stdin = [sys.executable, "-"], block.code
    return subprocess.run(argv, cwd=folder, env=env, input=stdin, capture_output=True, encoding="utf-8",
                          timeout=TIMEOUT)


def _report(block: Block, done: subprocess.CompletedProcess, what: str) -> str:
    return (f"{block.name} ({block.lang}): {what}\n--- the block ---\n{block.code}"
            f"--- its stdout ---\n{done.stdout}--- its stderr ---\n{done.stderr}")


@pytest.mark.parametrize("block", [pytest.param(b, id=b.name, marks=[] if b.fast else [pytest.mark.slow])
                                   for b in RUNNABLE])
def test_block_runs_as_written(block, tmp_path):
    if "pyspark" in block.code:
        if importlib.util.find_spec("pyspark") is None:
            unavailable("pyspark is not installed (pip install '.[engines]')")
        if not shutil.which("java") and not os.environ.get("JAVA_HOME"):
            unavailable("no Java runtime for pyspark (run .ci/engines.sh)")
    done = _run(block, tmp_path)
    if done.returncode != 0:
        pytest.fail(_report(block, done, f"exited with status {done.returncode}"), pytrace=False)
    if block.expected is not None:
        got = done.stdout.replace(installed(), "...")
        if got != block.expected:
            diff = "".join(difflib.unified_diff(block.expected.splitlines(keepends=True), got.splitlines(keepends=True),
                                                "the page's output", "printed now"))
            pytest.fail(_report(block, done, f"its output is not the page's:\n{diff}"), pytrace=False)


def test_every_block_runs_or_says_why():
    unmarked = [f"{b.name} (```{b.lang or 'no language'})" for b in BLOCKS if b.lang not in RUN and not b.not_run]
    assert not unmarked, ("blocks that are neither sh nor python and carry no `<!-- not run: REASON -->` line: "
                          + ", ".join(unmarked))
    assert RUNNABLE and any(b.fast for b in RUNNABLE)


def test_the_unrun_blocks_are_the_ones_listed_here():
    listed = sorted(re.findall(r"^- (\S+\.md): (.+)$", __doc__.split("Blocks not run", 1)[1].split("\n\n")[0], re.M))
    actual = sorted((b.page, b.not_run) for b in BLOCKS if b.not_run)
    assert listed == actual, "update the list in tests/test_readme.py's docstring: " + json.dumps(actual, indent=1)


def _between(text: str, start: str, end: str) -> str:
    assert start in text and end in text, f"no {start} ... {end} block"
    return text.split(start, 1)[1].split(end, 1)[0]


def test_the_generated_tables_are_their_generators_output():
    options = (REPO / "docs" / "options.md").read_text(encoding="utf-8")
    assert _between(options, "<!-- options:start -->", "<!-- options:end -->").strip() == options_table().strip(), \
        "docs/options.md's table is not sqlmetrics.options' declaration: regenerate it"
    spec = importlib.util.spec_from_file_location("bench_table", REPO / "bench" / "table.py")
    table = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(table)
    performance = (REPO / "docs" / "performance.md").read_text(encoding="utf-8")
    for preset in table.PRESETS:
        _between(performance, *table.markers(preset))  # every preset's section is on the page
    assert table.regenerated(performance)[1] == [], \
        "docs/performance.md's bench tables are not bench/<preset>.json's: run python bench/table.py"


def _slugs(path: Path) -> set:
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces as hyphens, repeats numbered."""
    seen, slugs, fenced = {}, set(), False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
        m = None if fenced else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            slug = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            slugs.add(slug if n == 0 else f"{slug}-{n}")
    return slugs


def test_relative_links_point_at_what_exists():
    broken = []
    for page in PAGES:
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
        text = re.sub(r"`[^`\n]*`", "", text)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"^[a-z]+:", target):
                continue
            file, _, anchor = target.partition("#")
            path = (page.parent / file).resolve() if file else page
            if not path.exists():
                broken.append(f"{page.relative_to(REPO)}: {target} (no such file)")
            elif anchor and path.suffix == ".md" and anchor not in _slugs(path):
                broken.append(f"{page.relative_to(REPO)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


def test_the_demo_files_are_as_the_pages_describe():
    """The figures the pages quote about the shipped demo files besides the examples' outputs: 60 users, two
    recommenders with 10 items each (README, docs/recommender.md), 20 questions with 5 chunks each (README,
    docs/rag.md), the search log's columns (docs/logs.md)."""
    import duckdb

    d = sqlmetrics.demo.folder()
    con = duckdb.connect()
    one = lambda sql: con.execute(sql).fetchone()  # noqa: E731

    def lists(table, *key):  # how many lists, and the fewest and most rows of one
        return one(f"SELECT count(*), min(n), max(n) FROM (SELECT count(*) AS n FROM '{d / table}' "
                   f"GROUP BY {', '.join(key)})")

    assert one(f"SELECT count(DISTINCT user_id), list(DISTINCT model ORDER BY model) FROM '{d / 'recsys_reco.csv'}'") \
        == (60, ["personal", "popular"])
    assert lists("recsys_reco.csv", "user_id", "model") == (120, 10, 10)
    assert lists("rag_retrieved.csv", "query_id") == (20, 5, 5)
    assert [c[0] for c in con.execute(f"SELECT * FROM '{d / 'search_log.parquet'}' LIMIT 0").description] == [
        "date", "market", "arm", "session", "query", "doc", "position", "clicked", "purchased", "rating"]


def test_the_test_command_is_one_line_of_the_test_extra_alone():
    """A newcomer installed `.[test,engines]` (2.9 GB) and then Recommenders on a second line before the fast suite
    could run. The fast suite needs the `test` extra alone (engines, servers, Recommenders and dbt are the full
    suite's, whose tests skip with their reason without them): the README's command is that one line, and the
    extra holds none of the engines' drivers nor dbt."""
    import tomllib

    readme = (REPO / "README.md").read_text()
    tests = readme.split("## Tests\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", tests, re.S)
    assert len(blocks) == 1 and len(blocks[0].strip().splitlines()) == 1, blocks
    command = blocks[0].split("#")[0].split()
    assert command == ["pip", "install", '".[test]"', "&&", "python", "-m", "pytest", "-m", '"not', 'slow"'], command
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]

    def names(extra: str) -> set:
        return {re.split(r"[\[<>=!~; ]", r, maxsplit=1)[0].lower() for r in extras[extra]}
    engines = names("engines") - names("frames")  # polars is an input's frame library too
    assert not names("test") & (engines | names("dbt") | {"recommenders"}), names("test") & engines
