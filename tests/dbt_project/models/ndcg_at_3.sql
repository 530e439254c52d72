-- One measure's macro, called directly.
{{ sqlmetrics.nDCG(ref('qrels'), ref('run'), k=3, per_query=true) }}
