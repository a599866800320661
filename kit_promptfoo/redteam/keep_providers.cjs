// Promptfoo extension (JavaScript, inside Promptfoo): keeps each test's strategy provider across the red team's
// Python beforeAll hook (hooks.py).
//
// An adaptive attack's test carries its strategy as a live provider object (`promptfoo:redteam:crescendo`,
// `jailbreak:tree`). A Python hook gets the suite as JSON and hands it back as JSON: the object comes back as
// its plain fields (`{label, config}`), and Promptfoo then sends the attack straight to the target, as one
// turn, with no attacker at all. So the config lists `stash` before the Python hook and `restore` after it:
// `stash` tags each test that has a provider and keeps the object; `restore` puts it back on the test that
// carries the tag. A tag with no kept provider is an error, never an attack run without its strategy.
"use strict";

const kept = new Map();
const TAG = "kitProviderKey";

function isProvider(p) {
  return p && typeof p === "object" && typeof p.callApi === "function";
}

function stash(hookName, context) {
  if (hookName !== "beforeAll" || !context || !context.suite) return context;
  kept.clear();
  (context.suite.tests || []).forEach((test, i) => {
    if (test && isProvider(test.provider)) {
      const key = `t${i}`;
      kept.set(key, test.provider);
      test.metadata = { ...(test.metadata || {}), [TAG]: key };
    }
  });
  return context;
}

function restore(hookName, context) {
  if (hookName !== "beforeAll" || !context || !context.suite) return context;
  for (const test of context.suite.tests || []) {
    const key = test && test.metadata && test.metadata[TAG];
    if (!key) continue;
    const provider = kept.get(key);
    if (!provider) throw new Error(`kit red team: test ${key} lost its strategy provider in the beforeAll hooks`);
    test.provider = provider;
  }
  kept.clear();
  return context;
}

module.exports = { stash, restore };
