// The red team's LLM grader (kit_promptfoo/redteam/grader.cjs in the installed kit): Promptfoo's graders
// answered by the kit's one judge. Written by `kit init`.
"use strict";
module.exports = require("../providers/installed_kit.cjs")("redteam", "grader.cjs");
