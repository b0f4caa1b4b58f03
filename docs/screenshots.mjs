// Screenshots for the docs, taken in JupyterLab (Chromium through Playwright); started
// by docs/screenshots.py, which starts JupyterLab and says what to take in $PLAN:
//   [{notebook | html, run, wait, shots: [{cell, files: {'<width>-<theme>': name}, click}]}]
// `notebook`: a notebook in JupyterLab's folder; `run`: run in its kernel first
// (treescope's and widgets' outputs need a live, trusted session). `html`: a page
// that nbconvert wrote, opened as a file (its theme is the one it was written in;
// the size's theme only names the file). `cell` is a cell's
// index or the first line of its source (`# shot: linen-lens`). Each shot is the
// cell's outputs, cropped to them, written to $OUT/<name> for every size listed.
// Prints one JSON line: per file, its size in px.
const { chromium } = await import(process.env.PLAYWRIGHT);
const { openInLab, setTheme } = await import(process.env.MEASURE);

const base = process.env.LAB_URL;
const out = process.env.OUT;
const plan = JSON.parse(process.env.PLAN);
const VISIBLE = '.jp-NotebookPanel:not(.lm-mod-hidden)';
const HEIGHT = 3000; // tall enough that an output never runs past the window

async function open(page, notebook) {
  page = await openInLab(page, base, 'shots', notebook);
  await page.evaluate(() => {
    window.jupyterapp.shell.collapseLeft();
    window.jupyterapp.shell.collapseRight();
  });
  return page;
}

async function runAll(page) {
  await page.evaluate(async () => { await window.jupyterapp.shell.currentWidget.sessionContext.ready; });
  await page.evaluate(() => window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs'));
  // not awaited in the page: run-all's promise settles only when every cell is done
  await page.evaluate(() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); });
  await page.waitForFunction(
    () => {
      const w = window.jupyterapp.shell.currentWidget;
      const k = w.sessionContext.session && w.sessionContext.session.kernel;
      const cells = w.content.widgets.filter(c => c.model.type === 'code');
      return k && k.status === 'idle' && cells.every(c => c.model.executionCount !== null);
    },
    null,
    { timeout: 300000, polling: 500 }
  );
  const errors = await page.evaluate(() =>
    window.jupyterapp.shell.currentWidget.content.widgets
      .filter(c => c.model.type === 'code')
      .flatMap(c => c.model.outputs.toJSON().filter(o => o.output_type === 'error').map(o => `${o.ename}: ${o.evalue}`))
  );
  if (errors.length) throw new Error(`the notebook failed: ${errors.join('; ')}`);
}

/** The window at `width` px (and HEIGHT tall), once JupyterLab has laid it out again. */
async function setWidth(page, width) {
  await page.setViewportSize({ width, height: HEIGHT });
  await page.waitForFunction(
    w => window.innerWidth === w && window.jupyterapp.shell.currentWidget.node.getBoundingClientRect().right <= w,
    width,
    { timeout: 30000 }
  );
  await page.evaluate(() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r))));
  await page.waitForTimeout(800);
}

/** The index of the cell that `cell` names (an index, or its first line). */
async function cellIndex(page, cell) {
  if (typeof cell === 'number') return cell;
  const i = await page.evaluate(
    first => window.jupyterapp.shell.currentWidget.content.widgets
      .findIndex(c => c.model.sharedModel.getSource().split('\n')[0].trim() === first),
    cell
  );
  if (i < 0) throw new Error(`no cell starts with ${cell}`);
  return i;
}

/** A screenshot of the cell's outputs (their union, the prompt column left out). */
async function shootCell(page, cells, index, path) {
  const cell = page.locator(cells).nth(index);
  await cell.scrollIntoViewIfNeeded();
  await page.evaluate(() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r))));
  const box = await cell.evaluate(c => {
    const rects = Array.from(c.querySelectorAll('.jp-OutputArea-output'))
      .map(o => o.getBoundingClientRect())
      .filter(r => r.height > 2 && r.width > 2);
    if (!rects.length) return null;
    const left = Math.min(...rects.map(r => r.left));
    const top = Math.min(...rects.map(r => r.top));
    const right = Math.max(...rects.map(r => r.right));
    const bottom = Math.max(...rects.map(r => r.bottom));
    return { x: left, y: top, width: right - left, height: bottom - top };
  });
  if (!box) throw new Error(`cell ${index} has no output to shoot`);
  const clip = { x: Math.floor(box.x), y: Math.floor(box.y), width: Math.ceil(box.width), height: Math.ceil(box.height) };
  await page.screenshot({ path, clip });
  return [clip.width, clip.height];
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
         '--disable-component-update', '--disable-sync']
});
const report = {};
try {
  let page = await browser.newPage({ viewport: { width: 1200, height: HEIGHT } });
  for (const job of plan) {
    const sizes = [...new Set(job.shots.flatMap(s => Object.keys(s.files)))];
    if (job.html) {
      // nbconvert's page: no JupyterLab, the theme fixed in the page
      for (const size of sizes) {
        const width = Number(size.split('-')[0]);
        await page.setViewportSize({ width, height: HEIGHT });
        await page.goto(`file://${job.html}`);
        await page.waitForTimeout(500);
        for (const shot of job.shots) {
          if (shot.files[size]) report[shot.files[size]] = await shootCell(page, '.jp-Cell', shot.cell, `${out}/${shot.files[size]}`);
        }
      }
      continue;
    }
    page = await open(page, job.notebook);
    if (job.run) await runAll(page);
    await page.waitForTimeout(job.wait || 2000); // the extension and treescope draw after load
    for (const size of sizes) {
      const [width, theme] = size.split('-');
      await setTheme(page, theme);
      await setWidth(page, Number(width));
      for (const shot of job.shots) {
        if (!shot.files[size]) continue;
        const index = await cellIndex(page, shot.cell);
        if (shot.click) {
          await page.locator(`${VISIBLE} .jp-Cell`).nth(index).locator(shot.click).first().click();
          await page.waitForTimeout(400);
        }
        report[shot.files[size]] = await shootCell(page, `${VISIBLE} .jp-Cell`, index, `${out}/${shot.files[size]}`);
      }
    }
  }
} finally {
  await browser.close();
}
console.log(JSON.stringify(report));
