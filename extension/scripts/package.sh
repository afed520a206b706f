#!/usr/bin/env bash
# Builds the platform-specific VSIX: the release server binary, the bundled client, the manifest.
#   npm run package                      → dist/tpulint-linux-x64-<version>.vsix
# env: TPULINT_SERVER_BINARY=path  package this binary instead of building it with cargo
#      CARGO_TARGET_DIR                where cargo puts the release build (default target/)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
target=linux-x64   # VS Code platform of x86_64-unknown-linux-gnu, the only target built here
version=$(node -p 'require("./package.json").version')
# One command on a fresh checkout: the client's build tools (esbuild, vsce) come from npm ci.
[[ -x node_modules/.bin/esbuild && -x node_modules/.bin/vsce ]] || npm ci --no-audit --no-fund --loglevel=error

binary=${TPULINT_SERVER_BINARY:-}
if [[ -z "$binary" ]]; then
  cargo build --release --locked -p tpulint
  binary="${CARGO_TARGET_DIR:-$root/target}/release/tpulint"
fi
[[ -x "$binary" ]] || { echo "no executable server binary at $binary" >&2; exit 1; }
mkdir -p extension/bin
install -m 755 "$binary" extension/bin/tpulint
npm run --silent build
# The web extension (the manifest's `browser` entry) runs the wasm build in a worker; build the
# wasm package first when this checkout has none.
[[ -f server/wasm/pkg/web-lsp/tpulint_wasm.js ]] || bash server/wasm/build.sh
npm run --silent build:web

# The Marketplace README lives in extension/; its image links are relative to that folder in the
# repository (../docs/images/...). Inside the VSIX the README sits at the extension root, next to
# docs/, so vsce gets a copy with the links rebased onto the root.
# (vsce only takes a README from the packaged files, hence extension/out/.)
staged_readme=extension/out/README.md
sed 's#(\.\./docs/#(docs/#g' extension/README.md > "$staged_readme"

mkdir -p dist
out="dist/tpulint-$target-$version.vsix"
npx --no-install vsce package --target "$target" --no-dependencies \
  --no-rewrite-relative-links --readme-path "$staged_readme" -o "$out" >/dev/null
node -e '
  const fs = require("fs");
  const [vsix, binary, bundle] = process.argv.slice(1).map((file) => fs.statSync(file).size);
  console.log(`packaged ${process.argv[1]}: ${(vsix / 2 ** 20).toFixed(1)} MiB ` +
    `(server binary ${(binary / 2 ** 20).toFixed(1)} MiB uncompressed, client bundle ${(bundle / 1024).toFixed(0)} KiB)`);
' "$out" extension/bin/tpulint extension/out/extension.js
