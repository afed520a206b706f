// The playground's analysis worker: loads the tpulint WebAssembly build (`pkg/`, made by
// server/wasm/build.sh) and answers { id, method, params } messages with { id, result } or
// { id, error }, so typing never blocks the page.
import init, { applyFixes, check, rules, version } from './pkg/tpulint_wasm.js';

const ready = init();

const methods = {
  check: ({ source, options }) => check(source, options),
  applyFixes: ({ source, options, unsafe }) => applyFixes(source, options, unsafe),
  rules: () => rules(),
  version: () => version(),
};

self.onmessage = async (event) => {
  const { id, method, params } = event.data;
  try {
    await ready;
    const handler = methods[method];
    if (!handler) throw new Error(`unknown method ${method}`);
    self.postMessage({ id, result: handler(params ?? {}) });
  } catch (error) {
    self.postMessage({ id, error: String(error?.message ?? error) });
  }
};
