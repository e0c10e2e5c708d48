"""The bulk scan: bytes in, the lines each rule selects out.

Owns the engines (Hyperscan, and the `regex` fallback with its required literals), the byte-level
prefilters, chunk arithmetic, the selection of candidate lines with their assembly windows, the
worker pool, and the matcher that confirms a candidate with its rule's own regex. May import the
model, errors and `rankautopsy.sources`; never the diagnosis, a renderer or the CLI.
"""
