"""`make evals`' orchestration: the stages (kit.pipeline.stages), the summary (kit.pipeline.summary) and
the run that ties them to the store, the reports and the gate (kit.pipeline.evals).

    python -m kit.pipeline [--agent module:callable] [--variant NAME] [--cases PATH] [--shards DIR]
"""

from kit.pipeline.evals import evaluate, main
from kit.pipeline.stages import Stage, StageResult, Step, kit_stage, run_stage, run_stages, stages

__all__ = ["Stage", "StageResult", "Step", "evaluate", "kit_stage", "main", "run_stage", "run_stages", "stages"]
