"""The package's shape: layers that only point down (import-linter's contracts in pyproject.toml), and no
import of the package's own modules hidden inside a function to dodge a cycle."""
import ast
import shutil
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "sqlmetrics"


def test_import_contracts_are_kept():
    lint = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    proc = subprocess.run([lint], cwd=PACKAGE.parent, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout


# The package's own modules imported inside a function, each to keep a small call from loading what it does
# not use (import-linter sees these imports as it sees the others): file -> the modules it imports so.
LAZY = {"sqlmetrics/evaluation.py": {"engines"},  # evaluate() on DuckDB loads no other engine's dialect (sqlglot's)
        "sqlmetrics/stats/html.py": {"dialects.render"}}  # a report whose SQL is kept on disk renders none


def test_no_package_import_inside_a_function():
    """Lazy imports are for third-party modules (optional drivers, and pyarrow, which the command line never
    needs) and the few of the package's own listed in LAZY: the rest are imported at the top, in plain sight."""
    hidden = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for func in ast.walk(tree):
            if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(func):
                own = (isinstance(node, ast.ImportFrom) and (node.level > 0 or (node.module or "").startswith("sqlmetrics"))) \
                    or (isinstance(node, ast.Import) and any(a.name.startswith("sqlmetrics") for a in node.names))
                if own and getattr(node, "module", None) not in LAZY.get(str(path.relative_to(PACKAGE.parent)), ()):
                    hidden.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert not hidden, hidden


def test_every_duckdb_connection_is_opened_by_embedded():
    """DuckDB downloads and loads an extension when a query seems to need one unless told not to: the package
    opens DuckDB only through embedded.connect(), which tells it."""
    calls = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "connect" \
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "duckdb":
                calls.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert calls and all(c.startswith("embedded.py:") for c in calls), calls


def test_every_subcommand_module_is_in_the_command_table():
    """cli/main.py imports a command's module by name, when that command is called: a module missing from
    COMMANDS would be a command nobody can call."""
    from sqlmetrics.cli.main import COMMANDS

    modules = {p.stem for p in (PACKAGE / "cli").glob("*.py")} - {"__init__", "main", "common"}
    assert set(COMMANDS.values()) == modules
