"""Judgments judged: how far two sets of labels agree (a human's and an LLM's), what a mean over LLM labels says
about the human one (prediction-powered inference), and where a pool of judgments has holes."""
