// Promptfoo JavaScript assertion: the kit's oracle decides, one component per check.
//
// The same answer as oracle_assert.py, without a process per test. Promptfoo starts a new Python
// process for every Python assertion (about 60 ms of CPU each, 410 of them in a red team); a JavaScript
// assertion runs inside Promptfoo. The oracle itself already ran in the provider's warm Python worker
// (agent_provider.py), which put its verdict and a seal over (case, trace, verdict) in `metadata.kit`.
// Here the seal is recomputed exactly as kit_promptfoo/digest.py computes it, and the verdict is turned
// into Promptfoo's GradingResult exactly as oracle_assert.grading_result does (tests/unit compares both).
// When the seal does not match, there is no verdict, or KIT_PROMPTFOO_RECHECK=1, the Python assertion
// runs instead (the oracle on the trace, in a fresh process): slower, same answer.
"use strict";

const crypto = require("node:crypto");
const { execFile } = require("node:child_process");

// Python's repr() of a float that is not an integer (json.dumps writes floats with repr).
function pyFloat(x) {
  if (!Number.isFinite(x)) return x > 0 ? "Infinity" : x < 0 ? "-Infinity" : "NaN";
  const [mant, expText] = Math.abs(x).toExponential().split("e");
  const exp = Number.parseInt(expText, 10);
  const digits = mant.replace(".", "");
  const sign = x < 0 ? "-" : "";
  if (exp >= -4 && exp < 16) {
    if (exp < 0) return `${sign}0.${"0".repeat(-exp - 1)}${digits}`;
    const whole = digits.slice(0, exp + 1).padEnd(exp + 1, "0");
    return `${sign}${whole}.${digits.slice(exp + 1) || "0"}`;
  }
  const m = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
  return `${sign}${m}e${exp < 0 ? "-" : "+"}${String(Math.abs(exp)).padStart(2, "0")}`;
}

// json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False) of digest._canonical(value).
function pyJson(value) {
  if (value === null || value === undefined) return "null";
  if (typeof value === "boolean") return value ? "true" : "false";
  if (typeof value === "number") return Number.isInteger(value) ? JSON.stringify(value) : pyFloat(value);
  if (typeof value === "string") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(pyJson).join(",")}]`;
  const keys = Object.keys(value).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${pyJson(value[k])}`).join(",")}}`;
}

function seal(caseId, trace, verdict) {
  return crypto.createHash("sha256").update(pyJson([caseId, trace, verdict]), "utf8").digest("hex").slice(0, 16);
}

function metadataOf(context) {
  for (const meta of [context.metadata, (context.providerResponse || {}).metadata]) {
    if (meta && typeof meta === "object" && meta.trace && typeof meta.trace === "object") return meta;
  }
  return null;
}

function caseRef(context, kit) {
  const config = context.config || {};
  const vars = context.vars || {};
  return [vars.case_file || config.case_file || kit.case_file, vars.case_id || config.case_id || kit.case_id];
}

function gradingResult(verdict, notGraded) {
  const checks = verdict.checks || [];
  const components = checks.map((c) => ({
    pass: c.outcome === "pass",
    score: c.outcome === "pass" ? 1.0 : 0.0,
    reason: `[${c.outcome.toUpperCase()}] ${c.check}` + (c.reason ? `: ${c.reason}` : ""),
    // No `metric` here: Promptfoo renders every component's metric as a template for every named score of
    // every row (checks x checks template compiles per test). `namedScores` below names the checks.
    assertion: { type: "python", value: `kit:${c.check}` },
  }));
  const failed = checks.filter((c) => c.outcome !== "pass");
  let reason;
  if (verdict.error) reason = `infrastructure error: ${verdict.error}`;
  else if (!checks.length) reason = "the case has no checks: nothing was verified";
  else if (failed.length) reason = failed.map((c) => `${c.check} ${c.outcome}: ${c.reason || ""}`.trim()).join("; ");
  else reason = `all ${checks.length} checks passed`;
  if (notGraded.length) reason += ` | not graded (no judge model configured): ${notGraded.join(", ")}`;
  const namedScores = {};
  for (const c of checks) namedScores[c.check] = c.outcome === "pass" ? 1.0 : 0.0;
  return {
    pass: checks.length > 0 && !failed.length && !verdict.error,
    score: checks.length ? (checks.length - failed.length) / checks.length : 0.0,
    reason,
    componentResults: components,
    namedScores,
  };
}

// The slow path: oracle_assert.py's get_assert in a fresh Python process (the project's Python).
function pythonAssert(output, context) {
  const python = process.env.PROMPTFOO_PYTHON || "python3";
  const code =
    "import json, sys\n" +
    "from kit_promptfoo.oracle_assert import get_assert\n" +
    "output, context = json.load(sys.stdin)\n" +
    "print(json.dumps(get_assert(output, context)))\n";
  return new Promise((resolve) => {
    const child = execFile(python, ["-c", code], { maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      if (err) {
        resolve({ pass: false, score: 0, reason: `kit oracle (${python}): ${String(stderr || err).trim().slice(-500)}` });
        return;
      }
      try {
        resolve(JSON.parse(stdout.trim().split("\n").pop()));
      } catch (e) {
        resolve({ pass: false, score: 0, reason: `kit oracle: unreadable answer: ${e}` });
      }
    });
    // Only the plain data the Python assertion reads (the provider object does not serialise).
    const { prompt, vars, test, config, metadata, providerResponse } = context;
    child.stdin.end(JSON.stringify([output, { prompt, vars, test, config, metadata, providerResponse }]));
  });
}

async function get_assert(output, context) {
  context = context || {};
  const meta = metadataOf(context);
  const kit = (meta && meta.kit && typeof meta.kit === "object" && meta.kit) || {};
  const [caseFile, caseId] = caseRef(context, kit);
  const notGraded = [...(((context.test || {}).metadata || {}).kitNotGraded || [])];
  if (!meta) return { pass: false, score: 0, reason: "no trace in the provider's metadata (is the provider providers/agent_provider.py?)" };
  if (!caseFile || !caseId) {
    return { pass: false, score: 0, reason: "no case to judge by: set case_file and case_id in the test's vars or the assertion's config" };
  }
  const usable =
    process.env.KIT_PROMPTFOO_RECHECK !== "1" &&
    kit.verdict &&
    kit.verdict.case_id === caseId &&
    kit.seal === seal(caseId, meta.trace, kit.verdict);
  if (!usable) return pythonAssert(output, context);
  const result = gradingResult(kit.verdict, notGraded);
  result.reason += " [oracle ran in the provider worker]";
  return result;
}

module.exports = { get_assert, gradingResult, seal, pyJson };
