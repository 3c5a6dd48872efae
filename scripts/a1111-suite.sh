#!/usr/bin/env bash
# Runs AUTOMATIC1111's own API test suite (its test/ folder, pytest + pytest-base-url) against this service in
# `start` mode with the fake ComfyUI, both on free loopback ports, and prints pytest's summary.
#
#   bash scripts/a1111-suite.sh                       # fetches A1111's test/ at the pinned commit from GitHub
#   bash scripts/a1111-suite.sh --src ~/stable-diffusion-webui   # or uses a checkout (any dir holding test/)
#   bash scripts/a1111-suite.sh --token s3cret        # service started with API_TOKEN; see below
#   bash scripts/a1111-suite.sh --token s3cret --unsent   # token not sent: passes when every test gets a 401
#   bash scripts/a1111-suite.sh -- -k img2img         # anything after -- goes to pytest
#
# Their suite is run unmodified. It has no notion of auth: with --token, a pytest plugin of ours (written into
# the work dir) adds `Authorization: Bearer <token>` to every `requests` call, so the same tests run through the
# service's API_TOKEN guard. Only the four files that talk HTTP are run; test_face_restorers.py and
# test_torch_utils.py import A1111's own Python modules and test the webui itself, not its API.
#
# Everything (their files, the venv, logs, the service's DATA_DIR) lives in A1111_SUITE_DIR, outside the project
# (default: $TMPDIR/comfy-durable-a1111-suite). Exit status: pytest's.
set -euo pipefail
cd "$(dirname "$0")/.."
project="$PWD"

# v1.8.0, its release merge commit (the version this script was first run with).
A1111_COMMIT="${A1111_COMMIT:-bef51aed032c0aaa5cfd80445bc4cf0d85b408b5}"
A1111_REPO="${A1111_REPO:-https://github.com/AUTOMATIC1111/stable-diffusion-webui}"
work="${A1111_SUITE_DIR:-${TMPDIR:-/tmp}/comfy-durable-a1111-suite}"
src=""
token=""
send_token=1
pytest_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --src) src="$2"; shift 2 ;;
    --token) token="$2"; shift 2 ;;
    --unsent) send_token=0; shift ;;
    --) shift; pytest_args=("$@"); break ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "a1111-suite: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

mkdir -p "$work"
log() { echo "a1111-suite: $*" >&2; }

# 1. Their test folder.
if [ -z "$src" ]; then
  src="$work/upstream-$A1111_COMMIT"
  if [ ! -f "$src/test/conftest.py" ]; then
    log "fetching $A1111_REPO test/ at $A1111_COMMIT"
    rm -rf "$src.git" "$src"
    git init -q --bare "$src.git"
    git --git-dir="$src.git" fetch -q --depth 1 "$A1111_REPO" "$A1111_COMMIT"
    mkdir -p "$src"
    git --git-dir="$src.git" archive "$A1111_COMMIT" test pyproject.toml | tar -x -C "$src"
    rm -rf "$src.git"
  fi
fi
[ -f "$src/test/conftest.py" ] || { log "no test/conftest.py under $src"; exit 2; }

# 2. A venv with what their requirements-test.txt asks for (pytest~=7.3, pytest-base-url~=2.0) and requests.
venv="$work/venv"
if [ ! -x "$venv/bin/pytest" ]; then
  log "creating $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check pytest==7.4.4 pytest-base-url==2.1.0 requests==2.34.2
fi

# 3. Free ports, the fake ComfyUI and the service (start mode: embedded Temporal + worker + API).
read -r fake_port api_port temporal_port < <(python3 -c '
import socket
socks = [socket.socket() for _ in range(3)]
for s in socks: s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in socks))')
run="$work/run"
rm -rf "$run"
mkdir -p "$run"
fake_pid=""
api_pid=""
stop() {
  # Each was started in its own process group (setsid), so its children (npm → tsx → node) stop with it.
  if [ -n "$api_pid" ]; then kill -TERM "$api_pid" 2>/dev/null || true; wait "$api_pid" 2>/dev/null || true; fi
  if [ -n "$fake_pid" ]; then
    kill -TERM -- "-$fake_pid" 2>/dev/null || true
    wait "$fake_pid" 2>/dev/null || true
    # npm returns before tsx's node child has closed: wait for the whole group.
    for _ in $(seq 1 50); do kill -0 -- "-$fake_pid" 2>/dev/null || break; sleep 0.2; done
  fi
}
trap stop EXIT

npm run -s setup
log "fake ComfyUI on 127.0.0.1:$fake_port, service on 127.0.0.1:$api_port (Temporal $temporal_port), logs in $run"
setsid npm run -s fake-comfyui -- --port "$fake_port" --data-dir "$run/fake" >"$run/fake.log" 2>&1 &
fake_pid=$!
env PORT="$api_port" TEMPORAL_PORT="$temporal_port" DATA_DIR="$run/data" COMFYUI_URL="http://127.0.0.1:$fake_port" \
  LOG_LEVEL="${LOG_LEVEL:-warn}" ${token:+API_TOKEN="$token"} \
  bash scripts/run.sh start >"$run/service.log" 2>&1 &
api_pid=$!
for _ in $(seq 1 120); do
  if curl -sf "http://127.0.0.1:$api_port/ready" >/dev/null && curl -sf "http://127.0.0.1:$fake_port/system_stats" >/dev/null; then
    break
  fi
  kill -0 "$api_pid" 2>/dev/null || { log "the service exited:"; tail -20 "$run/service.log" >&2; exit 1; }
  sleep 1
done
curl -sf "http://127.0.0.1:$api_port/ready" >/dev/null || { log "the service is not ready after 120 s"; tail -20 "$run/service.log" >&2; exit 1; }

# 4. Their suite, pointed at the service through pytest-base-url's own option.
plugin_args=()
if [ -n "$token" ] && [ "$send_token" = 1 ]; then
  mkdir -p "$work/plugins"
  cat >"$work/plugins/comfy_durable_token.py" <<'EOF'
# Adds the service's API token to every request the suite makes through `requests` (theirs has no auth option).
import os

import requests

_token = os.environ["COMFY_DURABLE_TOKEN"]
_request = requests.Session.request


def _with_token(self, method, url, **kwargs):
    headers = dict(kwargs.pop("headers", None) or {})
    headers.setdefault("Authorization", f"Bearer {_token}")
    return _request(self, method, url, headers=headers, **kwargs)


requests.Session.request = _with_token
EOF
  plugin_args=(-p comfy_durable_token)
fi
auth_note=""
if [ -n "$token" ]; then auth_note=" (API_TOKEN set; token $([ "$send_token" = 1 ] && echo "sent by the plugin" || echo "not sent"))"; fi
log "pytest against http://127.0.0.1:$api_port$auth_note"
if [ -n "$token" ] && [ "$send_token" = 0 ]; then pytest_args+=(--tb=line); fi
set +e
(cd "$src" && COMFY_DURABLE_TOKEN="$token" PYTHONPATH="$work/plugins${PYTHONPATH:+:$PYTHONPATH}" \
  "$venv/bin/python" -m pytest test/test_txt2img.py test/test_img2img.py test/test_extras.py test/test_utils.py \
  --base-url "http://127.0.0.1:$api_port" -p no:cacheprovider -rfE -q "${plugin_args[@]}" "${pytest_args[@]}") | tee "$run/pytest.out"
status=${PIPESTATUS[0]}
set -e
if [ -n "$token" ] && [ "$send_token" = 0 ]; then
  # Without the token every test must fail, and each on a 401 (one line per failure with --tb=line).
  failures=$(grep -cE '^/.*\.py:[0-9]+: ' "$run/pytest.out" || true)
  refused=$(grep -cE '^/.*\.py:[0-9]+: (AssertionError: )?assert 401 == 200$' "$run/pytest.out" || true)
  if [ "$failures" -gt 0 ] && [ "$failures" = "$refused" ] && ! grep -qE '[0-9]+ (passed|error)' "$run/pytest.out"; then
    log "as expected without the token: all $refused tests got 401"
    status=0
  else
    log "expected every test to get 401 without the token: $refused of $failures failures are 401s (or some passed)"
    status=1
  fi
fi
log "project $project, A1111 tests from $src; service log $run/service.log"
exit $status
