#!/usr/bin/env bash
# Installs what the VS Code end-to-end tests need, idempotently, from the npm and Debian registries only:
# code-server (a real VS Code 1.100.3 workbench with a Node extension host) and playwright-core to
# drive Debian's chromium. Usage: setup.sh [DEST] (default .ci-cache/vscode-e2e).
#
# The install compiles native modules (node-pty, kerberos, ...) and takes 3-10 minutes on 2 cores,
# so by default it lives in a machine-wide cache (TPULINT_TOOLS_CACHE, default ~/.cache/tpulint-ci)
# that .ci-cache/vscode-e2e links to: fresh clones on the same machine (CI) reuse it, and a fresh
# machine installs it once. A stamp file makes a second run a no-op.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
# 4.100.3 is the newest code-server whose engines.node is 20 (the machine's Node).
CS_VERSION=4.100.3
if [[ -n "${1:-}" ]]; then
  DEST=$1
else
  DEST="${TPULINT_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tpulint-ci}/code-server-$CS_VERSION"
  mkdir -p "$root/.ci-cache" "$DEST"
  if [[ "$(readlink "$root/.ci-cache/vscode-e2e" 2>/dev/null)" != "$DEST" ]]; then
    rm -rf "$root/.ci-cache/vscode-e2e"
    ln -s "$DEST" "$root/.ci-cache/vscode-e2e"
  fi
fi
STAMP="$DEST/.installed-$CS_VERSION"
need_apt=()
for tool in chromium rg; do command -v "$tool" >/dev/null || need_apt+=("$tool"); done
# Colour emoji for the environment report's headings in screenshots (a desktop has them already).
dpkg -s fonts-noto-color-emoji >/dev/null 2>&1 || need_apt+=(fonts-noto-color-emoji)
dpkg -s libkrb5-dev >/dev/null 2>&1 || need_apt+=(libkrb5-dev)
if ((${#need_apt[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  # apt's package lists may be missing or stale on a fresh machine.
  apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null
  apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends \
    chromium ripgrep libkrb5-dev pkg-config build-essential python3 fonts-noto-color-emoji >/dev/null
fi
if [[ -f "$STAMP" && -x "$DEST/node_modules/.bin/code-server" ]]; then
  exit 0
fi
# @vscode/ripgrep's postinstall downloads rg from GitHub, which is unreachable here; it first looks in
# its download cache, so seed that cache with Debian's rg. The version is the one pinned by
# code-server 4.100.3's lib/vscode/npm-shrinkwrap.json (release tag v13.0.0-10).
RG_NPM_VERSION=1.15.11
rg_cache="$(node -p 'require("os").tmpdir()')/vscode-ripgrep-cache-$RG_NPM_VERSION"
mkdir -p "$rg_cache"
if [[ ! -f "$rg_cache/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz" ]]; then
  staging=$(mktemp -d)
  cp "$(command -v rg)" "$staging/rg"
  tar czf "$rg_cache/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz" -C "$staging" rg
  rm -rf "$staging"
fi
mkdir -p "$DEST"
cd "$DEST"
[[ -f package.json ]] || echo '{"name":"tpulint-vscode-e2e-tools","private":true}' > package.json
# unsafe_perm: code-server's postinstall refuses to run as root without it (npm 7+ dropped the default).
# yes: node-pty's postinstall runs `npx node-gyp`, which otherwise aborts waiting for a confirmation.
# nodedir: node-gyp takes headers from the local Node install instead of downloading them.
npm_config_unsafe_perm=true npm_config_yes=true npm_config_nodedir=/usr \
  npm install --no-audit --no-fund --loglevel=error "code-server@$CS_VERSION" playwright-core@1
"$DEST/node_modules/.bin/code-server" --version >/dev/null
touch "$STAMP"
