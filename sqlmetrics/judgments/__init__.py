"""Judgments judged: how far two sets of labels agree (a human's and an LLM's), what a mean over LLM labels says
about the human one (prediction-powered inference), and where a pool of judgments has holes.

agreement.py  agreement(), Agreement: Cohen's κ and Krippendorff's α between two judgment sets, overall and per query
systems.py    ranking_agreement(), RankingAgreement: Kendall's τ, τ_AP and Spearman's ρ between the orders of systems
              under each set
"""
from .agreement import Agreement, agreement
from .systems import RankingAgreement, ranking_agreement
