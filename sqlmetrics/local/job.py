"""What one evaluation is, decided from its options before any data is read: the measures parsed, the statement's
shape, the segments, and the columns each table's roles are mapped to."""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..catalogue import parse_all
from ..errors import SqlmetricsError
from ..options import FORMAT_GROUPS, GROUP_ROLES, QRELS_ROLES, RUN_ROLES, SUBTOPIC_ROLE, Settings
from ..plan import output_columns
from ..statement import Shape, check_subtopics


@dataclass
class _Job:
    """What one evaluation is, decided before any data is read."""

    calls: list
    shape: Shape
    segments: tuple
    labels: bool  # the judgments are in the run (qrels=None)
    order_role: str  # score, or rank_position with ties="rank"

    @property
    def group_roles(self) -> tuple:
        """The qrels' judgment-group roles the statement reads (qrels_format)."""
        return FORMAT_GROUPS[self.shape.qrels_format]

    @property
    def texts(self) -> list:
        return [c.text for c in self.calls]

    @property
    def parts(self) -> list:
        """The evaluation's statements, as [(their measures, whether their lists lose the unjudged documents)]:
        one, unless some measures ask for judged_only of their own (ir_measures' AP(judged_only=True)) and the
        evaluation does not: then those are computed by a second statement, over the same loaded inputs."""
        judged = [c for c in self.calls if c.judged_only]
        if not judged or self.shape.judged_only:
            return [(self.calls, self.shape.judged_only)]
        rest = [c for c in self.calls if not c.judged_only]
        return [(rest, False), (judged, True)] if rest else [(judged, True)]

    def part_shape(self, judged_only: bool) -> Shape:
        """The shape of a part's statement (taken once the run source has set the list key)."""
        return self.shape if judged_only == self.shape.judged_only else replace(self.shape, judged_only=judged_only)

    @property
    def log_mode(self) -> bool:
        return bool(self.segments) or self.labels


def _prepare(qrels, measures, o: Settings, trec_grades: bool = False) -> _Job:
    segments = tuple([o.group_by] if isinstance(o.group_by, str) else o.group_by or ())
    calls = parse_all(measures, o.relevance_level, o.compat)  # fails on a bad name before any data is read
    taken = {"run", "query_id", "num_lists", *(c.text for c in calls), *output_columns(calls)}
    for g in segments:
        if g in taken:
            raise SqlmetricsError(f"group_by= {g!r}: that name is taken by a result column; rename the column.")
    check_subtopics(calls, o.qrels_format, qrels is not None)
    if qrels is None and o.qrels_format != "qrels":
        raise SqlmetricsError(f"qrels_format={o.qrels_format!r} reads judgment groups from the qrels; with qrels=None "
                              "the judgments are the run's own labels.")
    shape = Shape(queries=o.queries, ties=o.ties, relevance_level=o.relevance_level, score_precision=o.score_precision,
                  depth=o.depth, judged_only=o.judged_only, fixed_order=True, qrels_format=o.qrels_format,
                  trec_grades=trec_grades)
    preferences = [c.text for c in calls if c.measure.rows == "preferences"]
    if o.qrels_format == "qrels_jg" and preferences:
        raise SqlmetricsError(f"{preferences[0]} compares preferences: it takes qrels_format='qrels' (one judgment "
                              "group per query), 'prefs' or 'qrels_prefs', not 'qrels_jg'.")
    # Counting the queries and the ranked documents needs no grade: trec_eval prints num_q with preferences.
    others = [c.text for c in calls if c.measure.rows != "preferences" and c.measure.name not in ("NumQ", "NumRet")]
    if o.qrels_format in ("prefs", "qrels_prefs") and others:
        raise SqlmetricsError(f"qrels_format={o.qrels_format!r} holds preferences: {others[0]} needs graded "
                              "judgments (qrels_format='qrels' or 'qrels_jg'); the prefs_* measures read preferences.")
    return _Job(calls, shape, segments, qrels is None, "rank_position" if o.ties == "rank" else "score")


def _table_columns(o: Settings) -> tuple[dict, dict]:
    """columns= maps both tables wherever the role exists; qrels_columns= overrides it for the qrels."""
    columns = dict(o.columns or {})
    qrels = {r: c for r, c in columns.items() if r in (*QRELS_ROLES, *GROUP_ROLES, SUBTOPIC_ROLE)}
    qrels.update(o.qrels_columns or {})
    run = {r: c for r, c in columns.items() if r in RUN_ROLES}
    return qrels, run
