// The adaptive red team's conversation_assert.cjs (kit_promptfoo/redteam/conversation_assert.cjs in the
// installed kit): the oracle's verdict on an adaptive attack's conversations, and each conversation into its
// result. Written by `kit init`; named by promptfooconfig.yaml when [tool.kit.redteam] attacker is set.
"use strict";
module.exports = require("../providers/installed_kit.cjs")("redteam", "conversation_assert.cjs");
