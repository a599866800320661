# Set-up and entry points. `make test` and `make evals` work on a fresh machine: they install what they need.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
NPM_STAMP := node_modules/.installed

# Nothing leaves the machine: the pipeline and the Promptfoo launcher set the offline environment
# (kit/offline.py); .env holds the same for the tools typed by hand.
export PYTHONDONTWRITEBYTECODE := 1

.PHONY: install packages test test-fast lint evals clean

install: $(STAMP)

# The Python and the Node packages, side by side on a fresh machine (pip and npm each leave a core mostly
# idle); nothing to do, and nothing said, once both are installed. Then the checkout's own modules are
# byte-compiled (a no-op when done): the editable install leaves them as source, and with bytecode writing
# off (above) every Python process of a run would compile them again.
packages:
	@$(MAKE) -q $(STAMP) $(NPM_STAMP) 2>/dev/null || $(MAKE) --no-print-directory -j2 --output-sync=target $(STAMP) $(NPM_STAMP)
	@$(PY) -m compileall -q kit kit_promptfoo deepeval_metrics providers redteam tests > /dev/null

# pip byte-compiles what it installs on one core, most of its time; compileall does the same on every core (-j0)
# once pip is done, while npm may still be installing beside it.
# The Anthropic SDK for the tests' Anthropic desks goes in a folder only the test workers put on sys.path
# (tests/conftest.py): DeepEval imports it at start-up wherever it is importable (3,349 modules, ~3.5 CPU-s a
# process), and `make test` starts some twenty DeepEval processes. Its dependencies are the venv's (openai's).
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --no-compile -e '.[dev]'
	$(PY) -m pip install --quiet --no-compile --no-deps --target $(VENV)/anthropic-sdk 'anthropic>=0.40'
	$(PY) -m compileall -q -j0 $(VENV)/anthropic-sdk > /dev/null
	$(PY) -m compileall -q -j0 "$$($(PY) -c 'import sysconfig; print(sysconfig.get_path("purelib"))')" > /dev/null
	touch $@

test: packages
	$(PY) -m pytest -q -n 2

# The unit tests only (seconds): no subprocess, no Promptfoo, no DeepEval run.
test-fast: $(STAMP)
	$(PY) -m pytest -q -n 2 -m "not e2e"

lint: packages
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/kit lint golden
	$(VENV)/bin/actionlint .github/workflows/*.yml

# The whole gate: kit runner, DeepEval, Promptfoo eval and red team into one store; one summary, HTML report,
# JUnit XML and the gate's verdict. VARIANT=<fault> runs a fault variant of the reference agent (it must fail).
# AGENT=module:callable puts your own agent in every stage; CASES=path another case file or folder; unset,
# they come from [tool.kit] in pyproject.toml or the KIT_* variables (kit/settings.py).
# EVALS_OUT=dir: where the summary, reports and logs go (default .kit). SHARDS=dir: a folder of CI shards to
# merge instead of running the kit's runner; BASELINE_STORE=file: the base branch's store to compare with.
# Each is checked before anything runs (exit 2 naming it); a lint problem in the cases stops the build too.
VARIANT ?=
AGENT ?=
CASES ?=
SHARDS ?=
BASELINE_STORE ?=
EVALS_OUT ?=
CONCURRENCY ?=
# The variables reach the pipeline in the environment, never through the shell: a value with a space, a
# quote or a `;` in it is one argument, exactly as typed. Every target that runs a stage takes them alike
# (`make deepeval-evals VARIANT=double_refund` runs the faulted agent, as `make evals` does).
STAGE_TARGETS := evals promptfoo-eval deepeval-evals promptfoo-redteam
$(STAGE_TARGETS): export KIT_MAKE_AGENT = $(value AGENT)
$(STAGE_TARGETS): export KIT_MAKE_VARIANT = $(value VARIANT)
$(STAGE_TARGETS): export KIT_MAKE_CASES = $(value CASES)
$(STAGE_TARGETS): export KIT_MAKE_SHARDS = $(value SHARDS)
$(STAGE_TARGETS): export KIT_MAKE_BASELINE_STORE = $(value BASELINE_STORE)
$(STAGE_TARGETS): export KIT_MAKE_EVALS_OUT = $(value EVALS_OUT)
$(STAGE_TARGETS): export KIT_MAKE_CONCURRENCY = $(value CONCURRENCY)
evals: packages
	$(PY) -m kit.pipeline --from-make

# Everything the project's commands make (what .gitignore lists), never the user's own .env.local.
clean:
	rm -rf $(VENV) node_modules .kit .promptfoo redteam/redteam.yaml redteam.yaml .venv-frameworks .deepeval \
		.hypothesis .pytest_cache .ruff_cache .import_linter_cache build dist *.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +

# --- Promptfoo: Node 22 and the Promptfoo CLI from the committed lock file. ---
# The targets below run one tool on its own; `make evals` runs the same commands (kit/pipeline/stages.py).

.PHONY: promptfoo-install
promptfoo-install: $(NPM_STAMP)

$(NPM_STAMP): package.json package-lock.json .npmrc
	npm ci --loglevel=error
	touch $@


.PHONY: promptfoo-config promptfoo-eval
promptfoo-config: $(STAMP)
	$(PY) -m kit_promptfoo.genconfig

# One stage of `make evals` on its own (the same function, the same store, no second ingest); the agent is
# called live, as no kit stage ran before it.
promptfoo-eval: export KIT_MAKE_ONLY = promptfoo
promptfoo-eval: packages
	$(PY) -m kit.pipeline --from-make

# --- Reference agent: regenerate golden/tools.json and re-record the golden cassettes. ---
.PHONY: agent-tools agent-cassettes
agent-tools: $(STAMP)
	$(PY) -m kit.agent.tools_json

agent-cassettes: $(STAMP) agent-tools
	$(PY) -m kit.agent.record

# --- DeepEval: the golden suite through `deepeval test run`, oracle checks as hard gates and
# G-Eval rubrics as soft gates, results in the store (source deepeval). The variables must be set before
# DeepEval starts: it reads .env and builds its telemetry client at import, before tests/evals loads.
# VARIANT=<fault> selects a fault variant (as for `make evals`); KIT_JUDGE_MODEL/KIT_JUDGE_BASE_URL configure the judge.
.PHONY: deepeval-evals
deepeval-evals: export KIT_MAKE_ONLY = deepeval
deepeval-evals: $(STAMP)
	$(PY) -m kit.pipeline --from-make

# --- Store: speed figures of the store (insert, report query, concurrent writers). ---
.PHONY: bench-store
bench-store: $(STAMP)
	$(PY) bench/store.py

# The offline red team: attacks from redteam/attacks.yaml, static strategies, the oracle as hard gates
# (`make evals`' redteam stage on its own; the verdict step checks the vulnerable control target fails).
.PHONY: promptfoo-redteam
promptfoo-redteam: export KIT_MAKE_ONLY = redteam
promptfoo-redteam: packages
	$(PY) -m kit.pipeline --from-make

# --- Each framework's desk live through every front end (kit run, deepeval test run, npx promptfoo eval,
# kit import + kit check), one venv per framework under .venv-frameworks/ (made on first use, pip's cache in
# /tmp). By hand, never in `make test`: minutes per framework. FRAMEWORK=smolagents (or several, spaced) for
# some; tests/frameworks/README.md says what it checks and what it measured.
FRAMEWORK ?=
.PHONY: frameworks-live
frameworks-live: packages
	$(PY) tests/frameworks/live.py $(FRAMEWORK)
