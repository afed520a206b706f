// Keyboard-driven steps in the VS Code workbench shared by the UI tests (cs-ui.js, cs-web.js):
// read the Problems panel and the editor, open a file, run a command, go to a position.

/** The Problems panel's rows: text and accessible label, whitespace collapsed. */
exports.problems = (page) =>
  page
    .locator('.markers-panel .monaco-list-row')
    .evaluateAll((rows) => rows.map((row) => `${row.innerText} | ${row.getAttribute('aria-label') || ''}`.replace(/\s+/g, ' ')));

/** Polls `probe` until it returns a truthy value, which it returns; throws after `timeoutMs`. */
exports.waitFor = async (what, probe, timeoutMs = 30000) => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
};

/** The text of the first visible editor (non-breaking spaces as spaces). */
exports.editorText = async (page) =>
  (await page.locator('.editor-instance .view-lines').first().innerText()).replace(/\u00a0/g, ' ');

/** Opens a file with Quick Open, once its own row is listed (an earlier picker's rows may linger). */
exports.quickOpen = async (page, name) => {
  await page.keyboard.press('Control+P');
  await page.waitForSelector('.quick-input-widget input', { state: 'visible' });
  await page.keyboard.type(name);
  await page.locator('.quick-input-list .monaco-list-row', { hasText: name }).first().waitFor({ timeout: 15000 });
  await page.keyboard.press('Enter');
};

/** Runs a command from the command palette by its title. */
exports.runCommand = async (page, title) => {
  await page.keyboard.press('F1');
  await page.waitForSelector('.quick-input-widget input', { state: 'visible' });
  await page.keyboard.type(title);
  await page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first().waitFor({ timeout: 10000 });
  await page.keyboard.press('Enter');
};

/** Moves the cursor to `line`:`column` with Go to Line. */
exports.goTo = async (page, line, column) => {
  await page.keyboard.press('Control+G');
  await page.waitForSelector('.quick-input-widget input', { state: 'visible' });
  await page.keyboard.type(`${line}:${column}`);
  await page.keyboard.press('Enter');
};
