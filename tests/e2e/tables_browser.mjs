// Notebooks' lens outputs where a reader meets them: in JupyterLab at 600 px (side
// panels closed) and at 1200 px with the file browser open (a ~770 px cell), light
// and dark, and as nbconvert's HTML at 600 and 1200 px, with the network off.
// Driven by tests/e2e/test_tables_browser.py, which starts JupyterLab. For every
// output that holds lens HTML: each element whose content is wider than its box and
// hidden (`overflow` hidden or clipped, or a scroll box without a visible
// scrollbar), each element that scrolls at all, and in the converted HTML the
// explorer's fallback table. Prints one JSON report on stdout; screenshots go to
// $SHOTS/tables-<notebook>-<width>-<theme>[-<i>].png when $SHOTS is set.
const { chromium } = await import(process.env.PLAYWRIGHT);
const { openInLab, setTheme, shoot } = await import(process.env.MEASURE);

const base = process.env.LAB_URL;
const notebooks = JSON.parse(process.env.NOTEBOOKS || '[]');
const converted = JSON.parse(process.env.CONVERTED || '[]');
const VISIBLE = '.jp-NotebookPanel:not(.lm-mod-hidden)';

/**
 * Runs in the page, on every output that holds lens HTML, with every section
 * opened (a reader opens the modules to read their rows): each element whose
 * content is wider than its box and hidden (`overflow` hidden or clipped, or a
 * scroll box without a visible scrollbar: Chromium here draws none), each element
 * that scrolls at all, and the columns of its variable rows: the left edge of each
 * cell, per column, over every row (one edge per column when they line up).
 */
function hiddenIn(outputs) {
  outputs.forEach(o => o.querySelectorAll('details').forEach(d => (d.open = true)));
  const visibleBar = n => {
    // a classic scrollbar takes room under the content; an overlay one takes none
    const cs = getComputedStyle(n);
    const borders = parseFloat(cs.borderTopWidth) + parseFloat(cs.borderBottomWidth);
    return n.offsetHeight - n.clientHeight - borders >= 4;
  };
  return outputs.map((out, i) => {
    const clipped = [];
    const scrolls = [];
    for (const n of [out, ...out.querySelectorAll('*')]) {
      if (!n.clientWidth || n.scrollWidth <= n.clientWidth + 1) continue;
      const x = getComputedStyle(n).overflowX;
      const what = `${n.tagName}.${n.className}: ${n.textContent.slice(0, 60)} (${n.scrollWidth} > ${n.clientWidth})`;
      if (x === 'auto' || x === 'scroll') {
        scrolls.push(what);
        if (!visibleBar(n)) clipped.push(what);
      } else if (x !== 'visible') {
        clipped.push(what);
      }
    }
    const page = document.documentElement.clientWidth;
    const right = out.getBoundingClientRect().right;
    if (right > page + 1) clipped.push(`output wider than the page (${right} > ${page})`);
    // a variable's row: its groups of cells (name and type, axis names, size,
    // statistics), each cell of a group a column
    const columns = {};
    out.querySelectorAll('.var').forEach(row => {
      const groups = Array.from(row.children).filter(g => g.classList.contains('cols'));
      groups.forEach((g, k) => {
        const cells = g.children.length ? Array.from(g.children) : [g];
        cells.forEach((c, j) => {
          const key = `${k}.${j}`;
          (columns[key] = columns[key] || []).push(Math.round(c.getBoundingClientRect().left));
        });
      });
    });
    const lens = out.querySelector('.lens');
    return {
      i,
      head: (lens ? lens.innerText : out.innerText).slice(0, 80),
      width: Math.round(out.getBoundingClientRect().width),
      rows: out.querySelectorAll('.var').length,
      columns: Object.fromEntries(Object.entries(columns).map(([k, v]) => [k, Array.from(new Set(v))])),
      clipped: clipped.slice(0, 5),
      scrolls: scrolls.slice(0, 5)
    };
  });
}

async function openNotebook(page, notebook) {
  page = await openInLab(page, base, 'tables', notebook);
  // every stored output drawn (a notebook of pack pictures only has no `.lens`
  // in JupyterLab: the extension draws them)
  await page.waitForFunction(
    () => window.jupyterapp.shell.currentWidget.content.widgets.every(
      c => c.model.type !== 'code' || c.outputArea.widgets.length === c.model.outputs.length
    ),
    null,
    { timeout: 60000 }
  );
  await page.waitForTimeout(300);
  return page;
}

/** 600 px alone, or 1200 px with the file browser open beside the notebook. */
async function layout(page, width) {
  await page.setViewportSize({ width, height: 1000 });
  await page.evaluate(browse => {
    const shell = window.jupyterapp.shell;
    shell.collapseRight();
    if (browse) shell.activateById('filebrowser');
    else shell.collapseLeft();
  }, width > 600);
  await page.waitForFunction(
    w => window.innerWidth === w && window.jupyterapp.shell.currentWidget.node.getBoundingClientRect().right <= w,
    width,
    { timeout: 30000 }
  );
  await page.evaluate(() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r))));
  await page.waitForTimeout(300);
  return page.evaluate(() => {
    const cell = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output');
    return cell ? Math.round(cell.getBoundingClientRect().width) : 0;
  });
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
         '--disable-component-update', '--disable-sync']
});
const report = { lab: {}, html: {} };
try {
  let page = await browser.newPage({ viewport: { width: 1200, height: 1000 } });
  for (const nb of notebooks) {
    page = await openNotebook(page, nb);
    const name = nb.split('/').pop().replace('.ipynb', '');
    for (const theme of ['light', 'dark']) {
      await setTheme(page, theme);
      for (const width of [600, 1200]) {
        const cell = await layout(page, width);
        const outs = page.locator(`${VISIBLE} .jp-OutputArea-output:has(.lens)`);
        report.lab[`${name}@${width}-${theme}`] = {
          cell,
          outputs: await outs.evaluateAll(hiddenIn)
        };
        const n = process.env.SHOTS ? await outs.count() : 0;
        for (let i = 0; i < n; i++) {
          await outs.nth(i).scrollIntoViewIfNeeded();
          await shoot(outs.nth(i), `tables-${name}-${width}-${theme}-${i}.png`);
        }
      }
    }
  }
  // nbconvert's HTML, opened from disk with every other request refused: a reader
  // offline, or a viewer that loads no widget script
  const context = await browser.newContext({ viewport: { width: 1200, height: 1000 } });
  await context.route('**', route => (route.request().url().startsWith('file:') ? route.continue() : route.abort()));
  const html = await context.newPage();
  for (const file of converted) {
    const name = file.split('/').pop().replace('.html', '');
    for (const width of [600, 1200]) {
      await html.setViewportSize({ width, height: 1000 });
      await html.goto(`file://${file}`);
      const outs = html.locator('.jp-OutputArea-output:has(.lens)');
      report.html[`${name}@${width}`] = {
        outputs: await outs.evaluateAll(hiddenIn),
        // the explorer's output: its table, and the sentence that says to run it
        explorer: await html.evaluate(() =>
          Array.from(document.querySelectorAll('.jp-OutputArea-output'))
            .filter(o => o.innerText.includes('lens.explore'))
            .map(o => ({ text: o.innerText.slice(0, 300), rows: o.querySelectorAll('.lens .var').length }))
        )
      };
      const n = process.env.SHOTS ? await outs.count() : 0;
      for (let i = 0; i < n; i++) await shoot(outs.nth(i), `tables-html-${name}-${width}-${i}.png`);
    }
  }
} finally {
  await browser.close();
}
console.log(JSON.stringify(report));
