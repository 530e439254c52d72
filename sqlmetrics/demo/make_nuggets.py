"""Write the nugget demo: rag_nuggets.csv (topic, nugget_id, importance: each topic's nuggets, vital or okay) and
rag_assignments.csv (topic, run, nugget_id, assignment: how each system's answer supports them), for the nugget
scores' example (docs/rag.md, "Nugget scores").

    python -m sqlmetrics.demo.make_nuggets      (fixed seed: the files are the same on every run)

20 topics of 5 to 12 nuggets; every fourth topic has no vital nugget (its Vital scores are 0). Three systems
answer every topic: `hybrid` supports more nuggets than `bm25`, `closedbook` (no retrieval) fewer; a nugget a
system's answer does not address is left out of its assignments (not_support).
"""
from __future__ import annotations

import csv
import random
from pathlib import Path

SEED = 20261207
FOLDER = Path(__file__).resolve().parent
TOPICS = 20
SYSTEMS = {"bm25": 0.55, "hybrid": 0.7, "closedbook": 0.35}  # each system's chance of supporting a nugget


def rows(seed: int = SEED) -> tuple[list, list]:
    rnd = random.Random(seed)
    nuggets, assignments = [], []
    for t in range(TOPICS):
        topic = f"t{t:02d}"
        vital_share = 0.0 if t % 4 == 3 else 0.4
        ids = [f"{topic}_n{i + 1}" for i in range(rnd.randint(5, 12))]
        # the others' first nugget is vital, each other one by chance
        nuggets += [(topic, n, "vital" if vital_share and (i == 0 or rnd.random() < vital_share) else "okay")
                    for i, n in enumerate(ids)]
        ease = rnd.uniform(-0.2, 0.2)  # some topics are easier for every system
        for system, skill in SYSTEMS.items():
            for n in ids:
                chance = skill + ease
                draw = rnd.random()
                if draw < chance * 0.75:
                    assignments.append((topic, system, n, "support"))
                elif draw < chance:
                    assignments.append((topic, system, n, "partial_support"))
                elif rnd.random() < 0.5:  # else not supported: said so, or left out (not_support alike)
                    assignments.append((topic, system, n, "not_support"))
    return nuggets, assignments


def main() -> None:
    nuggets, assignments = rows()
    for name, header, data in (("rag_nuggets.csv", ("topic", "nugget_id", "importance"), nuggets),
                               ("rag_assignments.csv", ("topic", "run", "nugget_id", "assignment"), assignments)):
        with open(FOLDER / name, "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(header)
            writer.writerows(data)


if __name__ == "__main__":
    main()
