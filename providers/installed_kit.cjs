// Where the installed kit's JavaScript lies: the package kit_promptfoo of the project's Python, asked once per
// Promptfoo process and shared by every thin .cjs file `kit init` writes. Written by `kit init`.
"use strict";
const { execFileSync } = require("node:child_process");
const path = require("node:path");

let where;

module.exports = function installedKit(...parts) {
  if (where === undefined) {
    const python = process.env.PROMPTFOO_PYTHON || ".venv/bin/python";
    const find = "import importlib.util as u; print(u.find_spec('kit_promptfoo').submodule_search_locations[0])";
    where = execFileSync(python, ["-c", find]).toString().trim();
  }
  return require(path.join(where, ...parts));
};
