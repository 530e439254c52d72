"""Write ab_users.parquet and ab_users_before.parquet: an A/B test randomised by user, and the same users' sessions
from the weeks before it, for the examples of unit= (the delta method) and pre_period= (CUPED).

    python -m sqlmetrics.demo.make_ab      (fixed seed: the files are the same on every run)

One row per shown result: user, arm (control / treatment, by user; the file before the test has none), session
(the list key), doc, position (1..5) and clicked (0/1). Each user clicks with a propensity of their own, so one
user's sessions are alike and the weeks before predict the test; the treatment lifts every click's chance.
A fifth of the users have no session before the test.
"""
from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

SEED = 20241126
USERS = 1000
FOLDER = Path(__file__).parent


def rows(period: str, seed: int = SEED, users: int = USERS, lift: float = 0.04) -> dict:
    """The log's columns: period 'test' (with the arm; the treatment's clicks lifted by `lift`) or 'before'."""
    propensity = random.Random(seed)
    props = [propensity.betavariate(2, 5) for _ in range(users)]
    rnd = random.Random(seed + (1 if period == "test" else 2))
    cols = {k: [] for k in ("user", *(["arm"] if period == "test" else []), "session", "doc", "position", "clicked")}
    session = 0
    for u in range(users):
        if period == "before" and rnd.random() < 0.2:
            continue
        arm = "treatment" if u % 2 else "control"
        for _ in range(rnd.randint(1, 4)):
            session += 1
            lifted = lift if period == "test" and arm == "treatment" else 0.0
            for pos in range(1, 6):
                cols["user"].append(f"u{u:04d}")
                if period == "test":
                    cols["arm"].append(arm)
                cols["session"].append(f"{period[0]}{session:05d}")
                cols["doc"].append(f"d{pos}")
                cols["position"].append(pos)
                cols["clicked"].append(int(rnd.random() < (props[u] + lifted) / pos ** 0.5))
    return cols


FILES = {"test": "ab_users.parquet", "before": "ab_users_before.parquet"}


def table(period: str, **options) -> pa.Table:
    """rows() as a typed table; options: rows()'."""
    types = {"position": pa.int32(), "clicked": pa.int8()}
    return pa.table({k: pa.array(v, types.get(k, pa.string())) for k, v in rows(period, **options).items()})


def main() -> list:
    for period, name in FILES.items():
        pq.write_table(table(period), FOLDER / name, compression="zstd")
    return [FOLDER / name for name in FILES.values()]


if __name__ == "__main__":
    print(*main(), sep="\n")
