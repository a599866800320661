// The adaptive red team's keep_providers.cjs (kit_promptfoo/redteam/keep_providers.cjs in the installed kit):
// keeps each adaptive attack's strategy provider across the Python beforeAll hook. Written by `kit init`;
// named by promptfooconfig.yaml when [tool.kit.redteam] attacker is set.
"use strict";
module.exports = require("../providers/installed_kit.cjs")("redteam", "keep_providers.cjs");
