// End-to-end check in a real browser: JupyterLab renders lens pack traces with the
// extension. Driven by tests/e2e/test_extension_browser.py, which starts JupyterLab.
// Prints one JSON report on stdout.
import { chromium } from 'playwright-core';

const base = process.env.LAB_URL;
const shot = process.env.SCREENSHOT;
const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';

async function openAndRun(page, notebook, expected) {
  await page.goto(`${base}/lab/tree/${notebook}`);
  await page.waitForFunction(
    nb => {
      const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
      return w && w.context && w.context.path === nb && w.sessionContext;
    },
    notebook,
    { timeout: 120000 }
  );
  // Wait for the kernel, then clear the stored outputs and run everything live.
  await page.evaluate(async () => {
    await window.jupyterapp.shell.currentWidget.sessionContext.ready;
  });
  await page.evaluate(() => window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs'));
  await page.waitForFunction(() => window.jupyterapp.shell.currentWidget.node.querySelectorAll('.lens-pack-renderer').length === 0, null, { timeout: 30000 });
  await page.evaluate(() => window.jupyterapp.commands.execute('notebook:run-all-cells'));
  await page.waitForFunction(
    n => {
      const w = window.jupyterapp.shell.currentWidget;
      const kernel = w.sessionContext.session && w.sessionContext.session.kernel;
      return w.node.querySelectorAll('.lens-pack-renderer').length >= n && kernel && kernel.status === 'idle';
    },
    expected,
    { timeout: 180000, polling: 500 }
  );
}

const browser = await chromium.launch({
  executablePath,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
         '--disable-component-update', '--disable-sync']
});
const report = {};
const VISIBLE = '.jp-NotebookPanel:not(.lm-mod-hidden)';
try {
  const page = await browser.newPage({ viewport: { width: 1500, height: 1000 } });
  await openAndRun(page, '02_lifting.ipynb', 3);
  const first = page.locator(`${VISIBLE} .lens-pack-renderer`).first();
  await first.scrollIntoViewIfNeeded();
  report.renderers = await page.locator(`${VISIBLE} .lens-pack-renderer`).count();
  report.stages = await first.locator('.lens-pack-stage').evaluateAll(ns => ns.map(n => n.dataset.stage));
  report.paramsRows = await first.locator('[data-collection="params"]').count();
  report.groupTexts = await first.locator('[data-stage="groups"] .lens-pack-text').allTextContents();
  report.title = await first.locator('.lens-pack-crumb').first().textContent();
  // Hover a variable in the repack column: it lights up in the commit column too.
  await first.locator('[data-stage="repack"] .lens-pack-item').first().hover();
  report.highlighted = await first.locator('.lens-pack-hl').evaluateAll(ns => ns.map(n => n.parentElement.dataset.stage));
  report.htmlFallbackShown = await page.locator(`${VISIBLE} .jp-OutputArea-output.jp-RenderedHTMLCommon`).count();
  await first.screenshot({ path: shot });

  await openAndRun(page, 'e2e_extra.ipynb', 2);
  report.errorText = await page.locator(`${VISIBLE} .lens-pack-error`).first().textContent();
  const scan = page.locator(`${VISIBLE} .lens-pack-renderer`).last();
  report.scanRenderMs = Number(await scan.getAttribute('data-render-ms'));
  report.scanStages = await scan.locator('.lens-pack-stage').count();
} finally {
  await browser.close();
}
console.log(JSON.stringify(report));
