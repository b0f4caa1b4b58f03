// Ad-hoc look at notebooks in JupyterLab (not a test): node look.mjs nb width theme [sanitize.json]
import { chromium } from 'playwright-core';
const [nb, width, theme] = process.argv.slice(2);
const base = process.env.LAB_URL || 'http://127.0.0.1:8899';
const out = process.env.SHOTS || '/tmp/shots';
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu'] });
try {
  const page = await browser.newPage({ viewport: { width: Number(width), height: 1000 } });
  await page.goto(`${base}/lab/tree/${nb}`);
  await page.waitForFunction(n => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget; return w && w.context && w.context.path === n; }, nb, { timeout: 120000 });
  if (theme === 'dark') {
    await page.evaluate(() => window.jupyterapp.commands.execute('apputils:change-theme', { theme: 'JupyterLab Dark' }));
    await page.waitForFunction(() => document.body.dataset.jpThemeLight === 'false');
  } else {
    await page.evaluate(() => window.jupyterapp.commands.execute('apputils:change-theme', { theme: 'JupyterLab Light' }));
  }
  await page.evaluate(() => { window.jupyterapp.shell.collapseLeft(); window.jupyterapp.shell.collapseRight(); });
  await page.waitForTimeout(2500);
  if (process.env.SANITIZE) {
    const r = await page.evaluate(s => window.jupyterapp.shell.currentWidget.content.rendermime.sanitizer.sanitize(s), process.env.SANITIZE);
    console.log('SANITIZED:', r);
  }
  const outputs = page.locator('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output');
  const n = await outputs.count();
  const sel = process.env.ONLY ? process.env.ONLY.split(',').map(Number) : [...Array(n).keys()];
  for (const i of sel) {
    const o = outputs.nth(i);
    const txt = (await o.textContent()).slice(0, 60).replace(/\s+/g, ' ');
    const h = await o.evaluate(n => n.getBoundingClientRect().height);
    if (h < 30 && !process.env.ONLY) continue;
    await o.scrollIntoViewIfNeeded();
    if (process.env.CLICK && await o.locator('.lens-pack-lane[data-key]').count()) { await o.locator('.lens-pack-lane[data-key]').first().click(); await page.waitForTimeout(300); }
    await o.screenshot({ path: `${out}/${nb.replace('.ipynb', '')}-${i}-${width}-${theme}.png` });
    console.log(i, Math.round(h), txt);
  }
} finally { await browser.close(); }
