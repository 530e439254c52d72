{{ sqlmetrics.evaluate(ref('qrels'), ref('run'), var('measures'), {'queries': 'intersection', 'relevance_level': 2}) }}
