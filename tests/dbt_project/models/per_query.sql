{{ sqlmetrics.evaluate(ref('qrels'), ref('run'), var('measures'), {'per_query': true}) }}
