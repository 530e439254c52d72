{{ sqlmetrics.evaluate(ref('qrels'), ref('run'), var('measures'),
                       {'per_query': true, 'queries': 'intersection', 'relevance_level': 2}) }}
