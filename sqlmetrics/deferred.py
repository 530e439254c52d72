"""sqlglot, imported where it is first used rather than where it is named. `from ..deferred import exp, sqlglot`
reads as `import sqlglot; from sqlglot import exp`, but the module is imported by the first attribute taken from
it: a call whose statements come from the disk cache (caches.Stored) builds no tree and never loads sqlglot,
which is a third of a small call's time (`sqlmetrics trec_eval` in a script's loop)."""
from __future__ import annotations

import importlib


class _Deferred:
    """A module, imported on its first attribute (importlib's import lock makes that safe on threads)."""

    __slots__ = ("_name", "_module")

    def __init__(self, name: str):
        self._name, self._module = name, None

    def __getattr__(self, attr: str):
        if self._module is None:
            self._module = importlib.import_module(self._name)
        return getattr(self._module, attr)

    def __repr__(self) -> str:
        return f"<deferred module {self._name!r}{'' if self._module is None else ' (imported)'}>"


sqlglot = _Deferred("sqlglot")
exp = _Deferred("sqlglot.expressions")
dialect_module = _Deferred("sqlglot.dialects.dialect")
