// The kit's oracle assertion (kit_promptfoo/oracle_assert.cjs in the installed kit), found through the
// project's Python once per Promptfoo process. Written by `kit init`.
"use strict";
const { execFileSync } = require("node:child_process");
const path = require("node:path");

const python = process.env.PROMPTFOO_PYTHON || ".venv/bin/python";
const where = execFileSync(python, [
  "-c",
  "import importlib.util as u; print(u.find_spec('kit_promptfoo').submodule_search_locations[0])",
])
  .toString()
  .trim();
module.exports = require(path.join(where, "oracle_assert.cjs"));
