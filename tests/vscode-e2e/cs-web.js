// The web extension in real VS Code's web worker extension host: code-server with a copy of the
// VSIX whose manifest has no `main` entry, so the workbench can only run its `browser` entry (the
// wasm language server in a worker). Opens model.py, reads the Problems panel, applies a quick
// fix from the Ctrl+. menu, runs Fix All, hovers a finding, and opens notebook.ipynb.
// usage: node cs-web.js URL
const { launch } = require('./browser');
const { editorText, goTo, problems, quickOpen, runCommand, waitFor } = require('./workbench');

const URL = process.argv[2];
const FAILSHOT = process.env.FAILSHOT || 'failure.png';
const started = Date.now();
const log = (...parts) => console.log(`[web ${((Date.now() - started) / 1000).toFixed(1)}s]`, ...parts);

(async () => {
  const browser = await launch();
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const workerErrors = [];
  page.on('console', (message) => {
    if (message.type() === 'error' && !/vsda|gallery|marketplace|404/.test(message.text())) {
      workerErrors.push(message.text());
      console.log('  [browser error]', message.text().slice(0, 200));
    }
  });
  const workers = [];
  page.on('worker', (worker) => workers.push(worker.url()));
  let ok = false;
  try {
    await page.goto(URL);
    await page.waitForSelector('.monaco-workbench', { timeout: 60000 });
    await page.waitForSelector('.explorer-folders-view .monaco-list-row', { timeout: 30000 });
    log('workbench loaded');
    await quickOpen(page, 'model.py');
    await page.waitForSelector('.editor-instance .view-lines:has-text("mark_step")', { timeout: 30000 });
    log('model.py open');

    // 1. Findings from the wasm server in the Problems panel.
    await page.keyboard.press('Control+Shift+M');
    const expected = ['TPU401', 'TPU410', 'TPU601', 'TPU101'];
    const rows = await waitFor('tpulint rows in the Problems panel', async () => {
      const current = await problems(page);
      return expected.every((code) => current.some((row) => row.includes(code))) && current;
    }, 90000);
    log('Problems panel:');
    rows.forEach((row) => console.log('   |', row));
    // The workbench starts the extension host as a worker, and the extension starts its server as
    // one more (from a blob URL: see startWorker in extension/src/web/extension.ts).
    log('workers started by the page:', workers.length);

    // 2. Quick fix through the lightbulb menu, with the keyboard.
    await page.locator('.editor-instance .view-lines').first().click({ position: { x: 5, y: 5 } });
    await goTo(page, 15, 8);
    await page.keyboard.press('Control+.');
    const menuItem = page.locator('.action-widget .monaco-list-row', { hasText: 'torch_xla.sync' });
    await menuItem.first().waitFor({ timeout: 20000 });
    log('quick fix menu:', JSON.stringify(await page.locator('.action-widget .monaco-list-row').allInnerTexts()));
    await page.keyboard.press('Enter');
    await waitFor('quick fix applied', async () => (await editorText(page)).includes('torch_xla.sync()'));
    await waitFor('TPU601 cleared', async () => !(await problems(page)).some((row) => row.includes('TPU601')));
    log('quick fix applied and TPU601 cleared');

    // 3. Fix All from the command palette (the server's applyAutofix and its applyEdit).
    await runCommand(page, 'TPU Lint: Fix All Issues');
    await waitFor('Fix All applied', async () => !(await editorText(page)).includes('pin_memory'));
    await waitFor('TPU410 cleared', async () => !(await problems(page)).some((row) => row.includes('TPU410')));
    log('Fix All applied');

    // 4. Hover on a remaining finding shows its rule's documentation.
    await goTo(page, 7, 25);
    await page.keyboard.press('Control+K');
    await page.keyboard.press('Control+I');
    const hover = page.locator('.monaco-hover-content', { hasText: 'TPU' });
    await hover.first().waitFor({ timeout: 20000 });
    log('hover:', (await hover.first().innerText()).replace(/\s+/g, ' ').slice(0, 120));
    await page.keyboard.press('Escape');

    // 5. A notebook: its cells are checked as one module by the same server.
    await quickOpen(page, 'notebook.ipynb');
    await page.locator('.notebook-editor .view-lines', { hasText: 'mark_step' }).first().waitFor({ timeout: 30000 });
    log('notebook.ipynb open');
    // The third cell's `xm.mark_step()` (with `xm` imported in the first cell) is TPU601 on the
    // cell's own line 3; model.py's TPU601 was fixed above, so this row is the notebook's.
    const cellRows = await waitFor('TPU601 in the notebook\'s third cell', async () => {
      const current = await problems(page);
      return current.some((row) => row.includes('notebook.ipynb')) && current.some((row) => row.includes('TPU601') && row.includes('Ln 3, Col 5')) && current;
    }, 60000);
    log('notebook findings:', JSON.stringify(cellRows.filter((row) => row.includes('TPU601'))));
    if (workerErrors.some((text) => /RuntimeError|unreachable|wasm/i.test(text))) {
      throw new Error(`the wasm server reported errors: ${workerErrors.join(' / ').slice(0, 300)}`);
    }
    ok = true;
  } catch (error) {
    console.log('FAIL:', error.message);
    await page.screenshot({ path: FAILSHOT }).catch(() => {});
  } finally {
    await browser.close();
  }
  log(ok ? 'PASS' : 'FAIL');
  process.exit(ok ? 0 : 1);
})();
