// One notebook of lens outputs, opened twice in a real JupyterLab: a copy signed as
// trusted and a copy that is not (as a fresh clone has it). Driven by
// tests/e2e/test_trust_browser.py, which starts JupyterLab. For each theme and
// width, every output's computed layout (boxes, colours, fonts, text) in both
// copies, its contrast and its broken texts. Prints one JSON report on stdout;
// screenshots go to $SHOTS/trust-<kind>-<width>-<theme>-<trusted|untrusted>.png
// when $SHOTS is set.
const { chromium } = await import(process.env.PLAYWRIGHT);
const { layoutOf, brokenText, lowContrast, openInLab, setTheme, setWidth, shoot } = await import(process.env.MEASURE);

const base = process.env.LAB_URL;
const kinds = JSON.parse(process.env.KINDS);
const widgetKinds = JSON.parse(process.env.WIDGETS || '[]');
const VISIBLE = '.jp-NotebookPanel:not(.lm-mod-hidden)';

async function openNotebook(page, notebook) {
  page = await openInLab(page, base, 'trust', notebook);
  await page.evaluate(() => {
    window.jupyterapp.shell.collapseLeft();
    window.jupyterapp.shell.collapseRight();
  });
  // every kind's output is drawn (the pack pictures by the extension)
  await page.waitForFunction(
    n => {
      const w = window.jupyterapp.shell.currentWidget;
      return w.node.querySelectorAll('.jp-Cell .jp-OutputArea-output').length >= n &&
        w.node.querySelectorAll('.lens-pack-renderer .lens-pack').length >= 3;
    },
    kinds.length,
    { timeout: 60000 }
  );
  await page.waitForTimeout(300);
  return page;
}

/** Each cell's first output (in the order of `kinds`; cell 0 sets up): measures (and a screenshot).
 * In the trusted copy the widget kinds are waited for where they are: JupyterLab
 * restores a widget from the saved state asynchronously, and under load it lands
 * after the rest of the notebook is drawn. */
async function measureKinds(page, into, key, trusted) {
  const cells = page.locator(`${VISIBLE} .jp-CodeCell`);
  for (let i = 0; i < kinds.length; i++) {
    const out = cells.nth(i + 1).locator('.jp-OutputArea-output').first();
    await out.scrollIntoViewIfNeeded();
    if (trusted && widgetKinds.includes(kinds[i])) {
      await out.locator('.widget-vbox').first().waitFor({ timeout: 90000 }).catch(() => null);
      await page.waitForTimeout(300);
    }
    into[kinds[i]] = await out.evaluate((n, fns) => {
      const [layout, broken, contrast] = fns.map(f => eval(`(${f})`));
      return {
        layout: layout(n),
        broken: broken(n),
        contrast: contrast(n),
        text: n.innerText.slice(0, 300),
        // content wider than the output: it scrolls sideways inside it
        scrolls: Array.from(n.querySelectorAll('*')).some(c => c.scrollWidth > c.clientWidth + 1 && getComputedStyle(c).overflowX === 'auto'),
        extension: n.querySelector('.lens-pack-renderer .lens-pack') !== null,
        widget: n.querySelector('.widget-vbox') !== null
      };
    }, [layoutOf.toString(), brokenText.toString(), lowContrast.toString()]);
    await shoot(out, `trust-${kinds[i]}-${key}.png`);
  }
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
         '--disable-component-update', '--disable-sync']
});
const report = {};
try {
  let page = await browser.newPage({ viewport: { width: 1200, height: 1000 } });
  // Each copy is opened once; the themes and widths are switched in place (as a user
  // does), which also checks that every output lays out again when they change.
  for (const copy of ['trusted', 'untrusted']) {
    page = await openNotebook(page, `${copy}.ipynb`);
    for (const theme of ['light', 'dark']) {
      await setTheme(page, theme);
      for (const width of [600, 1200]) {
        await setWidth(page, width);
        const key = `${width}-${theme}-${copy}`;
        report[key] = { trusted: await page.evaluate(() => window.jupyterapp.shell.currentWidget.content.widgets.filter(c => c.model.type === 'code').map(c => c.model.trusted)) };
        await measureKinds(page, report[key], key, copy === 'trusted');
        report[key].docScroll = await page.evaluate(() => document.documentElement.scrollWidth > document.documentElement.clientWidth);
      }
    }
  }
} finally {
  await browser.close();
}
console.log(JSON.stringify(report));
