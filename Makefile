# Set-up and entry points. `make test` and `make evals` work on a fresh machine: they install what they need.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
NPM_STAMP := node_modules/.installed

# Nothing leaves the machine: telemetry off for DeepEval and Promptfoo in every target.
export DEEPEVAL_TELEMETRY_OPT_OUT := 1
export DEEPEVAL_UPDATE_WARNING_OPT_IN := 0
export PYTHONDONTWRITEBYTECODE := 1

.PHONY: install test test-fast lint evals clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

test: $(STAMP) $(NPM_STAMP)
	$(PY) -m pytest -q -n 2

# The unit tests only (seconds): no subprocess, no Promptfoo, no DeepEval run.
test-fast: $(STAMP)
	$(PY) -m pytest -q -n 2 -m "not e2e"

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/kit lint golden
	$(VENV)/bin/actionlint .github/workflows/*.yml

# The whole gate: kit runner, DeepEval, Promptfoo eval and red team into one store; one summary, HTML report,
# JUnit XML and the gate's verdict. VARIANT=<fault> runs a fault variant of the reference agent (it must fail).
# AGENT=module:callable puts your own agent in every stage; CASES=path another case file or folder; unset,
# they come from [tool.kit] in pyproject.toml or the KIT_* variables (kit/settings.py).
# EVALS_OUT=dir: where the summary, reports and logs go (default .kit).
VARIANT ?=
AGENT ?=
CASES ?=
SHARDS ?=
BASELINE_STORE ?=
EVALS_OUT ?=
evals: $(STAMP) $(NPM_STAMP)
	$(PY) -m kit.pipeline $(if $(VARIANT),--variant $(VARIANT)) $(if $(AGENT),--agent $(AGENT)) \
	  $(if $(CASES),--cases $(CASES)) $(if $(SHARDS),--shards $(SHARDS)) \
	  $(if $(BASELINE_STORE),--baseline-store $(BASELINE_STORE)) $(if $(EVALS_OUT),--out $(EVALS_OUT))

clean:
	rm -rf $(VENV) node_modules .kit .promptfoo redteam/redteam.yaml

# --- Promptfoo: Node 22 and the Promptfoo CLI from the committed lock file. ---
# The targets below run one tool on its own; `make evals` runs the same commands (kit/pipeline/stages.py).

.PHONY: promptfoo-install
promptfoo-install: $(NPM_STAMP)

$(NPM_STAMP): package.json package-lock.json .npmrc
	npm ci --loglevel=error
	touch $@

PROMPTFOO := $(PY) providers/run_promptfoo.py
PF_OUT    := .promptfoo/out

.PHONY: promptfoo-config promptfoo-eval
promptfoo-config: $(STAMP)
	$(PY) -m kit_promptfoo.genconfig

# The golden eval; results go into the store (source promptfoo) whether or not the eval passed.
promptfoo-eval: $(STAMP) $(NPM_STAMP)
	@mkdir -p $(PF_OUT)
	$(PY) -m kit_promptfoo.genconfig --check
	$(PROMPTFOO) eval -c promptfooconfig.yaml --no-progress-bar --no-table -o $(PF_OUT)/golden.json; \
	  status=$$?; $(VENV)/bin/kit ingest promptfoo --force $(PF_OUT)/golden.json || status=2; exit $$status

# --- Reference agent: regenerate golden/tools.json and re-record the golden cassettes. ---
.PHONY: agent-tools agent-cassettes
agent-tools: $(STAMP)
	$(PY) -m kit.agent.tools_json

agent-cassettes: $(STAMP) agent-tools
	$(PY) -m kit.agent.record

# --- DeepEval: the golden suite through `deepeval test run`, oracle checks as hard gates and
# G-Eval rubrics as soft gates, results in the store (source deepeval). The variables must be set before
# DeepEval starts: it reads .env and builds its telemetry client at import, before tests/evals loads.
# KIT_VARIANT=<fault> selects a fault variant; KIT_JUDGE_MODEL/KIT_JUDGE_BASE_URL configure the judge.
.PHONY: deepeval-evals
deepeval-evals: $(STAMP)
	DEEPEVAL_DISABLE_DOTENV=1 DEEPEVAL_TELEMETRY_OPT_OUT=1 CONFIDENT_API_KEY=$${KIT_DEEPEVAL_UPLOAD:+$$CONFIDENT_API_KEY} \
	  $(VENV)/bin/deepeval test run tests/evals -d failing $(DEEPEVAL_ARGS)

# --- Store: speed figures of the store (insert, report query, concurrent writers). ---
.PHONY: bench-store
bench-store: $(STAMP)
	$(PY) bench/store.py

# The offline red team: attacks from redteam/attacks.yaml, static strategies, the oracle as hard gates.
# Promptfoo exits 100 when some attacks succeed, as they must against the vulnerable target: the verdict
# (redteam/verdict.py) decides instead - the default agent resists all, the vulnerable one does not.
.PHONY: promptfoo-redteam
promptfoo-redteam: $(STAMP) $(NPM_STAMP)
	@mkdir -p $(PF_OUT)
	$(PROMPTFOO) redteam run -c redteam/promptfooconfig.yaml --force --no-progress-bar; \
	  status=$$?; [ $$status -eq 0 ] || [ $$status -eq 100 ] || exit $$status
	$(PROMPTFOO) export eval latest -o $(PF_OUT)/redteam.json
	$(VENV)/bin/kit ingest promptfoo --force $(PF_OUT)/redteam.json
	$(PY) redteam/verdict.py $(PF_OUT)/redteam.json
