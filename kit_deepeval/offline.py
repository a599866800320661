"""Keep DeepEval offline and quiet. Call `quiet_offline()` before the first `import deepeval` where you can.

- Telemetry and the update check are forced off: nothing may leave the machine.
- `.env` files are not read (DeepEval reads them at import; under `deepeval test run` that has already
  happened, so `make deepeval-evals` sets DEEPEVAL_DISABLE_DOTENV=1 itself).
- No upload to Confident AI unless KIT_DEEPEVAL_UPLOAD=1: an empty CONFIDENT_API_KEY wins over a key in
  `.env` or in DeepEval's legacy keystore (DeepEval never overwrites a variable already set), and DeepEval
  reads an empty key as no key.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

UPLOAD_FLAG = "KIT_DEEPEVAL_UPLOAD"


def upload_requested(env: MutableMapping[str, str] | None = None) -> bool:
    env = os.environ if env is None else env
    return (env.get(UPLOAD_FLAG) or "").strip().lower() in ("1", "true", "yes")


def quiet_offline(env: MutableMapping[str, str] | None = None) -> None:
    env = os.environ if env is None else env
    env["DEEPEVAL_TELEMETRY_OPT_OUT"] = "1"
    env["DEEPEVAL_UPDATE_WARNING_OPT_IN"] = "0"
    env.setdefault("DEEPEVAL_DISABLE_DOTENV", "1")
    if not upload_requested(env):
        env["CONFIDENT_API_KEY"] = ""
