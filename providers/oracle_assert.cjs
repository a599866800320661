// The kit's oracle assertion (kit_promptfoo/oracle_assert.cjs in the installed kit). Written by `kit init`.
"use strict";
module.exports = require("./installed_kit.cjs")("oracle_assert.cjs");
