// Launches Debian's chromium through playwright-core with the flags this machine needs:
// no sandbox as root, and no background networking (the network is closed; Chromium would
// otherwise keep retrying Google's hosts).
const { chromium } = require('playwright-core');

exports.launch = () =>
  chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: [
      '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
      '--disable-sync', '--no-first-run', '--disable-dev-shm-usage', '--disable-quic',
    ],
  });
