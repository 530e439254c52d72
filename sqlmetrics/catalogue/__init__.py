"""The measure catalogue: the templates in sql/ (templates.py), the names users type (names.py), and the
measure reference generated from both (reference.py), and trec_eval's command-line names (trec.py)."""
from .names import MeasureCall, parse, parse_all, split_measure_list, trec_name
from .templates import ABSENT, PARAM_TYPES, Measure, Param, measures, shared_columns

__all__ = ["ABSENT", "PARAM_TYPES", "Measure", "MeasureCall", "Param", "measures", "parse", "parse_all",
           "shared_columns", "split_measure_list", "trec_name"]
