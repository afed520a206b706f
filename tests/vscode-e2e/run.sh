#!/usr/bin/env bash
# End-to-end tests of the TPU Lint extension in real VS Code: code-server 4.100.3 (VS Code 1.100.3
# workbench + Node extension host) driven by playwright-core and Debian's chromium.
#
#   1. extension-host tests (the `extensionTestsPath` contract) against the unpacked VSIX;
#   2. a UI test in the workbench: Problems panel, quick fix with the keyboard, Fix All, Check TPU
#      Environment; it saves docs/images/vscode-*.png;
#   3. the web extension (the manifest's `browser` entry, the wasm server in a worker) in the web
#      worker extension host: Problems panel, quick fix, Fix All, hover, a notebook.
#
# usage: run.sh VSIX   (setup.sh must have run; test-all.sh does both)
# env:   TPULINT_E2E_TOOLS (default .ci-cache/vscode-e2e), TPULINT_E2E_KEEP=1 keeps the temp dir,
#        TPULINT_E2E_ONLY=ext|ui runs one phase (for debugging).
set -euo pipefail
shopt -s lastpipe
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
vsix=$(realpath "${1:?usage: run.sh VSIX}")
tools=${TPULINT_E2E_TOOLS:-$root/.ci-cache/vscode-e2e}
code_server="$tools/node_modules/.bin/code-server"
vsce="$root/node_modules/.bin/vsce"
[[ -x "$code_server" ]] || { echo "code-server missing: run tests/vscode-e2e/setup.sh" >&2; exit 2; }
# The extension-host suite is compiled from extension/test/e2e (the VSIX does not carry tests).
( cd "$root" && npm run --silent build:tests )

run=$(mktemp -d /tmp/tpulint-vscode-e2e.XXXXXX)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export XDG_CONFIG_HOME="$run/xdg" XDG_DATA_HOME="$run/xdg-data"   # keep ~/.config and ~/.local untouched
mkdir -p "$run/user/User"
cat > "$run/user/User/settings.json" <<'JSON'
{ "workbench.startupEditor": "none", "security.workspace.trust.enabled": false, "telemetry.telemetryLevel": "off",
  "update.mode": "none", "extensions.autoCheckUpdates": false, "extensions.autoUpdate": false,
  "workbench.enableExperiments": false, "workbench.tips.enabled": false, "chat.disableAIFeatures": true,
  "workbench.welcomePage.walkthroughs.openOnInstall": false, "git.enabled": false,
  "window.restoreWindows": "none", "files.hotExit": "off" }
JSON
printf 'bind-addr: 127.0.0.1:%s\nauth: none\ncert: false\n' "$port" > "$run/config.yaml"
common=(--config "$run/config.yaml" --user-data-dir "$run/user" --extensions-dir "$run/extensions")

# One copy of the fixture workspace per test phase (the tests edit files), each with a tiny venv
# as the "fake interpreter" the environment check inspects: real Python, no torch.
for phase in ext ui; do
  cp -r "$here/workspace" "$run/ws-$phase"
  python3 -m venv --without-pip "$run/ws-$phase/.venv"
done

# The unpacked VSIX is the extension under test in phase 1, so both phases test what ships.
mkdir -p "$run/unpacked"
python3 - "$vsix" "$run/unpacked" <<'PY'
import os, sys, zipfile
# Like VS Code's installer, keep each entry's unix mode (the server binary must stay executable).
with zipfile.ZipFile(sys.argv[1]) as vsix:
    for entry in vsix.infolist():
        path = vsix.extract(entry, sys.argv[2])
        mode = entry.external_attr >> 16
        if mode:
            os.chmod(path, mode & 0o777)
PY
( cd "$here/fake-python-extension" &&
  "$vsce" package --allow-missing-repository --skip-license --no-dependencies -o "$run/fake-python.vsix" >/dev/null )
"$code_server" "${common[@]}" --install-extension "$vsix" >/dev/null
"$code_server" "${common[@]}" --install-extension "$run/fake-python.vsix" >/dev/null

# setsid: code-server gets a process group of its own, killed as a whole at the end (it keeps
# extension hosts and language servers alive long after the browser leaves).
setsid "$code_server" "${common[@]}" --disable-telemetry --disable-update-check --disable-workspace-trust \
  --disable-getting-started-override "$run/ws-ui" > "$run/code-server.log" 2>&1 &
cs_pid=$!
web_pid=
cleanup() {
  kill -- "-$cs_pid" 2>/dev/null || true
  wait "$cs_pid" 2>/dev/null || true
  if [[ -n "$web_pid" ]]; then kill -- "-$web_pid" 2>/dev/null || true; wait "$web_pid" 2>/dev/null || true; fi
  if [[ "${TPULINT_E2E_KEEP:-0}" == 1 ]]; then echo "kept $run"; else rm -rf "$run"; fi
}
trap cleanup EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.2; done

export NODE_PATH="$tools/node_modules"
passed=0 failed=0
only=${TPULINT_E2E_ONLY:-}
if [[ "$only" == ui || "$only" == web ]]; then :
elif node "$here/cs-ext-tests.js" "127.0.0.1:$port" "$run/unpacked/extension" "$root/extension/out/test/e2e/index.js" "$run/ws-ext" | tee "$run/ext.out"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "extension-host tests FAILED"
fi
if [[ "$only" == ext || "$only" == web ]]; then :
elif SCREENSHOTS="$root/docs/images" FAILSHOT="$run/failure.png" node "$here/cs-ui.js" "http://127.0.0.1:$port/?folder=$run/ws-ui" | tee "$run/ui.out"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "UI test FAILED (screenshot of the failure: $run/failure.png)"
  TPULINT_E2E_KEEP=1
fi
# 3. The web extension in the web worker extension host: a second code-server whose copy of the
# extension has no `main` entry and no server binary, so only the `browser` entry (the wasm
# language server in a worker) can run it.
if [[ -z "$only" || "$only" == web ]]; then
  cp -r "$run/unpacked" "$run/web-unpacked"
  python3 - "$run/web-unpacked" "$run/tpulint-web.vsix" <<'PY'
import json, os, pathlib, sys, zipfile
root, out = pathlib.Path(sys.argv[1]), sys.argv[2]
manifest_path = root / "extension" / "package.json"
manifest = json.loads(manifest_path.read_text())
manifest.pop("main")
manifest_path.write_text(json.dumps(manifest, indent=2))
(root / "extension" / "extension" / "bin" / "tpulint").unlink()
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as vsix:
    for path in sorted(root.rglob("*")):
        if path.is_file():
            vsix.write(path, path.relative_to(root).as_posix())
PY
  cp -r "$here/workspace" "$run/ws-web"
  web_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  mkdir -p "$run/web-user/User"
  cp "$run/user/User/settings.json" "$run/web-user/User/settings.json"
  printf 'bind-addr: 127.0.0.1:%s\nauth: none\ncert: false\n' "$web_port" > "$run/web-config.yaml"
  web_common=(--config "$run/web-config.yaml" --user-data-dir "$run/web-user" --extensions-dir "$run/web-extensions")
  "$code_server" "${web_common[@]}" --install-extension "$run/tpulint-web.vsix" >/dev/null
  setsid "$code_server" "${web_common[@]}" --disable-telemetry --disable-update-check --disable-workspace-trust \
    --disable-getting-started-override "$run/ws-web" > "$run/code-server-web.log" 2>&1 &
  web_pid=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$web_port/healthz" >/dev/null && break; sleep 0.2; done
  if FAILSHOT="$run/failure-web.png" node "$here/cs-web.js" "http://127.0.0.1:$web_port/?folder=$run/ws-web" | tee "$run/web.out"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1)); echo "web worker test FAILED (screenshot of the failure: $run/failure-web.png)"
    echo "--- code-server (web) log (tail) ---"; tail -40 "$run/code-server-web.log"
    TPULINT_E2E_KEEP=1
  fi
fi
if ((failed)); then
  echo "--- code-server log (tail) ---"; tail -40 "$run/code-server.log"
  TPULINT_E2E_KEEP=1
fi
# Parts skipped because the server under test lacks a feature are counted, never hidden.
skipped=$(cat "$run/ext.out" "$run/ui.out" "$run/web.out" 2>/dev/null | grep -c 'SKIP' || true)
echo "vscode-e2e: $passed passed, $failed failed, $skipped skipped"
exit $((failed > 0))
