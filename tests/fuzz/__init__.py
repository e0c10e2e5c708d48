"""The fuzzing suite (issue 15): hostile inputs of every kind run in-process through `diagnose` and every
renderer, each case under a time bound, checking that nothing but a documented usage error is raised,
that two runs give the same output, and that no case hangs.

- `corpus`: a mutation corpus built from `fixtures/` (bit flips, truncation, CR/NUL/invalid UTF-8/UTF-16,
  huge numbers, bad dates, deep JSON, long and `\\r`-packed lines, compression, hostile rule packs);
- `strategies`: Hypothesis strategies for each input kind (rank logs, consoles, kernel logs in every
  clock format, error.json, gzip/xz, rule packs);
- `harness`: runs one case and says what happened;
- `run`: `python -m tests.fuzz.run --cases 100000` prints one summary line.
"""
