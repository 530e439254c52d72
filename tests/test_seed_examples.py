"""The seed notes' worked examples (../shared/data/seed_examples.json) give the contract's numbers.

Each case carries its own qrels and run dicts (ranx / pytrec_eval shape) and, per measure, the value
METRICS.md requires (`contract`, at full precision; see README-seed-examples.md for how it was checked
against pytrec_eval and ranx). The measure keys are canonical strings (`SetF(beta=1)`, `RBP(p=0.8)`,
`nDCG(gain='exp')`) and are passed as they are, so results must come back keyed by them verbatim.
"""
import json

import pytest

import sqlmetrics
from conftest import SHARED  # the same location the seed_examples_path fixture checks

SEED_FILE = SHARED / "data" / "seed_examples.json"


def _case_ids():
    # Parametrizing needs the ids at collection time, before any fixture runs. Without the shared data
    # there is a single placeholder case, and the seed_examples_path fixture turns it into the usual skip
    # (or the failure CI asks for).
    if not SEED_FILE.exists():
        return ["seed_examples.json-absent"]
    return [case["id"] for case in json.loads(SEED_FILE.read_text())]


def _load(path):
    cases = json.loads(path.read_text())
    by_id = {case["id"]: case for case in cases}
    # Duplicate ids would silently merge two cases into one test.
    assert len(by_id) == len(cases), "seed_examples.json has duplicate case ids"
    return by_id


@pytest.mark.parametrize("case_id", _case_ids())
def test_seed_case(case_id, seed_examples_path):
    case = _load(seed_examples_path)[case_id]
    measures = list(case["measures"])
    results = sqlmetrics.evaluate(case["qrels"], case["run"], measures)
    got = {m: results.aggregate[m] for m in measures}
    want = {m: case["measures"][m]["contract"] for m in measures}
    # All of the case's measures at once, so a failure shows every value of the case (and its notes).
    assert got == pytest.approx(want, abs=1e-9), case["notes"]
