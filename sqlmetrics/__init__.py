"""sqlmetrics: ranked-retrieval evaluation as SQL, trec_eval-exact, on DuckDB or any warehouse."""
from .compare import compare
from .dialects import render
from .engines import evaluate_on
from .errors import SqlmetricsError, SqlmetricsWarning
from .evaluate import Results, evaluate
from .report import Report

__all__ = ["evaluate", "evaluate_on", "render", "Results", "compare", "Report", "SqlmetricsError", "SqlmetricsWarning"]
__version__ = "0.1.0"
