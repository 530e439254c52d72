"""Kept: the few things built again and again from the same inputs (a plan of measures, a statement's text, the
aggregates' SQL), built once and kept."""
from __future__ import annotations

import threading


class Kept:
    """At most `size` values by key, the oldest dropped first; get(key, make) builds a key's value once. Safe on
    threads: evaluations run on several, and sqlglot, which builds most of these, holds the GIL anyway."""

    def __init__(self, size: int = 64):
        self._values: dict = {}
        self._size = size
        self._lock = threading.Lock()

    def get(self, key, make):
        with self._lock:
            if key not in self._values:
                if len(self._values) >= self._size:
                    self._values.pop(next(iter(self._values)))
                self._values[key] = make()
            return self._values[key]

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
