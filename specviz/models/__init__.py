"""Loading pairs, vocabulary checks, and the tree-attention forward with KV keep/rollback."""
