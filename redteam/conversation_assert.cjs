// The adaptive red team's conversation_assert.cjs (kit_promptfoo/redteam/conversation_assert.cjs in the installed
// kit): the oracle's verdict on an adaptive attack's conversations, and each conversation into its result.
// Found through the project's Python once per Promptfoo process. Written by `kit init`; named by
// promptfooconfig.yaml when [tool.kit.redteam] attacker is set.
"use strict";
const { execFileSync } = require("node:child_process");
const path = require("node:path");

const python = process.env.PROMPTFOO_PYTHON || ".venv/bin/python";
const where = execFileSync(python, [
  "-c",
  "import importlib.util as u; print(u.find_spec('kit_promptfoo.redteam').submodule_search_locations[0])",
])
  .toString()
  .trim();
module.exports = require(path.join(where, "conversation_assert.cjs"));
