-- measure: ContextRelevancy
-- description: RAGAS context relevancy: |S| / the sentences of the retrieved context, S being those judged relevant to the question, from the judged statements (verdicts=) of the query whose statement_of is 'context' (one row per sentence of the context).
-- reference: RAGAS context_relevancy (Es et al., RAGAS, EACL 2024 demos: CR = extracted sentences / sentences in the context)
-- rows: verdicts
-- empty: null
-- range: 0..1
-- example: qrels: q1 d1 1, q2 d2 1 run: q1 d1 0.9, q2 d2 0.8 verdicts: q1 context 1, q1 context 0, q1 context 0, q1 context 0, q2 context 1, q2 context 1, q2 answer 0 => 5/8
-- note: Example 1: 1 of q1's 4 sentences is relevant, and both of q2's: (1/4 + 1) / 2 = 5/8. Every sentence of
--   the context is a row, the irrelevant ones with verdict 0: they are the denominator.
AVG(CASE WHEN statement_of = 'context' THEN verdict END)
