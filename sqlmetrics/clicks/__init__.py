"""Click models fitted to click logs by maximum likelihood, as SQL run by DuckDB (docs/clicks.md).

fit.py      fit_clicks(), ClickFit: the log read (local.readers, kind 'clicks') and checked, the model fitted, the
            results as Arrow tables
closed.py   the closed forms: Cascade, SDBN
pbm.py      the position-based model's EM over the log's counts per (segment, query, doc, position)
ubm.py      the user browsing model: PBM's EM with examination per (position, previous click)
dcm.py      the dependent click model's EM on its exact likelihood (going on after the last click latent)
dbn.py      the dynamic Bayesian network's EM over the sessions' distinct suffixes below their last click
log.py      the log typed and checked: every bad row named (gaps, repeats, clicks other than 0/1, ...)
propensity.py  propensities(): position bias by intervention harvesting (pivot, adjacent chain) or from a PBM
score.py    a fitted model judged on a held-out log: log-likelihood, perplexity, CTR error, from each model's predict()
ranking.py  click-model-based metrics of runs never shown: per-query expected clicks and satisfaction (expected())
render.py   render_clicks(): a fit as a SQL script for another engine (cascade, sdbn, pbm, ubm)
sql.py      what the models share: the log-likelihood of a count, EM's loop
"""
from .fit import MODELS, ClickFit, fit_clicks
from .propensity import propensities
from .render import render_clicks
from .score import ClickScore

__all__ = ["ClickFit", "ClickScore", "MODELS", "fit_clicks", "propensities", "render_clicks"]
