"""What shapes the statement beyond its measures (Shape: the evaluation options and the list key), and the
check that the diversity measures are given subtopic qrels."""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import SqlmetricsError
from ..options import BY_NAME


@dataclass
class Shape:
    """What shapes the statement beyond the measures: the evaluation options and the list key."""

    queries: str = "qrels"
    ties: str = "docid_desc"
    relevance_level: int = 1
    score_precision: str = "float64"
    run_key: tuple = ()  # list-key columns before query_id, e.g. ("run_name",)
    # Segment columns, part of the list key after run_key: each is (internal name, output name SQL); the
    # internal names (seg_1, ...) are what the run source maps, the output names are the result columns.
    group_by: tuple = ()
    labels: bool = False  # judgments come from the run rows (role `relevance`), keyed by the whole list key
    # Sums in a fixed order (DuckDB, where the local evaluation runs): see _in_fixed_order.
    fixed_order: bool = False
    depth: int | None = None  # only each list's first `depth` documents count (trec_eval -M)
    judged_only: bool = False  # unjudged documents (and negative grades) leave the lists before ranking (-J)
    # How the judgments were read (options.qrels_format): 'qrels_jg' carries `judgment_group`, and every list
    # is evaluated once per judgment group of its query, its value the mean over those groups (trec_eval's
    # *_avgjg measures); 'prefs' and 'qrels_prefs' carry the groups (and subgroups) of preferences.
    qrels_format: str = "qrels"
    # trec_eval's grades (`sqlmetrics trec_eval` at a negative -l): a ranked document the qrels lack is graded -1 and
    # one graded below 0 is -2 (form_res_rels.c; both below every level >= 0), and the judgments' negative grades
    # count nowhere (its R is of grades >= 0). At a level of -1, the rank-by-rank measures count an unjudged document
    # as relevant, as trec_eval does.
    trec_grades: bool = False

    @property
    def judgment_groups(self) -> bool:
        return self.qrels_format == "qrels_jg"

    @property
    def subtopics(self) -> bool:
        return self.qrels_format == "subtopics"

    @property
    def segment_key(self) -> tuple:
        return tuple(internal for internal, _ in self.group_by)

    @property
    def list_key(self) -> tuple:
        return (*self.run_key, *self.segment_key, "query_id")

    @property
    def group_key(self) -> tuple:
        """What the measures are computed per: the list, and its judgment group when there are groups."""
        return (*self.list_key, "judgment_group") if self.judgment_groups else self.list_key

    def check(self):
        for name in ("queries", "ties", "relevance_level", "score_precision", "depth", "judged_only",
                     "qrels_format"):
            BY_NAME[name].check(getattr(self, name))


def check_subtopics(calls, qrels_format: str, has_qrels: bool) -> None:
    """The diversity measures (templates with `rows: subtopics`) read subtopic qrels, and only qrels hold them."""
    diversity = [c.text for c in calls if c.measure.rows == "subtopics"]
    if diversity and qrels_format != "subtopics":
        raise SqlmetricsError(f"{diversity[0]} is a diversity measure: it reads subtopic qrels, ndeval's `query "
                              "subtopic document grade` lines (or a table with a subtopic column). Pass them with "
                              "qrels_format='subtopics' (command line: -R subtopics).")
    if qrels_format == "subtopics" and not has_qrels:
        raise SqlmetricsError("qrels_format='subtopics' reads the subtopics from the qrels: pass qrels, not qrels=None.")
