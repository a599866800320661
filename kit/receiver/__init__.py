"""`kit serve`: production traces judged as they arrive, nothing acknowledged ever lost.

decode     an OTLP/HTTP body (protobuf or JSON, gzip/deflate) -> spans, or BadBatch naming what is wrong
wal        the write-ahead log: a batch fsync'd (group commit) before it is acknowledged; replay; compaction
assemble   spans -> traces, complete when the root has come and the settle time passed; memory bounded
judging    the production case (invariants + case-free checks) and one trace's verdict as store rows
service    the Receiver: accept (the HTTP front's one call), the judging thread, batched store writes
http       the HTTP front (POST /v1/traces, GET /status)
"""
