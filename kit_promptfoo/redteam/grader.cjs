// Promptfoo provider (JavaScript, inside Promptfoo's own process): the red team's LLM graders, answered by the
// kit's one judge: the `judge` of the plan document KIT_PLAN names (kit.plan: `make evals` and every front end
// that starts Promptfoo hand it over), resolved once by kit.judge.judge_config; its API key from the variable
// the document names (a secret is never written to the document). Without a plan document, the judge comes
// from the project's Python (kit.plan.current_plan), never from a second reading of the settings here.
//
// Why not the Python generator (redteam/generator.py, which forwards the same way): Promptfoo
// 0.123.1 loads the grading provider anew for every graded test, and a Python provider is a new pool of
// Python workers each time, never shut down: a process (and ~65 MB) per graded attack, hundreds per red
// team. A JavaScript provider is a module Node loads once. Same request, same answer, same errors.
"use strict";

const fs = require("node:fs");
const { execFileSync } = require("node:child_process");

const HOSTED = { openai: "https://api.openai.com/v1" };
// Promptfoo ends every red-team grader's rubric with the time it grades. Under recordings the same grading must
// ask the same request, so that line is left out of what the judge is asked (and of what is recorded).
const GRADED_AT = /\n*Current timestamp: \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z/g;

// The plan document: the file KIT_PLAN names, else the one the project's Python writes for its current plan.
// Read once per Promptfoo process (a document's file name is its content's hash: it never changes).
let cached = null;
function planDocument() {
  if (cached) return cached;
  let file = (process.env.KIT_PLAN || "").trim();
  if (!file) {
    const python = process.env.PROMPTFOO_PYTHON || ".venv/bin/python";
    const code = "from kit.plan import current_plan; print(current_plan().env()['KIT_PLAN'])";
    file = execFileSync(python, ["-c", code], { stdio: ["ignore", "pipe", "pipe"] })
      .toString()
      .trim();
  }
  cached = { file, doc: JSON.parse(fs.readFileSync(file, "utf8")) };
  return cached;
}

function judge() {
  let plan;
  try {
    plan = planDocument();
  } catch (e) {
    return { error: `red-team grading could not read the plan document: ${e && e.message ? e.message : e}` };
  }
  const j = plan.doc.judge;
  if (!j) return { error: `red-team grading needs a judge: KIT_JUDGE_MODEL is not set (the plan ${plan.file} has none)` };
  if (j.error) return { error: j.error };
  // The secret's variable, as the document names it.
  const keyVar = Object.keys(plan.doc.secrets || {}).find((v) => plan.doc.secrets[v] === "judge.api_key");
  // Under recordings, `make evals` serves the grader's calls from the kit's endpoint (the plan's node_endpoints).
  const served = (plan.doc.node_endpoints || {}).grader;
  const baseUrl = (served || j.base_url || HOSTED[j.provider] || "").replace(/\/+$/, "");
  return {
    model: j.model,
    provider: j.provider,
    baseUrl,
    apiKey: (keyVar && process.env[keyVar]) || "not-needed",
    timeoutMs: j.timeout_s * 1000,
    retries: j.retries,
    temperature: j.temperature,
    describe: `judge ${j.model} at ${baseUrl || j.provider}`,
    recorded: Boolean(served),
  };
}

// Promptfoo hands chat prompts over as a JSON list of messages; anything else is one user message.
function messages(prompt) {
  try {
    const parsed = JSON.parse(prompt);
    if (Array.isArray(parsed) && parsed.length && parsed.every((m) => m && typeof m === "object" && "role" in m)) {
      return parsed;
    }
  } catch {
    // not JSON: plain text
  }
  return [{ role: "user", content: String(prompt) }];
}

async function once(cfg, body) {
  const response = await fetch(`${cfg.baseUrl}/chat/completions`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${cfg.apiKey}` },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(cfg.timeoutMs),
  });
  const text = await response.text();
  let data = null;
  try {
    data = JSON.parse(text);
  } catch {
    data = null;
  }
  return { status: response.status, data, text };
}

function timeless(message) {
  return typeof message.content === "string" ? { ...message, content: message.content.replace(GRADED_AT, "") } : message;
}

// Promptfoo reads any provider error whose text holds "429" (or "rate limit") as a rate limit and backs off a
// minute at a time, while `metadata.rateLimitKind` decides first: "quota" fails at once. A judge's URL may hold
// 429 (port 44429) while it answers HTTP 500: only a real HTTP 429 is said to be a rate limit.
function failed(error, status) {
  return { error, metadata: { rateLimitKind: status === 429 ? "rate_limit" : "quota" } };
}

class KitJudgeGrader {
  constructor(options) {
    this.providerId = (options && options.id) || "kit-judge-grader";
  }

  id() {
    return this.providerId;
  }

  async callApi(prompt) {
    const cfg = judge();
    if (cfg.error) return failed(cfg.error);
    if (cfg.provider !== "openai-compatible" && cfg.provider !== "openai") {
      return failed(`red-team grading needs an OpenAI-compatible judge; ${cfg.describe} is ${cfg.provider}`);
    }
    const asked = cfg.recorded ? messages(prompt).map(timeless) : messages(prompt);
    const body = { model: cfg.model, messages: asked, temperature: cfg.temperature };
    let last = "";
    let status = null;
    for (let attempt = 0; attempt <= cfg.retries; attempt++) {
      let got;
      try {
        got = await once(cfg, body);
      } catch (e) {
        last = `${cfg.describe} is unreachable: ${e && e.cause ? e.cause.message || e.cause : e}`;
        status = null;
        continue;
      }
      status = got.status;
      if (got.status >= 200 && got.status < 300) {
        const choice = got.data && Array.isArray(got.data.choices) ? got.data.choices[0] : null;
        const content = choice && choice.message ? choice.message.content : null;
        if (typeof content !== "string") return failed(`${cfg.describe} returned no message content`);
        const usage = (got.data && got.data.usage) || {};
        return {
          output: content,
          tokenUsage: { prompt: usage.prompt_tokens, completion: usage.completion_tokens, total: usage.total_tokens },
        };
      }
      const message = (got.data && got.data.error && got.data.error.message) || got.text.slice(0, 200);
      last = `${cfg.describe} refused the call: HTTP ${got.status}: ${message}`;
      if (got.status === 429) last += " (rate limited)";
      if (got.status < 500 && got.status !== 429) break; // a 4xx will not change on a retry
    }
    return failed(last, status);
  }
}

module.exports = KitJudgeGrader;
module.exports.failed = failed;
