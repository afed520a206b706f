// Runs the extension-host tests (the `extensionTestsPath` contract of @vscode/test-electron)
// inside code-server's Node extension host, by loading the workbench with the development
// options in its `payload` query parameter. Exit code = test result.
// usage: node cs-ext-tests.js HOST:PORT EXTENSION_DIR TESTS_MODULE WORKSPACE_FOLDER
const { launch } = require('./browser');

const [host, extensionDir, testsModule, folder] = process.argv.slice(2);
const TIMEOUT_MS = 180000;

(async () => {
  // The vscode-remote authority is the host:port the browser uses.
  const payload = JSON.stringify([
    ['extensionDevelopmentPath', `vscode-remote://${host}${extensionDir}`],
    ['extensionTestsPath', `vscode-remote://${host}${testsModule}`],
  ]);
  const url = `http://${host}/?folder=${encodeURIComponent(folder)}&payload=${encodeURIComponent(payload)}`;
  const browser = await launch();
  const page = await browser.newPage();
  // Newer workbenches honour `payload` only with the smoke-test driver enabled, and code-server's
  // CLI rejects --enable-smoke-test-driver: flip it in the workbench configuration as it is read.
  await page.addInitScript(() => {
    const original = Element.prototype.getAttribute;
    Element.prototype.getAttribute = function (name) {
      const value = original.call(this, name);
      if (name === 'data-settings' && this.id === 'vscode-workbench-web-configuration' && value) {
        const configuration = JSON.parse(value);
        configuration.developmentOptions = { ...configuration.developmentOptions, enableSmokeTestDriver: true };
        return JSON.stringify(configuration);
      }
      return value;
    };
  });
  let finish;
  const finished = new Promise((resolve) => (finish = resolve));
  // The extension host's console reaches the page through these hooks; print the suite's lines.
  await page.exposeFunction('codeAutomationLog', (_type, args) => {
    const line = (args || []).join(' ');
    if (line.includes('[ext-test]')) console.log(line.slice(line.indexOf('[ext-test]')).slice(0, 2000));
  });
  await page.exposeFunction('codeAutomationExit', (code) => finish(code));
  await page.goto(url);
  const code = await Promise.race([finished, new Promise((resolve) => setTimeout(() => resolve('timeout'), TIMEOUT_MS))]);
  console.log('extension-host tests exit code:', code);
  await browser.close();
  process.exit(code === 0 ? 0 : 1);
})().catch((error) => {
  console.error(error);
  process.exit(1);
});
