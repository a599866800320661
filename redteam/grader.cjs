// The red team's LLM grader (kit_promptfoo/redteam/grader.cjs in the installed kit): Promptfoo's graders
// answered by the kit's one judge, found through the project's Python once per Promptfoo process.
// Written by `kit init`.
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
module.exports = require(path.join(where, "grader.cjs"));
