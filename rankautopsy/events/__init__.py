"""Event files: what `scan` on one node hands to `diagnose` (the map step's output, the reduce step's input).

Owns `Collected` (every input of one or more nodes scanned into its events and last signs of life, with
what was skipped and why) and its versioned JSON Lines form (`rankautopsy/schema/events-1.json`). May
import the model, errors and `rankautopsy.sources`; never the scan, the diagnosis, a renderer or the CLI.
"""

from rankautopsy.events.collected import Collected, Node, Part

__all__ = ["Collected", "Node", "Part"]
