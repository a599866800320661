// Promptfoo provider (JavaScript, inside Promptfoo's own process): the red team's LLM graders, answered by the
// kit's one judge (KIT_JUDGE_MODEL at KIT_JUDGE_BASE_URL, the variables `make evals` exports from the settings).
//
// Why not the Python generator (redteam/generator.py, which forwards the same way): Promptfoo
// 0.123.1 loads the grading provider anew for every graded test, and a Python provider is a new pool of
// Python workers each time, never shut down: a process (and ~65 MB) per graded attack, hundreds per red
// team. A JavaScript provider is a module Node loads once. Same request, same answer, same errors.
"use strict";

const HOSTED = { openai: "https://api.openai.com/v1" };

function judge() {
  const env = process.env;
  const model = env.KIT_JUDGE_MODEL || "";
  const provider = (env.KIT_JUDGE_PROVIDER || "").toLowerCase() || (env.KIT_JUDGE_BASE_URL ? "openai-compatible" : "openai");
  const baseUrl = (env.KIT_JUDGE_BASE_URL || HOSTED[provider] || "").replace(/\/+$/, "");
  const timeoutS = Number(env.KIT_JUDGE_TIMEOUT || 60);
  const retries = Number.parseInt(env.KIT_JUDGE_RETRIES || "1", 10);
  const temperature = Number(env.KIT_JUDGE_TEMPERATURE || 0);
  return {
    model,
    provider,
    baseUrl,
    apiKey: env.KIT_JUDGE_API_KEY || "not-needed",
    timeoutMs: (Number.isFinite(timeoutS) && timeoutS > 0 ? timeoutS : 60) * 1000,
    retries: Number.isInteger(retries) && retries >= 0 ? Math.min(retries, 10) : 1,
    temperature: Number.isFinite(temperature) ? temperature : 0,
    describe: `judge ${model} at ${baseUrl || provider}`,
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

class KitJudgeGrader {
  constructor(options) {
    this.providerId = (options && options.id) || "kit-judge-grader";
  }

  id() {
    return this.providerId;
  }

  async callApi(prompt) {
    const cfg = judge();
    if (!cfg.model) return { error: "red-team grading needs a judge: KIT_JUDGE_MODEL is not set" };
    if (cfg.provider !== "openai-compatible" && cfg.provider !== "openai") {
      return { error: `red-team grading needs an OpenAI-compatible judge; ${cfg.describe} is ${cfg.provider}` };
    }
    const body = { model: cfg.model, messages: messages(prompt), temperature: cfg.temperature };
    let last = "";
    for (let attempt = 0; attempt <= cfg.retries; attempt++) {
      let got;
      try {
        got = await once(cfg, body);
      } catch (e) {
        last = `${cfg.describe} is unreachable: ${e && e.cause ? e.cause.message || e.cause : e}`;
        continue;
      }
      if (got.status >= 200 && got.status < 300) {
        const choice = got.data && Array.isArray(got.data.choices) ? got.data.choices[0] : null;
        const content = choice && choice.message ? choice.message.content : null;
        if (typeof content !== "string") return { error: `${cfg.describe} returned no message content` };
        const usage = (got.data && got.data.usage) || {};
        return {
          output: content,
          tokenUsage: { prompt: usage.prompt_tokens, completion: usage.completion_tokens, total: usage.total_tokens },
        };
      }
      const message = (got.data && got.data.error && got.data.error.message) || got.text.slice(0, 200);
      last = `${cfg.describe} refused the call: HTTP ${got.status}: ${message}`;
      if (got.status < 500 && got.status !== 429) break; // a 4xx will not change on a retry
    }
    return { error: last };
  }
}

module.exports = KitJudgeGrader;
