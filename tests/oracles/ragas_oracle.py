"""RAGAS's own scores for generated samples, its language model and embeddings replaced by deterministic fakes.

Run with the interpreter of a venv holding ragas==0.4.3 (not the project's: ragas would downgrade `rich`); it
imports only ragas and its dependencies. It prints JSON: per metric, per sample, what the fakes answered (the
statements and their verdicts, each retrieved chunk's verdict, the generated questions' vectors and noncommittal
flags, the question's vector) and RAGAS's score (null for its NaN). tests/test_ragas_oracle.py builds sqlmetrics'
tables from those answers and compares. The metrics are ragas.metrics.collections', whose models are injected
objects (InstructorBaseRagasLLM, BaseRagasEmbedding); nothing is called over the network.
"""
from __future__ import annotations

import asyncio
import json
import math
import os
import random
import sys

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")  # no usage analytics sent from a test

from ragas.embeddings.base import BaseRagasEmbedding  # noqa: E402
from ragas.llms.base import InstructorBaseRagasLLM  # noqa: E402
from ragas.metrics.collections import (  # noqa: E402
    AnswerRelevancy, ContextPrecisionWithoutReference, ContextPrecisionWithReference, ContextRecall, Faithfulness)

QUESTION = "Where was Einstein born?"
ANSWER = "Einstein was born in Germany."
REFERENCE = "Albert Einstein was born in Ulm, Germany, in 1879."


class ScriptedLLM(InstructorBaseRagasLLM):
    """Answers each structured-output request with the next scripted answer, checking that RAGAS asked for that
    kind of answer and, when the script says so, that the prompt holds a given text (the chunk being judged)."""

    def __init__(self, script: list):
        self.script = list(script)

    async def agenerate(self, prompt, response_model):
        model_name, answer, must_contain = self.script.pop(0)
        assert response_model.__name__ == model_name, (response_model.__name__, model_name)
        assert must_contain is None or must_contain in prompt, must_contain
        return response_model.model_validate(answer)

    def generate(self, prompt, response_model):
        return asyncio.run(self.agenerate(prompt, response_model))


class TableEmbedding(BaseRagasEmbedding):
    """A fixed vector per text."""

    def __init__(self, vectors: dict):
        super().__init__()
        self.vectors = vectors

    def embed_text(self, text, **kwargs):
        return self.vectors[text]

    async def aembed_text(self, text, **kwargs):
        return self.vectors[text]


async def score(metric, **inputs):
    """RAGAS's score (None for its NaN), once it has asked the scripted model every question scripted."""
    value = (await metric.ascore(**inputs)).value
    assert not metric.llm.script, f"{metric.name} left scripted answers unasked: {metric.llm.script}"
    return None if math.isnan(value) else value


def verdicts(rnd: random.Random, most: int) -> list:
    return [rnd.choice([0, 1]) for _ in range(rnd.choice(range(most + 1)))]


async def faithfulness(rnd: random.Random) -> dict:
    judged = verdicts(rnd, 5)  # sometimes no statement: RAGAS's NaN
    statements = [f"claim {i}" for i in range(len(judged))]
    script = [("StatementGeneratorOutput", {"statements": statements}, None)]
    if statements:
        script.append(("NLIStatementOutput", {"statements": [
            {"statement": s, "reason": "scripted", "verdict": v} for s, v in zip(statements, judged)]}, None))
    value = await score(Faithfulness(llm=ScriptedLLM(script)), user_input=QUESTION, response=ANSWER,
                        retrieved_contexts=["Einstein was born in Ulm."])
    return {"statements": statements, "verdicts": judged, "score": value}


async def context_recall(rnd: random.Random) -> dict:
    judged = verdicts(rnd, 5)
    statements = [f"reference claim {i}" for i in range(len(judged))]
    script = [("ContextRecallOutput", {"classifications": [
        {"statement": s, "reason": "scripted", "attributed": v} for s, v in zip(statements, judged)]}, None)]
    value = await score(ContextRecall(llm=ScriptedLLM(script)), user_input=QUESTION,
                        retrieved_contexts=["Einstein was born in Ulm."], reference=REFERENCE)
    return {"statements": statements, "verdicts": judged, "score": value}


async def context_precision(rnd: random.Random, metric, **texts) -> dict:
    """One verdict per retrieved chunk, asked in rank order (the scripted LLM checks the chunk is the one judged)."""
    judged = [rnd.choice([0, 1]) for _ in range(rnd.randint(1, 6))]
    chunks = [f"chunk number {i} <{i}>" for i in range(len(judged))]
    script = [("ContextPrecisionOutput", {"reason": "scripted", "verdict": v}, c) for c, v in zip(chunks, judged)]
    value = await score(metric(llm=ScriptedLLM(script)), user_input=QUESTION, retrieved_contexts=chunks, **texts)
    return {"chunks": chunks, "verdicts": judged, "score": value}


def vector(rnd: random.Random, dims: int = 4) -> list:
    v = [rnd.randint(-8, 8) / 4 for _ in range(dims)]
    v[rnd.randrange(dims)] = rnd.choice([-1, 1]) * rnd.randint(1, 8) / 4  # never all zeros
    return v


async def answer_relevancy(rnd: random.Random, empty_rate: float = 0.15) -> dict:
    strictness = rnd.choice([1, 2, 3, 4])
    all_noncommittal = rnd.random() < 0.25
    noncommittal = [int(all_noncommittal or rnd.random() < 0.3) for _ in range(strictness)]
    # Now and then the model generates no question (an empty string): RAGAS leaves that generation out.
    questions = ["" if rnd.random() < empty_rate else f"generated question {i}?" for i in range(strictness)]
    answers = list(zip(questions, noncommittal))
    script = [("AnswerRelevanceOutput", {"question": q, "noncommittal": n}, None) for q, n in answers]
    generated = [{"question": q, "vector": vector(rnd), "noncommittal": n} for q, n in answers if q]
    asked = vector(rnd)
    embeddings = TableEmbedding({QUESTION: asked, **{g["question"]: g["vector"] for g in generated}})
    metric = AnswerRelevancy(llm=ScriptedLLM(script), embeddings=embeddings, strictness=strictness)
    value = await score(metric, user_input=QUESTION, response=ANSWER)
    return {"asked": asked, "generations": strictness, "generated": generated, "score": value}


async def main(samples: int, seed: int) -> dict:
    rnd = random.Random(seed)
    out = {"faithfulness": [], "context_recall": [], "context_precision": [], "context_utilization": [],
           "answer_relevancy": []}
    for _ in range(samples):
        out["faithfulness"].append(await faithfulness(rnd))
        out["context_recall"].append(await context_recall(rnd))
        out["context_precision"].append(await context_precision(rnd, ContextPrecisionWithReference,
                                                                reference=REFERENCE))
        out["context_utilization"].append(await context_precision(rnd, ContextPrecisionWithoutReference,
                                                                  response=ANSWER))
        out["answer_relevancy"].append(await answer_relevancy(rnd))
    out["answer_relevancy"].append(await answer_relevancy(rnd, empty_rate=1))  # no question generated at all
    return out


if __name__ == "__main__":
    samples, seed = (int(a) for a in sys.argv[1:3]) if len(sys.argv) > 2 else (12, 0)
    json.dump(asyncio.run(main(samples, seed)), sys.stdout)
