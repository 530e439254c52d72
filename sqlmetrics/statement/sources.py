"""The statement's inputs: a Source is a table and the roles its columns play (a run of lists is unnested
here), Embeddings the question embeddings' Source and its form."""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..deferred import exp
from .trees import _type


@dataclass(frozen=True)
class Source:
    """Where a table comes from and which of its columns play which role.

    `table` is a table node (possibly qualified: db.schema.table) and `columns` maps each role (query_id,
    doc_id, relevance | score, rank_position, run_name, seg_1, ...) to the source's column, an identifier
    node; a role may instead be a constant (`constants`) or a checked expression over the source's columns
    (`expressions`, relevance.py). A relation of ours (local/) may give its table and columns by name, as
    text: bound() makes them nodes when a statement is built, so that a statement read from the disk cache
    needs no sqlglot at all (the key is the source's repr).
    """

    table: exp.Table | str
    columns: dict
    constants: dict = field(default_factory=dict)
    expressions: dict = field(default_factory=dict)
    # A run with one row per list: doc_id is an array of document ids in rank order and score, when mapped,
    # the array of their scores. Unnested WITH ORDINALITY: an element's position is its rank_position, and
    # without scores the score is minus the position, so that any order (score or rank) is the list's.
    lists: bool = False

    def bound(self) -> Source:
        """This source with a table or column given by name made a node (a name is quoted as written)."""
        if not isinstance(self.table, str) and not any(isinstance(c, str) for c in self.columns.values()):
            return self
        table = exp.to_table(self.table) if isinstance(self.table, str) else self.table
        columns = {r: exp.to_identifier(c, quoted=True) if isinstance(c, str) else c for r, c in self.columns.items()}
        return replace(self, table=table, columns=columns)

    def select(self, roles: dict) -> exp.Select:
        """SELECT ... FROM the table, renaming and casting the roles: {role: SQL type, or None to keep the
        column's own type}."""
        items = [exp.alias_(self.value(role) if sql_type is None else
                            exp.cast(self.value(role), _type(sql_type), copy=False), role, copy=False)
                 for role, sql_type in roles.items()]
        select = exp.select(*items)
        if not self.lists:
            return select.from_(self.table.copy(), copy=False)
        return _unnested_from(select, self.table, self.columns["doc_id"])

    def value(self, role: str) -> exp.Expression:
        """The role's value in a row of the source (of the unnested source, for lists)."""
        if role in self.expressions:
            return exp.paren(self.expressions[role].copy())
        if role in self.constants:
            return exp.convert(self.constants[role])
        if not self.lists:
            return exp.Column(this=self.columns[role].copy())
        position = exp.column(LISTS[3], LISTS[1])
        if role == "doc_id":
            return exp.column(LISTS[2], LISTS[1])
        if role == "rank_position":
            return position
        if role == "score":
            if "score" not in self.columns:
                return exp.Neg(this=position)
            return exp.Bracket(this=exp.column(self.columns["score"].copy(), LISTS[0]), expressions=[position])
        return exp.column(self.columns[role].copy(), LISTS[0])


# The names a list source's rows are unnested under: the table, the array's rows, an element, its position.
LISTS = ("sqlm_lists", "sqlm_items", "sqlm_doc", "sqlm_pos")


@dataclass(frozen=True)
class Embeddings:
    """The question embeddings AnswerRelevancy reads (embeddings=): `source` maps query_id, generated (0: the
    question asked; 1..N: the questions generated from the answer) and noncommittal, and either embedding (an
    array) or dimension and value (one row per dimension). `form` says which, and how the cosine is computed:
    'function' (an array, DuckDB's list_cosine_similarity), 'unnest' (an array unnested WITH ORDINALITY, then
    sums as in the long form), or 'long'."""

    source: Source
    form: str

    def bound(self) -> Embeddings:
        return replace(self, source=self.source.bound())


def _unnested_from(select: exp.Select, table: exp.Table, array: exp.Identifier) -> exp.Select:
    """select FROM table CROSS JOIN UNNEST(array) WITH ORDINALITY, under the LISTS names."""
    lists = exp.alias_(table.copy(), LISTS[0], table=True, copy=False)
    unnest = exp.Unnest(expressions=[exp.column(array.copy(), LISTS[0])],
                        alias=exp.TableAlias(this=exp.to_identifier(LISTS[1]), columns=[exp.to_identifier(LISTS[2])]),
                        offset=exp.to_identifier(LISTS[3]))
    return select.from_(lists, copy=False).join(unnest, join_type="CROSS", copy=False)
