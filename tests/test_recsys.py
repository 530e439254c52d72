"""The measures of a run's recommendations (templates with `rows: recommendations`): one value per run, over
every list of the run and the training interactions (history=), equal to Microsoft Recommenders'
python_evaluation on the same generated data.

Recommenders 1.2.1's novelty() and distributional_coverage() end in `DataFrame.agg(...)[0]`, which pandas 3
no longer reads as a position (KeyError: 0): their last step, a sum, is written out here with numpy over
what Recommenders computes before it (historical_item_novelty, the item counts). The Gini index, which
Recommenders does not have, is RecBole's formula written out. Personalization is recmetrics' formula (1 -
the mean off-diagonal cosine similarity of the binary user x item matrix) with scikit-learn's cosine: the
recmetrics package itself imports plotly, seaborn and funcsigs and would downgrade pandas."""
from __future__ import annotations

import random
import sqlite3
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sklearn.metrics import roc_auc_score
from sklearn.metrics.pairwise import cosine_similarity

import sqlmetrics
from sqlmetrics.demo import make_recsys
from sqlmetrics.dialects import DIALECTS
from sqlmetrics.errors import SqlmetricsError

from conftest import unavailable

try:
    from recommenders.evaluation import python_evaluation
except ImportError:  # not in the test extra (its pins would downgrade pandas): README and .ci/run install it apart
    unavailable('Microsoft Recommenders is not installed: pip install --no-deps "recommenders==1.2.1"')

MEASURES = ["CatalogCoverage", "DistributionalCoverage", "Novelty", "GiniIndex", "Personalization"]
TOLERANCE = 1e-9


def gini(counts) -> float:
    """The Gini coefficient of the catalogue items' recommendation counts (zeros included), ascending:
    sum_i (2i - n - 1) c_i / (n sum c), as RecBole's GiniIndex."""
    c = np.sort(np.asarray(counts, dtype=float))
    n = len(c)
    return float(np.sum((2 * np.arange(1, n + 1) - n - 1) * c) / (n * c.sum()))


def personalization(reco: pd.DataFrame) -> float:
    """recmetrics.personalization: 1 - the mean cosine similarity of distinct users' binary item vectors."""
    matrix = pd.crosstab(reco["userID"], reco["itemID"]).to_numpy() > 0
    similarity = cosine_similarity(matrix)
    n = len(similarity)
    return float(1 - (similarity.sum() - n) / (n * (n - 1)))


def generated(seed: int, users=30, items=60, k=5):
    """(history, recommendations, test) as pandas frames of userID/itemID (and rating/prediction): the
    history a skewed sample of interactions; each user 1 to k items it has not seen (Recommenders refuses a
    recommended pair that is in the history); some recommended items were never seen in training."""
    rnd = random.Random(seed)
    weights = [1 / (i + 1) for i in range(items - 10)]  # the last 10 items never appear in the history
    history = {(f"u{u}", f"i{rnd.choices(range(items - 10), weights)[0]}") for u in range(users) for _ in range(8)}
    reco, test = [], []
    for u in range(users):
        unseen = [f"i{i}" for i in range(items) if (f"u{u}", f"i{i}") not in history]
        for item in rnd.sample(unseen, rnd.randint(1, k)):  # lists of different lengths
            reco.append((f"u{u}", item, round(rnd.random(), 6)))
        test += [(f"u{u}", item, 1) for item in rnd.sample(unseen, 3)]
    as_frame = lambda rows, cols: pd.DataFrame(rows, columns=cols)  # noqa: E731
    return (as_frame(sorted(history), ["userID", "itemID"]), as_frame(reco, ["userID", "itemID", "prediction"]),
            as_frame(test, ["userID", "itemID", "rating"]))


def oracle(history: pd.DataFrame, reco: pd.DataFrame) -> dict:
    catalogue = set(history["itemID"]) | set(reco["itemID"])
    counts = reco["itemID"].value_counts()
    share = counts.to_numpy(dtype=float) / len(reco)
    item_novelty = python_evaluation.historical_item_novelty(history, reco).set_index("itemID")["item_novelty"]
    recommended = reco["itemID"][reco["itemID"].isin(item_novelty.index)]  # as novelty(): an inner merge
    return {
        "CatalogCoverage": python_evaluation.catalog_coverage(history, reco),
        "DistributionalCoverage": float(-np.sum(share * np.log2(share))),  # distributional_coverage's sum
        "Novelty": float(item_novelty[recommended].to_numpy().sum() / len(reco)),  # novelty's sum over n recs
        "GiniIndex": gini([counts.get(item, 0) for item in catalogue]),
        "Personalization": personalization(reco),
    }


def _evaluate(history, reco, test, **options):
    columns = {"query_id": "userID", "doc_id": "itemID"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # users recommended to without test interactions are not averaged
        return sqlmetrics.evaluate(test, reco, MEASURES, history=history.assign(rating=1),
                                   columns={**columns, "score": "prediction"},
                                   qrels_columns={**columns, "relevance": "rating"}, **options)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_each_run_value_equals_recommenders(seed):
    history, reco, test = generated(seed)
    want = oracle(history, reco)
    results = _evaluate(history, reco, test)
    for m in MEASURES:
        assert abs(results.aggregate[m] - want[m]) <= TOLERANCE, (m, results.aggregate[m], want[m])
        # The run's one value, on each of its lists (reported once: the aggregate).
        per_list = results.per_query.column(m).to_pylist()
        assert per_list and all(abs(v - want[m]) <= TOLERANCE for v in per_list), m


def test_several_runs_each_get_their_own_value():
    history, reco, test = generated(4)
    other = generated(5)[1]
    other = other[~other.set_index(["userID", "itemID"]).index.isin(history.set_index(["userID", "itemID"]).index)]
    columns = {"query_id": "userID", "doc_id": "itemID"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = sqlmetrics.evaluate(test, {"a": reco, "b": other}, MEASURES, history=history.assign(rating=1),
                                      columns={**columns, "score": "prediction"},
                                      qrels_columns={**columns, "relevance": "rating"})
    for name, frame in (("a", reco), ("b", other)):
        want = oracle(history, frame)
        assert all(abs(results.aggregate[name][m] - want[m]) <= TOLERANCE for m in MEASURES), name


def test_a_missing_history_names_the_option():
    _, reco, test = generated(1)
    with pytest.raises(SqlmetricsError, match="history="):
        sqlmetrics.evaluate(test, reco, ["Novelty"], columns={"query_id": "userID", "doc_id": "itemID",
                                                              "score": "prediction"},
                            qrels_columns={"query_id": "userID", "doc_id": "itemID", "relevance": "rating"})
    with pytest.raises(SqlmetricsError, match="history="):
        sqlmetrics.render(["GiniIndex"], dialect="postgres")


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_renders_for_every_dialect(dialect):
    sql = sqlmetrics.render(MEASURES + ["nDCG@10"] + RATING_MEASURES + CLASS_MEASURES, dialect=dialect,
                            history="train")
    assert "rec_items" in sql and "rating_rows" in sql and "train" in sql


@pytest.mark.slow  # the demo regenerated; the README example runs as a test too
def test_the_shipped_demo_is_its_generator_output_and_the_readme_example_holds():
    """sqlmetrics/demo/recsys_*.csv are what make_recsys writes; the README's example equals the oracle there."""
    train, test, reco = make_recsys.rows()
    folder = Path(make_recsys.__file__).parent
    for name, data in (("recsys_train.csv", train), ("recsys_test.csv", test), ("recsys_reco.csv", reco),
                       ("recsys_items.csv", make_recsys.item_rows())):
        shipped = pd.read_csv(folder / name, dtype=str)
        assert [tuple(r) for r in shipped.itertuples(index=False)] == [tuple(map(str, r)) for r in data], name
    history = pd.read_csv(folder / "recsys_train.csv", dtype={"rating": float}).rename(
        columns={"user_id": "userID", "item_id": "itemID"})
    runs = pd.read_csv(folder / "recsys_reco.csv").rename(columns={"user_id": "userID", "item_id": "itemID"})
    results = sqlmetrics.evaluate(folder / "recsys_test.csv", folder / "recsys_reco.csv", MEASURES,
                                  columns={"run_name": "model", "query_id": "user_id", "doc_id": "item_id",
                                           "relevance": "rating"}, history=folder / "recsys_train.csv")
    for name in ("popular", "personal"):
        want = oracle(history, runs[runs["model"] == name])
        assert all(abs(results.aggregate[name][m] - want[m]) <= TOLERANCE for m in MEASURES), name
    assert results.aggregate["personal"]["Personalization"] > results.aggregate["popular"]["Personalization"]
    # The categories as one-hot vectors for Recommenders' item_feature_vector similarity.
    categories = pd.read_csv(folder / "recsys_items.csv")
    genres = sorted(set(categories["category"]))
    features = pd.DataFrame({"itemID": categories["item_id"],
                             "features": [np.eye(len(genres))[genres.index(g)] for g in categories["category"]]})
    diversity = "IntraListDiversity(similarity='features')"
    results = sqlmetrics.evaluate(folder / "recsys_test.csv", folder / "recsys_reco.csv", [diversity],
                                  columns={"run_name": "model", "query_id": "user_id", "doc_id": "item_id",
                                           "relevance": "rating"}, items=folder / "recsys_items.csv")
    for name in ("popular", "personal"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Recommenders' ChainedAssignmentError
            want = python_evaluation.user_diversity(history, runs[runs["model"] == name][["userID", "itemID"]],
                                                    item_feature_df=features, item_sim_measure="item_feature_vector",
                                                    col_item_features="features")["user_diversity"].mean()
        assert abs(results.aggregate[name][diversity] - want) <= TOLERANCE, name
    assert results.aggregate["personal"][diversity] < results.aggregate["popular"][diversity]


# ------------------------------------------------------------------------------- rating and classification

RATING_MEASURES = ["RMSE", "MAE", "RSquared", "ExplainedVariance"]
CLASS_MEASURES = ["AUC", "GAUC", "UserAUC", "LogLoss"]


def rated(seed: int, binary: bool, users=25, items=40):
    """(truth, predictions): each user grades some items (1..5, or 0/1), and the model scores some of those
    and others (only the pairs in both count); scores repeat, so that some tie."""
    rnd = random.Random(seed)
    truth, pred = [], []
    for u in range(users):
        for i in rnd.sample(range(items), rnd.randint(2, 8)):
            truth.append((f"u{u}", f"i{i}", rnd.randint(0, 1) if binary else rnd.randint(1, 5)))
        for i in rnd.sample(range(items), 10):
            pred.append((f"u{u}", f"i{i}", rnd.choice([0.1, 0.25, 0.5, 0.75, 0.9]) if binary and rnd.random() < 0.3
                         else rnd.random() if binary else round(rnd.uniform(0.5, 5.5), 3)))
    return (pd.DataFrame(truth, columns=["userID", "itemID", "rating"]),
            pd.DataFrame(pred, columns=["userID", "itemID", "prediction"]))


def gauc(truth: pd.DataFrame, pred: pd.DataFrame, weighted: bool = True) -> float:
    """Per-user roc_auc_score weighted by the user's pairs (Zhou et al. 2018), or each user alike (UserAUC),
    over users with both classes."""
    pairs = truth.merge(pred, on=["userID", "itemID"])
    areas, weights = [], []
    for _, user in pairs.groupby("userID"):
        if user["rating"].nunique() == 2:
            areas.append(roc_auc_score(user["rating"], user["prediction"]))
            weights.append(len(user) if weighted else 1)
    return float(np.dot(areas, weights) / np.sum(weights))


def _evaluate_ratings(truth, pred, measures):
    columns = {"query_id": "userID", "doc_id": "itemID", "relevance": "rating", "score": "prediction"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # users scored without grades are not averaged by the ranking measures
        return sqlmetrics.evaluate(truth, pred, measures, columns=columns)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_rating_measures_equal_recommenders(seed):
    truth, pred = rated(seed, binary=False)
    want = {"RMSE": python_evaluation.rmse(truth, pred), "MAE": python_evaluation.mae(truth, pred),
            "RSquared": python_evaluation.rsquared(truth, pred), "ExplainedVariance": python_evaluation.exp_var(truth, pred)}
    results = _evaluate_ratings(truth, pred, RATING_MEASURES + ["nDCG@5"])
    for m in RATING_MEASURES:
        assert abs(results.aggregate[m] - want[m]) <= TOLERANCE, (m, results.aggregate[m], want[m])
        assert all(abs(v - want[m]) <= TOLERANCE for v in results.per_query.column(m).to_pylist()), m


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_classification_measures_equal_recommenders_and_gauc(seed):
    truth, pred = rated(seed, binary=True)
    want = {"AUC": python_evaluation.auc(truth, pred), "LogLoss": python_evaluation.logloss(truth, pred),
            "GAUC": gauc(truth, pred), "UserAUC": gauc(truth, pred, weighted=False)}
    results = _evaluate_ratings(truth, pred, CLASS_MEASURES)
    for m in CLASS_MEASURES:
        assert abs(results.aggregate[m] - want[m]) <= TOLERANCE, (m, results.aggregate[m], want[m])


@pytest.mark.parametrize("seed", [4, 5])
def test_per_user_areas_weighted_and_not(seed):
    """Dense grades (each user scored on most of 12 items): many users with both classes, of different sizes."""
    truth, pred = rated(seed, binary=True, users=40, items=12)
    want = {"GAUC": gauc(truth, pred), "UserAUC": gauc(truth, pred, weighted=False)}
    assert abs(want["GAUC"] - want["UserAUC"]) > 1e-3  # the users' weights matter here
    results = _evaluate_ratings(truth, pred, ["GAUC", "UserAUC"])
    for m, value in want.items():
        assert abs(results.aggregate[m] - value) <= TOLERANCE, (m, results.aggregate[m], value)
    # UserAUC is each user's own area in per_query (none for a user with one class); GAUC is the run's one value
    pairs = truth.merge(pred, on=["userID", "itemID"])
    areas = {u: roc_auc_score(p["rating"], p["prediction"]) if p["rating"].nunique() == 2 else None
             for u, p in pairs.groupby("userID")}
    got = dict(zip(results.per_query.column("query_id").to_pylist(), results.per_query.column("UserAUC").to_pylist()))
    assert {u for u, a in areas.items() if a is None} and got.keys() >= areas.keys()
    for user, area in areas.items():
        assert (got[user] is None) if area is None else abs(got[user] - area) <= TOLERANCE, (user, got[user], area)


def test_compare_tests_user_auc_user_by_user():
    """Hand-computed areas: u1 1/2 -> 1, u2 0 -> 1, u3 1 -> 1: differences 1/2, 1, 0 (mean 1/2, 2 wins, 1 tie)."""
    qrels = {"u1": {"i1": 1, "i2": 0, "i3": 1}, "u2": {"i3": 1, "i4": 0}, "u3": {"i1": 1, "i2": 0}}
    a = {"u1": {"i1": 0.9, "i2": 0.5, "i3": 0.1}, "u2": {"i3": 0.2, "i4": 0.6}, "u3": {"i1": 0.6, "i2": 0.3}}
    b = {"u1": {"i1": 0.9, "i2": 0.1, "i3": 0.5}, "u2": {"i3": 0.8, "i4": 0.6}, "u3": {"i1": 0.6, "i2": 0.3}}
    (c,) = sqlmetrics.compare(qrels, {"a": a, "b": b}, ["UserAUC"], test="student").comparisons
    assert (c.n, c.difference, c.wins, c.ties, c.losses) == (3, 0.5, 2, 1, 0)


def test_compare_refuses_a_measure_of_the_whole_run():
    truth, pred = rated(1, binary=False)
    other = pred.assign(prediction=pred["prediction"] + 1)
    columns = {"query_id": "userID", "doc_id": "itemID", "relevance": "rating", "score": "prediction"}
    with pytest.raises(SqlmetricsError, match="RMSE is one value per run"):
        sqlmetrics.compare(truth, {"a": pred, "b": other}, ["nDCG@5", "RMSE"], columns=columns)


def test_rating_measures_refuse_positions():
    with pytest.raises(SqlmetricsError, match="ties="):
        sqlmetrics.render(["RMSE"], ties="rank")


def test_each_segment_and_labelled_log_gets_its_own_value():
    """group_by: one value per segment, over the segment's lists; qrels=None: the pairs are the log's labelled rows."""
    history, reco, test = generated(6)
    reco = reco.assign(arm=["a" if int(u[1:]) % 3 else "b" for u in reco["userID"]])
    columns = {"query_id": "userID", "doc_id": "itemID"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = sqlmetrics.evaluate(test, reco, MEASURES, group_by="arm", history=history.assign(rating=1),
                                      columns={**columns, "score": "prediction"},
                                      qrels_columns={**columns, "relevance": "rating"})
    for row in results.per_group.to_pylist():
        want = oracle(history, reco[reco["arm"] == row["arm"]].drop(columns="arm"))
        assert all(abs(row[m] - want[m]) <= TOLERANCE for m in MEASURES), row["arm"]

    truth, pred = rated(7, binary=True)
    log = pred.merge(truth, on=["userID", "itemID"], how="left")  # unlabelled rows: no pair
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # users whose scored items have no grade: no pair
        results = sqlmetrics.evaluate(None, log, ["AUC", "GAUC", "UserAUC", "RMSE"], label="rating",
                                      columns={"query_id": "userID", "doc_id": "itemID", "score": "prediction"})
    assert abs(results.aggregate["AUC"] - python_evaluation.auc(truth, pred)) <= TOLERANCE
    assert abs(results.aggregate["GAUC"] - gauc(truth, pred)) <= TOLERANCE
    assert abs(results.aggregate["UserAUC"] - gauc(truth, pred, weighted=False)) <= TOLERANCE
    assert abs(results.aggregate["RMSE"] - python_evaluation.rmse(truth, pred)) <= TOLERANCE


# --------------------------------------------------------------------- item similarities (rows: items)
# Recommenders' user_diversity and user_item_serendipity fill an unknown similarity with 0 by
# `frame[col].fillna(0, inplace=True)`, which pandas 3 (copy-on-write) no longer applies to the frame: with
# co-occurrence similarities (where most pairs are unknown) Recommenders 1.2.1 on pandas 3 averages the known
# pairs only. There the oracle is Recommenders' own similarity table (_get_cooccurrence_similarity) and its
# pairing, with the fill written out (fill_unknown). With feature vectors every pair is known, and
# Recommenders' functions are the oracle as they are.


def item_features(seed: int, categories: bool, items=60):
    """Every item's features: a random vector of either sign, or one of 5 categories as a one-hot vector (whose
    cosine is 1 for the same category, else 0). For sqlmetrics the same frame, with a `category` column instead."""
    rnd = np.random.default_rng(seed)
    genres = rnd.integers(0, 5, size=items)
    vectors = np.eye(5)[genres] if categories else rnd.normal(size=(items, 4))
    frame = pd.DataFrame({"itemID": [f"i{i}" for i in range(items)], "features": list(vectors)})
    ours = pd.DataFrame({"itemID": frame["itemID"], "category": [f"g{g}" for g in genres]}) if categories else frame
    return frame, ours


def fill_unknown(frame: pd.DataFrame, similarity: pd.DataFrame) -> pd.Series:
    """Recommenders' similarity of each (i1, i2) row of frame, 0 when it has none (its fillna(0))."""
    return frame.merge(similarity, on=["i1", "i2"], how="left")["sim"].fillna(0).to_numpy()


def cooccurrence_oracle(history: pd.DataFrame, reco: pd.DataFrame, relevant: pd.Series) -> dict:
    """{measure: {user: value}} with Recommenders' co-occurrence similarities, unknown ones 0."""
    similarity = python_evaluation._get_cooccurrence_similarity(history)
    pairs = python_evaluation._get_pairwise_items(reco[["userID", "itemID"]])
    pairs = pairs[pairs["i1"] != pairs["i2"]].assign(sim=lambda p: fill_unknown(p, similarity))
    diversity = 1 - pairs.groupby("userID")["sim"].mean()
    seen = reco[["userID", "itemID"]].assign(relevant=relevant.to_numpy()).merge(
        history[["userID", "itemID"]].rename(columns={"itemID": "train"}), on="userID")
    seen["i1"], seen["i2"] = seen[["itemID", "train"]].min(axis=1), seen[["itemID", "train"]].max(axis=1)
    per_item = seen.assign(sim=fill_unknown(seen, similarity)).groupby(["userID", "itemID"]).agg(
        sim=("sim", "mean"), relevant=("relevant", "first"))
    unexpected = 1 - per_item["sim"]
    return {"IntraListDiversity": diversity.to_dict(),
            "Serendipity": unexpected.groupby("userID").mean().to_dict(),
            "Serendipity(weight=relevant)": (unexpected * per_item["relevant"]).groupby("userID").mean().to_dict()}


def features_oracle(history: pd.DataFrame, reco: pd.DataFrame, relevant: pd.Series, features: pd.DataFrame) -> dict:
    """{measure: {user: value}}: Recommenders' user_diversity and user_serendipity with item_feature_vector."""
    given = dict(item_feature_df=features, item_sim_measure="item_feature_vector", col_item_features="features")
    reco = reco[["userID", "itemID"]].assign(relevant=relevant.to_numpy())
    per_user = lambda frame, column: frame.set_index("userID")[column].to_dict()  # noqa: E731
    return {
        "IntraListDiversity(similarity=features)": per_user(python_evaluation.user_diversity(
            history, reco[["userID", "itemID"]], **given), "user_diversity"),
        "Serendipity(similarity=features)": per_user(python_evaluation.user_serendipity(
            history, reco[["userID", "itemID"]], **given), "user_serendipity"),
        "Serendipity(similarity=features,weight=relevant)": per_user(python_evaluation.user_serendipity(
            history, reco, col_relevance="relevant", **given), "user_serendipity"),
    }


def _check_per_user(results, want: dict):
    """Each user's value (null where Recommenders has no row for the user) and the mean over users."""
    for m, by_user in want.items():
        assert by_user and all(np.isfinite(v) for v in by_user.values()), m
        got = dict(zip(results.per_query.column("query_id").to_pylist(), results.per_query.column(m).to_pylist()))
        assert {u for u, v in got.items() if v is not None} == set(by_user), m
        assert all(abs(got[u] - v) <= TOLERANCE for u, v in by_user.items()), m
        assert abs(results.aggregate[m] - np.mean(list(by_user.values()))) <= TOLERANCE, m


@pytest.mark.parametrize("seed", [1, pytest.param(2, marks=pytest.mark.slow), pytest.param(3, marks=pytest.mark.slow)])
@pytest.mark.parametrize("categories", [False, True], ids=["vectors", "categories"])
def test_diversity_and_serendipity_equal_recommenders(seed, categories):
    history, reco, test = generated(seed)
    # Some recommended items are relevant: weight=relevant differs from every item counting.
    test = pd.concat([test, reco[["userID", "itemID"]].iloc[::3].assign(rating=1)]).drop_duplicates(["userID", "itemID"])
    relevant = pd.Series([(u, i) in set(zip(test["userID"], test["itemID"])) for u, i in zip(reco["userID"], reco["itemID"])],
                         dtype=float)
    features, ours = item_features(seed, categories)
    columns = {"query_id": "userID", "doc_id": "itemID"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Recommenders' ChainedAssignmentError (above); users without a test item
        want = {**cooccurrence_oracle(history, reco, relevant), **features_oracle(history, reco, relevant, features)}
        results = sqlmetrics.evaluate(test, reco, list(want), history=history.assign(rating=1), items=ours,
                                      columns={**columns, "score": "prediction"},
                                      qrels_columns={**columns, "relevance": "rating"})
    _check_per_user(results, want)



@pytest.mark.slow  # Recommenders over two seeds' collections; the diversity oracle cases stay fast
@pytest.mark.parametrize("seed", [4, 5])
def test_similarities_at_a_cutoff_equal_recommenders_on_the_top_items(seed):
    """Measures at cutoffs compare only the items down to the largest of them (and, without a measure reading
    pairs within a list, none of those): each equals Recommenders' on the lists cut to its own k, next to a
    measure over the whole list, and without one."""
    history, reco, test = generated(seed, k=8)
    relevant_pairs = set(zip(test["userID"], test["itemID"]))
    # Sorted as sqlmetrics ranks: score descending, then the item id descending.
    ranked = reco.sort_values(["userID", "prediction", "itemID"], ascending=[True, False, False])
    top = {k: ranked.groupby("userID").head(k).reset_index(drop=True) for k in (2, 3, 4)}
    relevant = {k: pd.Series([float(p in relevant_pairs) for p in zip(t["userID"], t["itemID"])]) for k, t in top.items()}
    features = item_features(seed, categories=False)[0]
    columns = {"query_id": "userID", "doc_id": "itemID"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # as test_diversity_and_serendipity_equal_recommenders
        cooc = {k: cooccurrence_oracle(history, top[k], relevant[k]) for k in top}
        feats = {k: features_oracle(history, top[k], relevant[k], features) for k in top}
        whole = cooccurrence_oracle(history, reco, pd.Series([float(p in relevant_pairs)
                                                              for p in zip(reco["userID"], reco["itemID"])]))
        cases = [
            {"IntraListDiversity@3": cooc[3]["IntraListDiversity"],
             "Serendipity(similarity=features)@2": feats[2]["Serendipity(similarity=features)"],
             "Serendipity(weight=relevant)": whole["Serendipity(weight=relevant)"]},
            {"Serendipity@4": cooc[4]["Serendipity"],
             "Serendipity(similarity=features,weight=relevant)@2":
                 feats[2]["Serendipity(similarity=features,weight=relevant)"]},
        ]
        for want in cases:
            results = sqlmetrics.evaluate(test, reco, list(want), history=history.assign(rating=1), items=features,
                                          columns={**columns, "score": "prediction", "vector": "features"},
                                          qrels_columns={**columns, "relevance": "rating"})
            _check_per_user(results, want)


def _similarities(items, measures, **options):
    """measures over a small run, its items compared by their features (items=)."""
    run = {"u1": {"i1": 3.0, "i2": 2.0, "i3": 1.0}}
    return sqlmetrics.evaluate({"u1": {"i2": 1}}, run, measures, items=items, **options).aggregate


def test_item_features_in_every_form_give_the_same_similarities():
    """i1 (1, 0), i2 (1, 1), i3 (0, 2): as vectors, in long form, and (cosine 1 or 0) as categories."""
    vectors = pd.DataFrame({"item": ["i1", "i2", "i3"], "embedding": [[1.0, 0.0], [1.0, 1.0], [0.0, 2.0]]})
    long = pd.DataFrame({"item": ["i1", "i2", "i2", "i3"], "dimension": ["a", "a", "b", "b"], "value": [1, 1, 1, 2.0]})
    measure = "IntraListDiversity(similarity=features)"
    want = 1 - np.sqrt(2) / 3
    assert abs(_similarities(vectors, [measure])[measure] - want) <= TOLERANCE
    assert abs(_similarities(long, [measure])[measure] - want) <= TOLERANCE
    renamed = vectors.rename(columns={"embedding": "emb"})
    assert abs(_similarities(renamed, [measure], columns={"vector": "emb"})[measure] - want) <= TOLERANCE
    categories = pd.DataFrame({"item": ["i1", "i2", "i3"], "genre": ["a", "a", "b"]})
    assert abs(_similarities(categories, [measure])[measure] - 2 / 3) <= TOLERANCE


def test_item_features_are_checked():
    measure = ["IntraListDiversity(similarity=features)"]
    with pytest.raises(SqlmetricsError, match="items="):
        sqlmetrics.evaluate({"u1": {"i2": 1}}, {"u1": {"i1": 2.0, "i2": 1.0}}, measure)
    with pytest.raises(SqlmetricsError, match="history="):
        sqlmetrics.render(["Serendipity(similarity=features)"], items="item_features")
    both = pd.DataFrame({"item": ["i1"], "category": ["a"], "vector": [[1.0]]})
    with pytest.raises(SqlmetricsError, match="one list column of numbers"):
        _similarities(both, measure)
    with pytest.raises(SqlmetricsError, match="not a list of numbers"):
        _similarities(pd.DataFrame({"item": ["i1"], "vector": [1.0]}), measure)
    with pytest.raises(SqlmetricsError, match="long form"):
        sqlmetrics.render(measure, dialect="sqlite", items="item_features", columns={"vector": "embedding"})


@pytest.mark.slow  # a server
def test_vectors_as_postgres_arrays():
    """items= as a PostgreSQL table with a DOUBLE PRECISION[] column equals the same vectors read locally."""
    from conftest import postgres_connection

    history, reco, test = (frame.rename(columns=str.lower) for frame in generated(2))  # as PostgreSQL folds names
    features = item_features(2, categories=False)[0].rename(columns=str.lower)
    measures = ["IntraListDiversity(similarity=features)@3", "Serendipity(similarity=features)"]
    columns = {"query_id": "userid", "doc_id": "itemid"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = sqlmetrics.evaluate(test, reco, measures, history=history.assign(rating=1), items=features,
                                   columns={**columns, "score": "prediction"},
                                   qrels_columns={**columns, "relevance": "rating"}).aggregate
    with postgres_connection() as con:
        con.execute("CREATE TEMP TABLE items (itemid TEXT, features DOUBLE PRECISION[])")
        con.cursor().executemany("INSERT INTO items VALUES (%s, %s)",
                                 [(i, [float(x) for x in f]) for i, f in zip(features["itemid"], features["features"])])
        for name, frame in (("history", history), ("qrels", test.assign(rating=1)), ("reco", reco)):
            cols = list(frame.columns)
            con.execute(f"CREATE TEMP TABLE {name} ({', '.join(f'{c} TEXT' for c in cols)})")
            con.cursor().executemany(f"INSERT INTO {name} VALUES ({', '.join(['%s'] * len(cols))})",
                                     [tuple(map(str, r)) for r in frame.itertuples(index=False)])
        con.execute('ALTER TABLE qrels ALTER COLUMN rating TYPE DOUBLE PRECISION USING rating::double precision')
        con.execute('ALTER TABLE reco ALTER COLUMN prediction TYPE DOUBLE PRECISION USING prediction::double precision')
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = sqlmetrics.evaluate("qrels", "reco", measures, engine=con, history="history", items="items",
                                      columns={**columns, "score": "prediction", "vector": "features"},
                                      qrels_columns={**columns, "relevance": "rating"}).aggregate
    assert all(abs(got[m] - want[m]) <= TOLERANCE for m in measures), (got, want)


def test_compare_tests_the_per_user_measures():
    """Diversity and serendipity have a value per user: compare() tests them, reading history= and items=."""
    history, reco, test = generated(4)
    other = reco.assign(prediction=-reco["prediction"]).iloc[::2]
    features, ours = item_features(4, categories=True)
    columns = {"query_id": "userID", "doc_id": "itemID"}
    measures = ["IntraListDiversity(similarity=features)", "Serendipity"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = sqlmetrics.compare(test, {"a": reco, "b": other}, measures, history=history.assign(rating=1),
                                    items=ours, columns={**columns, "score": "prediction"},
                                    qrels_columns={**columns, "relevance": "rating"})
        want = sqlmetrics.evaluate(test, reco, measures, history=history.assign(rating=1), items=ours,
                                   columns={**columns, "score": "prediction"},
                                   qrels_columns={**columns, "relevance": "rating"}).aggregate
    text = report.to_markdown() if hasattr(report, "to_markdown") else str(report)
    assert all(m in text for m in measures) and f"{want['Serendipity']:.4f}" in text


def test_personalization_of_identical_lists_prints_zero(tmp_path, capsys):
    """Identical lists: cosine 1 for every pair, Personalization 0 up to floating-point noise, which may fall a hair
    below 0; the table prints 0.0000, never -0.0000."""
    from sqlmetrics.cli.main import main
    n, length = 2, 3
    run = pa.table({"query_id": [f"u{u}" for u in range(n) for _ in range(length)],
                    "doc_id": [f"i{i}" for _ in range(n) for i in range(length)],
                    "score": [float(length - i) for _ in range(n) for i in range(length)]})
    history = pa.table({"query_id": [f"u{u}" for u in range(n)], "doc_id": ["i0"] * n, "relevance": [1] * n})
    pq.write_table(run, tmp_path / "same.parquet")
    pq.write_table(history, tmp_path / "history.parquet")
    assert sqlmetrics.evaluate(history, run, ["Personalization"], history=history).aggregate["Personalization"] == \
        pytest.approx(0, abs=1e-12)
    for fmt in ("table", "markdown", "html"):
        capsys.readouterr()
        assert main(["eval", str(tmp_path / "history.parquet"), str(tmp_path / "same.parquet"), "-m", "Personalization",
                     "--history", str(tmp_path / "history.parquet"), "-f", fmt]) == 0
        out = capsys.readouterr().out
        assert "0.0000" in out and "-0.0000" not in out, out


@pytest.mark.parametrize("vectors, message", [
    ([("i1", [1.0, 0.0]), ("i2", [0.0, 1.0]), ("i1", [0.0, 1.0])], r"item 'i1' has more than one vector \(rows 1 and 3\)"),
    ([("i1", [1.0, 0.0]), ("i2", [float("nan"), 1.0])], r"row 2: the vector holds NaN or an infinite value"),
    ([("i1", [1.0, float("inf")]), ("i2", [0.0, 1.0])], r"row 1: the vector holds NaN or an infinite value"),
    # tests/test_fuzz_recommender.py found these taken in silence: numbers left out of the cosine, an unnamed item
    ([("i1", [1.0, 0.0]), ("i2", [0.0, 1.0, 5.0])], r"row 2: the vector has 3 numbers where the first row's has 2"),
    ([("i1", [1.0, None]), ("i2", [0.0, 1.0])], r"row 1: the vector holds an empty \(NULL\) number"),
    ([("i1", None), ("i2", [0.0, 1.0])], r"row 1: the vector is empty"),
    ([("i1", []), ("i2", [0.0, 1.0])], r"row 1: the vector is empty"),
    ([("", [1.0, 0.0]), ("i2", [0.0, 1.0])], r"row 1: the item id is empty"),
])
def test_item_vectors_are_one_per_item_and_finite(vectors, message):
    """Two vectors of one item were averaged in silence; a NaN gave an overflow error about grades."""
    items = pa.table({"doc_id": [v[0] for v in vectors], "vector": pa.array([v[1] for v in vectors], pa.list_(pa.float64()))})
    run = pa.table({"query_id": ["u1", "u1"], "doc_id": ["i1", "i2"], "score": [2.0, 1.0]})
    qrels = pa.table({"query_id": ["u1"], "doc_id": ["i1"], "relevance": [1]})
    with pytest.raises(SqlmetricsError, match=message):
        sqlmetrics.evaluate(qrels, run, ["IntraListDiversity(similarity='features')"], items=items, history=qrels)


def test_catalog_coverage_divides_by_the_catalogue_when_items_lists_it():
    """Recommended i1 and i5; training items i1, i3: 2/2 = 1 (Recommenders' catalog_coverage). With items= listing
    the catalogue i1..i5: 2/5. A random recommender over a 2,000-item catalogue once showed 1.44."""
    qrels = pa.table({"query_id": ["u1"], "doc_id": ["i2"], "relevance": [1]})
    run = pa.table({"query_id": ["u1", "u1", "u2"], "doc_id": ["i1", "i5", "i1"], "score": [0.9, 0.8, 0.7]})
    history = pa.table({"query_id": ["u1", "u3"], "doc_id": ["i3", "i1"], "relevance": [1, 1]})
    items = pa.table({"doc_id": [f"i{i}" for i in range(1, 6)], "category": ["a", "a", "b", "b", "c"]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # u2 has no test interactions
        assert sqlmetrics.evaluate(qrels, run, ["CatalogCoverage"], history=history).aggregate == {"CatalogCoverage": 1.0}
        assert sqlmetrics.evaluate(qrels, run, ["CatalogCoverage"], history=history, items=items).aggregate == \
            {"CatalogCoverage": 0.4}
    con = sqlite3.connect(":memory:")  # the rendered statement reads the catalogue too
    for name, table in (("qrels", qrels), ("run", run), ("history", history), ("items", items)):
        con.execute(f"CREATE TABLE {name} ({', '.join(table.column_names)})")
        con.executemany(f"INSERT INTO {name} VALUES ({', '.join('?' * table.num_columns)})",
                        [tuple(r.values()) for r in table.to_pylist()])
    sql = sqlmetrics.render(["CatalogCoverage"], "sqlite", history="history", items="items")
    assert con.execute(sql).fetchall() == [(0.4,)]


def test_items_with_a_category_and_a_vector_take_the_one_named():
    """List a, b, c; vectors (1,0), (0,1), (1,1); categories x, y, x. Cosines 0, 1/sqrt(2), 1/sqrt(2): diversity
    1 - sqrt(2)/3. Categories: two of the three pairs differ: 2/3. Both forms in one table were refused even with
    columns= naming one; unnamed, the refusal says how to name it."""
    items = pa.table({"item_id": ["a", "b", "c"], "category": ["x", "y", "x"],
                      "embedding": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]})
    qrels, run = {"u1": {"a": 1}}, {"u1": {"a": 0.9, "b": 0.5, "c": 0.1}}
    measure = "IntraListDiversity(similarity='features')@3"

    def diversity(**columns):
        return sqlmetrics.evaluate(qrels, run, [measure], items=items, history=qrels, **columns).aggregate[measure]

    assert diversity(columns={"vector": "embedding"}) == pytest.approx(1 - 2 ** 0.5 / 3, abs=1e-12)
    assert diversity(columns={"category": "category"}) == pytest.approx(2 / 3, abs=1e-12)
    with pytest.raises(SqlmetricsError, match=r"as category, vector: .* Name the one to use: columns=\{'category'"):
        diversity()


@pytest.mark.parametrize("items, message", [
    ({"doc_id": ["i1", "i2"], "category": ["a", None]}, r"items \(Arrow table\), row 2: the category is empty"),
    ({"doc_id": ["i1", "i1"], "dimension": ["x", "x"], "value": [1.0, 2.0]},
     r"item 'i1' has dimension 'x' more than once \(rows 1 and 2\)"),
    ({"doc_id": ["i1", "i2"], "dimension": ["x", "x"], "value": [1.0, float("nan")]}, r"row 2: the value is not a finite"),
])
def test_item_categories_and_long_form_are_checked(items, message):
    """A NULL category, a dimension given twice (its values were added up) or a NaN value: named, not guessed."""
    qrels = {"u1": {"i1": 1}}
    with pytest.raises(SqlmetricsError, match=message):
        sqlmetrics.evaluate(qrels, {"u1": {"i1": 2.0, "i2": 1.0}}, ["IntraListDiversity(similarity='features')"],
                            items=pa.table(items), history=qrels)


def test_history_rows_name_their_user_and_item():
    """A NULL user or an empty item in the training interactions counted as a user or an item of its own."""
    run = {"u1": {"i1": 2.0, "i2": 1.0}}
    for user, item in ((None, "i1"), ("u1", "")):
        history = pa.table({"query_id": pa.array([user], pa.string()), "doc_id": [item], "relevance": [1]})
        with pytest.raises(SqlmetricsError, match=r"history \(Arrow table\), row 1: the user or the item id is empty"):
            sqlmetrics.evaluate({"u1": {"i1": 1}}, run, ["Novelty"], history=history)
