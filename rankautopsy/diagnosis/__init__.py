"""From a stream's hits to the verdict: multi-line assembly of events, the timeline across ranks and
hosts (read from rule effects and facts, never rule ids), the differential diagnosis with its outcome
and confidence caps, and each rank's report. May import the model, signals, `rankautopsy.sources`
and the scan's matcher (to classify assembled events); never a renderer or the CLI.
"""
