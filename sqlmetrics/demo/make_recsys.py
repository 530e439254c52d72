"""Write the recommender demo: recsys_train.csv, recsys_test.csv and recsys_reco.csv (user_id, item_id, and
rating or score), and recsys_items.csv (item_id, category: its item group), for the recommender examples
(README.md, docs/recommender.md).

    python -m sqlmetrics.demo.make_recsys      (fixed seed: the files are the same on every run)

60 users and 120 items of long-tailed popularity. Each user has 8 training interactions and 2 test ones,
never the same item twice. Two recommenders each give every user 10 items it has not interacted with in
training: `popular` ranks by training popularity (plus a little noise), `personal` mixes a hidden taste
(each user prefers one of six item groups) with popularity, so it covers more of the catalogue.
"""
from __future__ import annotations

import csv
import random
from pathlib import Path

SEED = 20240611
FOLDER = Path(__file__).resolve().parent
USERS, ITEMS, GROUPS = 60, 120, 6


def rows(seed: int = SEED) -> tuple[list, list, list]:
    rnd = random.Random(seed)
    items = [f"i{i:03d}" for i in range(ITEMS)]
    popularity = [1 / (i + 1) ** 0.8 for i in range(ITEMS)]
    train, test, reco = [], [], []
    counts = {item: 0 for item in items}
    taste = {}
    for u in range(USERS):
        user, taste[f"u{u:02d}"] = f"u{u:02d}", rnd.randrange(GROUPS)
        liked = [p * (4 if i % GROUPS == taste[user] else 1) for i, p in enumerate(popularity)]
        seen: list = []
        while len(seen) < 10:
            item = rnd.choices(items, liked)[0]
            if item not in seen:
                seen.append(item)
        train += [(user, item, rnd.choice([3, 4, 5])) for item in seen[:8]]
        test += [(user, item, rnd.choice([3, 4, 5])) for item in seen[8:]]
        for item in seen[:8]:
            counts[item] += 1
    for u in range(USERS):
        user = f"u{u:02d}"
        known = {item for v, item, _ in train if v == user}
        for name, boost in (("popular", 1), ("personal", 6)):
            scores = {item: counts[item] * (boost if i % GROUPS == taste[user] else 1) + rnd.random()
                      for i, item in enumerate(items) if item not in known}
            top = sorted(scores, key=scores.get, reverse=True)[:10]
            reco += [(name, user, item, round(scores[item], 4)) for item in top]
    return train, test, reco


def item_rows() -> list:
    """Each item's category: the item group a user's hidden taste prefers."""
    return [(f"i{i:03d}", f"g{i % GROUPS}") for i in range(ITEMS)]


def main() -> None:
    train, test, reco = rows()
    for name, header, data in (("recsys_items.csv", ("item_id", "category"), item_rows()),
                               ("recsys_train.csv", ("user_id", "item_id", "rating"), train),
                               ("recsys_test.csv", ("user_id", "item_id", "rating"), test),
                               ("recsys_reco.csv", ("model", "user_id", "item_id", "score"), reco)):
        with open(FOLDER / name, "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(header)
            writer.writerows(data)


if __name__ == "__main__":
    main()
