"""A production trace made a regression case (`kit case from-trace`), one job per module:

- source: the trace, from a file `kit import` reads or a run's attempt in the store;
- redact: personal data masked, one token per value across every file written;
- judged: the suite's invariants (and the stored case's checks) run on the trace with the oracle;
- propose: the checks to review, from what happened (a passing trace) or from what broke (a failing one);
- draft: the case's turns, context and id; casefile: its YAML text with a comment per check;
- tapes: the tools' answers as the kit's tool cassette and MCP cassettes; model: the model's as recordings;
- place: the folder inside the repository, all files written or none; build: the whole, `write_case`.
"""
