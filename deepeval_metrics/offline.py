"""Keep DeepEval offline and quiet. Call `quiet_offline()` before the first `import deepeval` where you can.

- Telemetry and the update check are forced off: nothing may leave the machine.
- `.env` files are not read again (DeepEval reads them at import; under `deepeval test run` that has
  already happened: the project's .env turns DeepEval's telemetry off before it starts).
- No upload to Confident AI unless KIT_DEEPEVAL_UPLOAD=1: an empty CONFIDENT_API_KEY wins over a key in
  `.env` or in DeepEval's legacy keystore (DeepEval never overwrites a variable already set), and DeepEval
  reads an empty key as no key.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

from kit.offline import DEAD_PROXY_URL, DEEPEVAL, PROXY_VARS, deepeval_upload_requested

# The project's .env sends Promptfoo's non-local requests to a closed port (its telemetry beacon has no
# off switch). DeepEval reads the same .env; its own traffic is off by its flags, and a remote judge
# must reach its host, so that sentinel proxy is dropped here. A real proxy the user set is kept.


def upload_requested(env: MutableMapping[str, str] | None = None) -> bool:
    return deepeval_upload_requested(env)


def quiet_offline(env: MutableMapping[str, str] | None = None) -> None:
    env = os.environ if env is None else env
    env.update(DEEPEVAL)
    env.setdefault("DEEPEVAL_DISABLE_DOTENV", "1")
    for var in PROXY_VARS:
        if env.get(var) == DEAD_PROXY_URL:
            del env[var]
    if not upload_requested(env):
        env["CONFIDENT_API_KEY"] = ""
