"""Recall, the read side over the store: the clips a query finds (MERIT max-sim over keys,
BM25, rank fusion), their neighbors filtered, PyraVid expansion, sub-queries and the
entity-time queries — what the answer loop and ``edge search`` build on."""
