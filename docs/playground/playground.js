// The playground page: sends the editor's text to the analysis worker on every change (debounced,
// stale answers dropped) and lists the findings with their fixes.
import { applyEdits, fixPreview, lineStarts, offsetAt } from './fixes.js';

const SAMPLE = `import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(784, 10)

    def forward(self, x):
        out = self.fc(x)
        if out.sum().item() > 0:
            out = out * 2
        return out


device = torch.device("cuda")
model = Net().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

for step, (data, target) in enumerate(loader):
    data, target = data.to("cuda"), target.to("cuda")
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(data), target)
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
`;

const elements = {
  source: document.getElementById('source'),
  backend: document.getElementById('backend'),
  allRules: document.getElementById('all-rules'),
  fixSafe: document.getElementById('fix-safe'),
  fixUnsafe: document.getElementById('fix-unsafe'),
  status: document.getElementById('status'),
  findings: document.getElementById('findings'),
};

// ---- worker RPC ------------------------------------------------------------------------------
const worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
const pending = new Map();
let nextId = 1;
worker.onmessage = (event) => {
  const { id, result, error } = event.data;
  const request = pending.get(id);
  if (!request) return;
  pending.delete(id);
  if (error !== undefined) request.reject(new Error(error));
  else request.resolve(result);
};
worker.onerror = (event) => showFailure(`the analysis worker failed: ${event.message ?? 'could not load'}`);
function call(method, params) {
  const id = nextId++;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    worker.postMessage({ id, method, params });
  });
}

// ---- state -----------------------------------------------------------------------------------
let version = '';
let latestRequest = 0;
let shownText = '';

function options() {
  const result = { backend: elements.backend.value, filename: 'playground.py' };
  if (elements.allRules.checked) result.select = ['ALL'];
  return result;
}

function showFailure(message) {
  elements.status.textContent = message;
  elements.status.classList.add('failed');
}

async function analyse() {
  const request = ++latestRequest;
  const source = elements.source.value;
  const started = performance.now();
  let diagnostics;
  try {
    diagnostics = await call('check', { source, options: options() });
  } catch (error) {
    if (request === latestRequest) showFailure(error.message);
    return;
  }
  // A newer edit was sent while this one ran: its answer will come.
  if (request !== latestRequest) return;
  const elapsed = performance.now() - started;
  shownText = source;
  render(diagnostics, elapsed);
}

let timer;
function scheduleAnalysis() {
  clearTimeout(timer);
  timer = setTimeout(analyse, 120);
}

// ---- rendering -------------------------------------------------------------------------------
function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (key === 'class') node.className = value;
    else if (key.startsWith('data-')) node.setAttribute(key, value);
    else node[key] = value;
  }
  for (const child of children) node.append(child);
  return node;
}

function render(diagnostics, elapsed) {
  elements.status.classList.remove('failed');
  const count = diagnostics.length;
  const fixable = diagnostics.filter((d) => d.fix && d.fix.applicability !== 'display-only').length;
  elements.status.textContent =
    `${count} finding${count === 1 ? '' : 's'}` +
    (count ? `, ${fixable} fixable` : '') +
    ` · checked in ${elapsed.toFixed(1)} ms · tpulint ${version}`;
  elements.findings.replaceChildren(
    ...(count
      ? diagnostics.map(renderFinding)
      : [element('li', { class: 'empty' }, 'No TPU problems found with these rules.')]),
  );
}

function renderFinding(diagnostic) {
  const { row, column } = diagnostic.location;
  const head = element(
    'div',
    { class: 'head' },
    element('span', { class: 'position' }, `${row}:${column}`),
    element('span', { class: `severity ${diagnostic.severity}` }, diagnostic.severity),
    element('a', { class: 'code', href: diagnostic.url ?? '#', target: '_blank', rel: 'noopener' }, diagnostic.code),
    element('span', { class: 'message' }, diagnostic.message),
  );
  const item = element(
    'li',
    { class: `finding ${diagnostic.severity}`, 'data-code': diagnostic.code, 'data-row': String(row) },
    head,
  );
  item.addEventListener('click', (event) => {
    if (event.target.closest('button, a')) return;
    select(diagnostic.location, diagnostic.end_location);
  });
  if (diagnostic.fix) item.append(renderFix(diagnostic.fix));
  return item;
}

function renderFix(fix) {
  const container = element('div', { class: 'fix' });
  container.append(
    element('span', { class: 'applicability' }, fix.applicability),
    element('span', { class: 'title' }, fix.message),
  );
  if (fix.applicability === 'display-only' || fix.edits.length === 0) return container;
  const preview = element('button', { type: 'button', class: 'preview' }, 'Preview');
  const apply = element('button', { type: 'button', class: 'apply' }, 'Apply');
  let diff;
  preview.addEventListener('click', () => {
    if (diff) {
      diff.remove();
      diff = undefined;
      preview.textContent = 'Preview';
      return;
    }
    diff = renderDiff(fixPreview(shownText, fix));
    container.after(diff);
    preview.textContent = 'Hide';
  });
  apply.addEventListener('click', () => {
    // The fix was computed for the text on screen; if the user typed since, wait for new results.
    if (elements.source.value !== shownText) return;
    setSource(applyEdits(shownText, fix.edits));
  });
  container.append(preview, apply);
  return container;
}

function renderDiff({ before, after }) {
  const block = element('pre', { class: 'diff' });
  for (const line of before) block.append(element('div', { class: 'removed' }, `- ${line}`));
  for (const line of after) block.append(element('div', { class: 'added' }, `+ ${line}`));
  return block;
}

function select(start, end) {
  const text = elements.source.value;
  const starts = lineStarts(text);
  elements.source.focus();
  elements.source.setSelectionRange(offsetAt(text, start, starts), offsetAt(text, end, starts));
}

function setSource(text) {
  elements.source.value = text;
  analyse();
}

async function fixAll(unsafe) {
  const source = elements.source.value;
  try {
    const outcome = await call('applyFixes', { source, options: options(), unsafe });
    if (elements.source.value !== source) return;
    setSource(outcome.output);
  } catch (error) {
    showFailure(error.message);
  }
}

// ---- start -----------------------------------------------------------------------------------
elements.source.value = SAMPLE;
elements.source.addEventListener('input', scheduleAnalysis);
elements.source.addEventListener('keydown', (event) => {
  // Tab indents instead of leaving the editor.
  if (event.key !== 'Tab' || event.shiftKey) return;
  event.preventDefault();
  const { selectionStart, selectionEnd } = elements.source;
  elements.source.setRangeText('    ', selectionStart, selectionEnd, 'end');
  scheduleAnalysis();
});
elements.backend.addEventListener('change', analyse);
elements.allRules.addEventListener('change', analyse);
elements.fixSafe.addEventListener('click', () => fixAll(false));
elements.fixUnsafe.addEventListener('click', () => fixAll(true));

call('version')
  .then((v) => {
    version = v;
    return analyse();
  })
  .catch((error) => showFailure(`could not load the analyzer: ${error.message}`));
