"""`make evals`' orchestration: the stages (kit.pipeline.stages), how they run (kit.pipeline.executor), the
summary (kit.pipeline.summary) and the run that ties them to the store, the reports and the gate
(kit.pipeline.evals).

    python -m kit.pipeline [--agent module:callable] [--variant NAME] [--cases PATH] [--shards DIR]
"""

from kit.pipeline.evals import evaluate, main
from kit.pipeline.executor import Stage, StageResult, Step, run_stage, run_stages
from kit.pipeline.stages import kit_stage, stages

__all__ = ["Stage", "StageResult", "Step", "evaluate", "kit_stage", "main", "run_stage", "run_stages", "stages"]
