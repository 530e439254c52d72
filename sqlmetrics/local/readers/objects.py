"""Objects in memory: Arrow tables and streams, pandas and polars frames, DuckDB relations, {query_id: {doc_id:
value}} dicts; and the IR toolkits' own: ranx's Qrels and Run (and its .lz4 files), Hugging Face datasets, and
ir_datasets' iterators of named tuples and `irds:` ids."""
from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from ...errors import SqlmetricsError
from ..databases import copy_into
from .loaded import Loaded, _fresh, _numbered
from .roles import _empty_view, _map_columns

if TYPE_CHECKING:  # pyarrow is imported where a table is built: the command line never pays its import
    import pyarrow as pa


def _object_view(con, obj, kind: str, what: str, columns: dict | None) -> Loaded:
    """An object in memory (not an iterator of named tuples, which _named_tuples streams), with its roles."""
    view = _fresh(kind)
    if isinstance(obj, dict):
        table, label = _dict_table(obj, kind, f"{what} (dict)"), f"{what} (dict)"
    elif isinstance(obj, duckdb.DuckDBPyRelation):
        # Streamed into a table of ours: the relation lives on the caller's connection, and is not copied
        # whole into Python memory first.
        copy_into(con, obj.to_arrow_reader(), view)
        table, label = None, f"{what} (DuckDB relation)"
    elif _is_arrow(obj):
        if isinstance(obj, _arrow_types()[1]):
            # A RecordBatchReader can be read once; the checks read the input again (to locate a bad row).
            copy_into(con, obj, view)
            table, label = None, f"{what} (Arrow stream)"
        else:
            table, label = obj, f"{what} (Arrow table)"
    elif type(obj).__module__.startswith("polars"):
        table, label = obj.to_arrow(), f"{what} (polars DataFrame)"
    elif type(obj).__module__.startswith("pandas"):
        table, label = _pandas_table(obj), f"{what} (pandas DataFrame)"
    elif type(obj).__module__.startswith("datasets.") and hasattr(obj, "with_format"):
        # A Hugging Face Dataset: its Arrow table (memory-mapped, not copied), rows selected as it shows them.
        table, label = obj.with_format("arrow")[:], f"{what} (Hugging Face Dataset)"
    elif hasattr(obj, "to_dict") and type(obj).__module__.startswith("ranx"):
        table, label = _dict_table(obj.to_dict(), kind, f"{what} (ranx)"), f"{what} (ranx)"
    else:
        raise SqlmetricsError(
            f"{what}: cannot read a {type(obj).__name__}; pass a file path (TREC, CSV, TSV, Parquet, JSON Lines), "
            "a pyarrow Table, a pandas or polars DataFrame, a Hugging Face Dataset, ranx Qrels or Run, an iterator of "
            "named tuples (ir_datasets), a {query_id: {doc_id: value}} dict, 'irds:<dataset id>' or 'file.duckdb:table'."
        )
    if table is None:
        return Loaded(view, _map_columns(con, view, kind, label, columns), label, "row", _numbered(view, 0))
    loaded = _registered(con, table, kind, label, columns)
    if label.endswith("(pandas DataFrame)"):
        loaded.missing_as = {str(name): "NaN" for name, dtype in obj.dtypes.items() if dtype.kind == "f"}
    return loaded


def _registered(con, table, kind: str, label: str, columns: dict | None) -> Loaded:
    """An Arrow table registered as a view (not copied), with its roles."""
    view = _fresh(kind)
    con.register(view, table)
    return Loaded(view, _map_columns(con, view, kind, label, columns), label, "row", _numbered(view, 0))


def _dict_table(obj: dict, kind: str, label: str) -> pa.Table:
    """{qid: {docid: value}} (ranx / pytrec_eval shape) -> an Arrow table."""
    import pyarrow as pa

    qids, docs, values = [], [], []
    query_keys: dict = {}
    for qid, docs_of in obj.items():
        if not isinstance(docs_of, dict):
            raise SqlmetricsError(
                f"{label}: expected {{query_id: {{doc_id: value}}}}, but query {qid!r} maps to a {type(docs_of).__name__}."
            )
        query = _id_text(qid, query_keys, "query ids", label)
        doc_keys: dict = {}
        for doc, value in docs_of.items():
            qids.append(query)
            docs.append(_id_text(doc, doc_keys, f"query {query!r}: document ids", label))
            values.append(value)
    value_role = "relevance" if kind == "qrels" else "score"
    try:
        column = pa.array(values, type=pa.float64())
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        bad = next((q, d, v) for q, d, v in zip(qids, docs, values) if not isinstance(v, (int, float)))
        raise SqlmetricsError(
            f"{label}: query {bad[0]!r}, document {bad[1]!r} has {value_role} {bad[2]!r}, which is not a number."
        ) from None
    return pa.table({"query_id": qids, "doc_id": docs, value_role: column})


def _id_text(key, seen: dict, what: str, label: str) -> str:
    """A dict key as the text id it becomes. Ids are compared as text, so two keys written alike (1 and
    '1') would be one id: refused, since merging them would silently drop or double a judgment."""
    text = str(key)
    if text in seen:
        raise SqlmetricsError(f"{label}: {what} {seen[text]!r} and {key!r} both become {text!r} (ids are "
                              "compared as text); keep one of them, or spell the ids one way.")
    seen[text] = key
    return text


def _pandas_table(frame) -> pa.Table:
    """A pandas DataFrame as an Arrow table. A column of Python objects mixing types (ids [1, 'd2', 3])
    has no Arrow type: it becomes text, each value as str() writes it (1 -> '1'), which is how ids are
    compared anyway (a score column so converted is read as numbers by the checks and the evaluation)."""
    import pandas as pd
    import pyarrow as pa

    try:
        return pa.Table.from_pandas(frame, preserve_index=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        pass
    frame = frame.copy(deep=False)
    for i in range(frame.shape[1]):  # by position: column names may repeat
        column = frame.iloc[:, i]
        try:
            pa.array(column, from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            # None, NaN, NaT and pd.NA stay missing (an empty id is then reported with its row).
            frame.isetitem(i, column.map(lambda v: None if pd.api.types.is_scalar(v) and pd.isna(v) else str(v)))
    return pa.Table.from_pandas(frame, preserve_index=False)


def _arrow_types() -> tuple:
    # pyarrow is imported here, not at the top: an object from pyarrow means it is loaded already, and
    # the command line (files in, text out) never needs it (importing it costs ~0.15 s of start-up).
    import pyarrow as pa

    return pa.Table, pa.RecordBatchReader


def _is_arrow(obj) -> bool:
    return type(obj).__module__.startswith("pyarrow") and isinstance(obj, _arrow_types())


def _ranx_file(con, path: Path, kind: str, label: str) -> Loaded:
    """A file ranx wrote as `.lz4` (CBOR in LZ4 frames, its own layout): read by ranx, when installed."""
    try:
        import ranx
    except ImportError:
        raise SqlmetricsError(f"{label}: a .lz4 file is ranx's format, read through the ranx package; install it "
                              "(pip install ranx), or save the run as .trec or .json.") from None
    try:
        content = ranx.Run.from_file(str(path), kind="lz4").to_dict()
    except Exception as e:  # whatever lz4 or cbor2 raise on data that is not theirs
        raise SqlmetricsError(f"{label}: cannot be read as ranx's LZ4 format ({type(e).__name__}: {e}).") from None
    return _registered(con, _dict_table(content, kind, label), kind, label, None)


IR_DATASETS = "irds:"  # irds:<dataset id>: the dataset's qrels or scored documents, through ir_datasets
TUPLES_PER_BATCH = 1 << 16


def _ir_dataset_items(text: str, kind: str, what: str) -> Iterator:
    """The qrels_iter() or scoreddocs_iter() of the ir_datasets dataset `irds:<id>` names."""
    try:
        import ir_datasets
    except ImportError:
        raise SqlmetricsError(f"{what} {text!r}: irds: datasets are read through the ir_datasets package; "
                              "install it (pip install ir_datasets).") from None
    dataset_id = text[len(IR_DATASETS):]
    try:
        dataset = ir_datasets.load(dataset_id)
    except KeyError:
        raise SqlmetricsError(f"{what} {text!r}: ir_datasets has no dataset {dataset_id!r}; see "
                              "https://ir-datasets.com for the ids, or register your own.") from None
    part = "qrels" if kind == "qrels" else "scoreddocs"
    if not getattr(dataset, f"has_{part}")():
        raise SqlmetricsError(f"{what} {text!r}: that dataset has no {part}; pass the {kind} another way.")
    return getattr(dataset, f"{part}_iter")()


def _named_tuples(con, items: Iterator, kind: str, what: str, columns: dict | None) -> Loaded:
    """An iterator of named tuples (ir_datasets' qrels_iter() and scoreddocs_iter() give TrecQrel and
    ScoredDoc), streamed into a table of ours in Arrow batches: never a Python list of every item. The
    fields are the columns; score and grade fields are read as doubles, the others as the first batch's
    types (text ids stay text)."""
    import pyarrow as pa

    first = next(items, None)
    if first is None:
        return _empty_view(con, kind, what)
    if not (isinstance(first, tuple) and hasattr(first, "_fields")):
        raise SqlmetricsError(f"{what} (iterator): yields {type(first).__name__} items; an iterator must yield named tuples "
                              "(ir_datasets' qrels_iter() or scoreddocs_iter(), or a collections.namedtuple with "
                              "query_id, doc_id and score or relevance fields).")
    kind_of_item, fields = type(first), first._fields
    label = f"{what} ({kind_of_item.__name__} items)"
    failure: list = []  # a problem found while DuckDB reads the stream, raised as ours afterwards

    def chunks():
        number = 1  # of the chunk's first item
        rest = itertools.chain([first], items)
        while chunk := list(itertools.islice(rest, TUPLES_PER_BATCH)):
            other = next((i for i, item in enumerate(chunk) if type(item) is not kind_of_item), None)
            if other is not None:
                failure.append(SqlmetricsError(
                    f"{label}: item {number + other} is a {type(chunk[other]).__name__}, not a "
                    f"{kind_of_item.__name__} as the items before it. Pass one kind of item per input "
                    "(qrels_iter() as qrels, scoreddocs_iter() as the run)."))
                raise failure[-1]
            yield number, list(zip(*chunk))
            number += len(chunk)

    stream = chunks()
    number, values = next(stream)
    sample = pa.table({f: pa.array(v) for f, v in zip(fields, values)})
    probe = _fresh(kind)
    con.register(probe, sample.slice(0, 0))
    mapping = _map_columns(con, probe, kind, label, columns)
    con.unregister(probe)
    numbers = {mapping[r] for r in ("score", "relevance") if r in mapping}
    schema = pa.schema([pa.field(f, pa.float64() if f in numbers else sample.schema.field(f).type) for f in fields])

    def batch(number: int, values: list):
        try:
            return pa.record_batch([pa.array(v, type=t) for v, t in zip(values, schema.types)], schema=schema)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            for field, column, t in zip(fields, values, schema.types):
                for i, value in enumerate(column):
                    try:
                        pa.array([value], type=t)
                    except (pa.ArrowInvalid, pa.ArrowTypeError):
                        failure.append(SqlmetricsError(
                            f"{label}: item {number + i} has {field} {value!r}, which is not a {t} as in the "
                            f"items before it. Give the field one type."))
                        raise failure[-1] from None
            raise

    reader = pa.RecordBatchReader.from_batches(schema, itertools.starmap(
        batch, itertools.chain([(number, values)], stream)))
    view = _fresh(kind)
    try:
        copy_into(con, reader, view)
    except duckdb.Error:
        if failure:
            raise failure[-1] from None
        raise
    return Loaded(view, mapping, label, "item", _numbered(view, 0))
