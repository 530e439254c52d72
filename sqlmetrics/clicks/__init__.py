"""Click models fitted to click logs by maximum likelihood, as SQL run by DuckDB (docs/clicks.md).

fit.py      fit_clicks(), ClickFit: the log read (local.readers, kind 'clicks') and checked, the model fitted, the
            results as Arrow tables
closed.py   the closed forms: Cascade, SDBN
pbm.py      the position-based model's EM over the log's counts per (segment, query, doc, position)
dbn.py      the dynamic Bayesian network's EM over the sessions' distinct suffixes below their last click
log.py      the log typed and checked: every bad row named (gaps, repeats, clicks other than 0/1, ...)
sql.py      what the models' SQL shares (the log-likelihood of a count)
"""
from .fit import MODELS, ClickFit, fit_clicks

__all__ = ["ClickFit", "MODELS", "fit_clicks"]
