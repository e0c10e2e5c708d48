"""Rule packs as data: safe YAML loading, validation of every rule (its effects against the facts
its pattern captures), the example runner, the catalogue (`rules list|explain`, the README table)
and where user packs come from. May import the model, errors and `rankautopsy.sources` (examples
are matched with their launcher prefixes stripped, as in a scan); never the scan, the diagnosis, a
renderer or the CLI.
"""
