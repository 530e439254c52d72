"""sqlmetrics: ranked-retrieval evaluation as SQL, trec_eval-exact, on DuckDB or any warehouse.

The names below are imported on first use (PEP 562), not with the package: `sqlmetrics trec_eval` in a
script's loop should not pay for sqlglot, the statistics or the other engines when it needs none of them."""
from __future__ import annotations

import importlib

# name -> the module it comes from; "" for a subpackage of that name.
_LAZY = {
    "demo": "", "render": ".dialects", "evaluate_on": ".engines", "SqlmetricsError": ".errors",
    "SqlmetricsWarning": ".errors", "evaluate": ".evaluation", "fuse": ".local.fuse",
    "optimize_fusion": ".local.fuse", "Results": ".results", "Report": ".stats", "compare": ".stats",
    "decide": ".stats", "fit_clicks": ".clicks", "interleaving": ".stats", "ips": ".stats", "pbm_ips": ".stats",
    "render_compare": ".stats", "propensities": ".clicks", "render_clicks": ".clicks",
    "agreement": ".judgments", "ranking_agreement": ".judgments",
    "pool": ".judgments.pools", "holes": ".judgments.pools", "render_pool": ".judgments.pools",
    "render_compare": ".stats", "propensities": ".clicks", "render_clicks": ".clicks", "ppi": ".judgments.ppi",
}

__all__ = ["evaluate", "evaluate_on", "fuse", "optimize_fusion", "render", "Results", "compare", "Report", "ips",
           "pbm_ips", "render_compare", "decide", "fit_clicks", "propensities", "render_clicks",
           "interleaving", "agreement", "ranking_agreement", "pool", "holes", "render_pool", "ppi",
           "SqlmetricsError", "SqlmetricsWarning"]
__version__ = "0.1.0"


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'sqlmetrics' has no attribute {name!r}")
    module = importlib.import_module(_LAZY[name] or f".{name}", __name__)
    value = module if not _LAZY[name] else getattr(module, name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list:
    return sorted({*globals(), *_LAZY})
