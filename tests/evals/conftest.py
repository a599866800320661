"""`deepeval test run tests/evals` (and plain `pytest tests/evals`): the kit's DeepEval session, the same
plugin a user's own test folder imports (`kit init` writes this line): offline, one store run per session
from the one plan, every CaseLog stored once, soft-gate floors checked at the end."""

from deepeval_metrics.pytest_plugin import *  # noqa: F403
