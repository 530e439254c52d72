"""sqlmetrics: ranked-retrieval evaluation as SQL, trec_eval-exact, on DuckDB or any warehouse."""
from .errors import SqlmetricsError, SqlmetricsWarning
from .evaluate import Results, evaluate

__all__ = ["evaluate", "Results", "SqlmetricsError", "SqlmetricsWarning"]
__version__ = "0.1.0"
