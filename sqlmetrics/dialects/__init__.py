"""The evaluation rendered for other engines: which engines (info.py), how (render.py), and what sqlglot
cannot know about them (portable.py)."""
from .info import DIALECTS, DialectInfo, dialect_info
from .render import render, render_fusion

__all__ = ["DIALECTS", "DialectInfo", "dialect_info", "render", "render_fusion"]
