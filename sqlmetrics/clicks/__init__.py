"""Click models fitted to click logs by maximum likelihood, as SQL run by DuckDB (docs/clicks.md).

fit.py      fit_clicks(), ClickFit: the log read (local.readers, kind 'clicks') and checked, the model fitted, the
            results as Arrow tables
closed.py   the closed forms: Cascade, SDBN
pbm.py      the position-based model's EM over the log's counts per (segment, query, doc, position)
log.py      the log typed and checked: every bad row named (gaps, repeats, clicks other than 0/1, ...)
score.py    a fitted model judged on a held-out log: log-likelihood, perplexity, CTR error, from each model's predict()
ranking.py  click-model-based metrics of runs never shown: per-query expected clicks and satisfaction (expected())
sql.py      what the models' SQL shares (the log-likelihood of a count)
"""
from .fit import MODELS, ClickFit, fit_clicks
from .score import ClickScore

__all__ = ["ClickFit", "ClickScore", "MODELS", "fit_clicks"]
