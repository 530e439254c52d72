"""sqlmetrics: ranked-retrieval evaluation as SQL, trec_eval-exact, on DuckDB or any warehouse."""
from . import demo  # noqa: F401  (sqlmetrics.demo.folder(): the demo runs and log shipped with the package)
from .dialects import render
from .engines import evaluate_on
from .errors import SqlmetricsError, SqlmetricsWarning
from .evaluation import evaluate
from .local.fuse import fuse, optimize_fusion
from .results import Results
from .stats import Report, compare, decide, interleaving, ips, pbm_ips, render_compare

__all__ = ["evaluate", "evaluate_on", "fuse", "optimize_fusion", "render", "Results", "compare", "Report", "ips",
           "pbm_ips", "render_compare", "decide",
           "interleaving", "SqlmetricsError", "SqlmetricsWarning"]
__version__ = "0.1.0"
