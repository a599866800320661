#!/usr/bin/env bash
# Regenerate tests/data/import/otel_exports/ from the real instrumentation packages (needs PyPI; the test
# suite itself never does: it reads the committed exports). Each instrumentation gets its own virtual
# environment, because they patch the same OpenAI client and OpenLLMetry 0.47 needs an older SDK.
#
#   bash scripts/otel_exports/regenerate.sh [VENV_ROOT]      (default VENV_ROOT: /tmp/kit-otel)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$here/../../tests/data/import/otel_exports"
root="${1:-/tmp/kit-otel}"
mkdir -p "$out"

venv() {  # venv NAME -> the python of a virtual environment holding requirements-NAME.txt
  local dir="$root-$1"
  if [ ! -x "$dir/bin/python" ]; then
    python3 -m venv "$dir"
    "$dir/bin/pip" install -q --pre -r "$here/requirements-$1.txt"
  fi
  echo "$dir/bin/python"
}

py="$(venv genai)"
for v in genai_v2_span genai_v2_events genai_v2_nocontent; do "$py" "$here/generate.py" "$v" "$out"; done
for v in guarded buggy; do "$py" "$here/generate.py" "library_genai@$v" "$out/../library"; done
py="$(venv openinference)"
for v in openinference_openai openinference_langchain; do "$py" "$here/generate.py" "$v" "$out"; done
for v in guarded buggy; do "$py" "$here/generate.py" "library_openinference@$v" "$out/../library"; done
"$py" "$here/generate.py" library_openinference_session@guarded "$out/../library"
"$(venv traceloop-0.47)" "$here/generate.py" traceloop "$out" _0.47
"$(venv traceloop-0.62)" "$here/generate.py" traceloop "$out" _0.62
for v in guarded buggy; do "$(venv traceloop-0.62)" "$here/generate.py" "library_traceloop@$v" "$out/../library"; done
py="$(venv pydantic-ai)"
for v in 2 5 6; do "$py" "$here/generate.py" "pydantic_ai@$v" "$out"; done
for n in genai openinference traceloop-0.47 traceloop-0.62 pydantic-ai; do
  "$root-$n/bin/pip" freeze --exclude-editable > "$out/versions-$n.txt" 2>/dev/null
done
