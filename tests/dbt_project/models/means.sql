{{ sqlmetrics.evaluate(ref('qrels'), ref('run'), var('measures')) }}
