// End-to-end check in a real browser: JupyterLab draws lens pack traces with the
// extension. Driven by tests/e2e/test_extension_browser.py, which starts JupyterLab.
// Prints one JSON report on stdout; screenshots go to $SHOTS when it is set.
import { chromium } from 'playwright-core';
import { readFileSync } from 'fs';
import { lowContrast, setTheme, setWidth, shoot } from './measure.mjs';

const base = process.env.LAB_URL;
const fallbackPage = process.env.FALLBACK_HTML;
const goldenNames = JSON.parse(process.env.GOLDEN || '[]');
const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';

async function openNotebook(page, notebook) {
  // A workspace of its own: the scripts run side by side on one server, and the
  // default workspace would restore the tabs another script has open.
  await page.goto(`${base}/lab/workspaces/e2e/tree/${notebook}`);
  await page.waitForFunction(
    nb => {
      const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
      return w && w.context && w.context.path === nb && w.sessionContext;
    },
    notebook,
    { timeout: 120000 }
  );
}

/** A notebook alone across the window (side panels collapsed), once `count` of its
 * outputs match `selector`. */
async function openAlone(page, notebook, selector, count) {
  await openNotebook(page, notebook);
  await page.evaluate(() => {
    window.jupyterapp.shell.collapseLeft();
    window.jupyterapp.shell.collapseRight();
  });
  await page.waitForFunction(
    ([s, n]) => window.jupyterapp.shell.currentWidget.node.querySelectorAll(s).length >= n,
    [selector, count],
    { timeout: 60000 }
  );
}

async function openAndRun(page, notebook, expected) {
  await openNotebook(page, notebook);
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

/**
 * Everything the layout must keep: per renderer, every lane's full path and both
 * shapes as drawn, and every element whose content is wider than its box.
 */
function measure(root) {
  const overflow = [];
  const check = n => {
    if (n.clientWidth > 0 && n.scrollWidth > n.clientWidth + 1) {
      overflow.push(`${n.className}: ${n.textContent.slice(0, 80)} (${n.scrollWidth} > ${n.clientWidth})`);
    }
  };
  root.querySelectorAll('.lens-pack-lane > *, .lens-pack-lane, .lens-pack-box, .lens-pack-summary, .lens-pack-crumbs, .lens-pack-rng, .lens-pack-group-head, .lens-pack-options, .lens-pack-legend').forEach(check);
  check(root);
  const area = root.closest('.jp-OutputArea-output') || root.parentElement;
  const r = root.getBoundingClientRect();
  const a = area.getBoundingClientRect();
  if (r.right > a.right + 1) {
    overflow.push(`renderer wider than its output area (${r.right} > ${a.right})`);
  }
  const chips = Array.from(root.querySelectorAll('.lens-pack-chip')).map(n => n.dataset.key);
  const lanes = Array.from(root.querySelectorAll('.lens-pack-lane:not(.lens-pack-lane-head):not(.lens-pack-chip)')).map(n => ({
    path: n.querySelector('.lens-pack-name').textContent,
    outer: n.querySelector('.lens-pack-outer').textContent,
    inner: n.querySelector('.lens-pack-inner').textContent,
    visible: n.getBoundingClientRect().width > 0
  }));
  return { width: Math.round(r.width), overflow, lanes, chips, boxes: root.querySelectorAll('.lens-pack-box').length };
}

/**
 * What a reader of one renderer sees go wrong at one cell width (issue 43): texts
 * clipped without a scrollbar (a path's segments cut with an ellipsis are fine:
 * the whole path is the name's title), anything drawn outside the renderer, words
 * broken across lines that would have fit on a line of their own, paths on more
 * than one line, and variable names (the last segment) cut.
 */
function cellFaults(root) {
  const rect = root.getBoundingClientRect();
  const say = n => `${n.className || n.tagName}: ${n.textContent.slice(0, 60)}`;
  const clipped = [];
  const spills = [];
  root.querySelectorAll('*').forEach(n => {
    const cs = getComputedStyle(n);
    if (!n.getClientRects().length) return;
    const scrolls = cs.overflowX === 'auto' || cs.overflowX === 'scroll';
    const name = n.closest('.lens-pack-name');
    const ellipsis = cs.textOverflow === 'ellipsis' && name && name.title.endsWith(name.textContent);
    if (n.clientWidth > 0 && n.scrollWidth > n.clientWidth + 1 && !scrolls && !ellipsis) {
      clipped.push(`${say(n)} (${n.scrollWidth} > ${n.clientWidth})`);
    }
    const r = n.getBoundingClientRect();
    const inScroller = n.parentElement && n.parentElement.closest('.lens-pack-details');
    if (!inScroller && (r.right > rect.right + 1 || r.left < rect.left - 1)) {
      spills.push(`${say(n)} (${Math.round(r.left)}..${Math.round(r.right)} outside ${Math.round(rect.left)}..${Math.round(rect.right)})`);
    }
  });
  // A break inside a word (between two letters, digits or underscores) is wrong
  // unless the word is wider than its block: then it must break somewhere.
  const brokenWords = [];
  const letter = /[\p{L}\p{N}_]/u;
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const range = document.createRange();
  while (walker.nextNode()) {
    const t = walker.currentNode;
    const s = t.textContent;
    if (s.trim().length < 2 || !t.parentElement.getClientRects().length) continue;
    range.selectNodeContents(t);
    const tops = new Set(Array.from(range.getClientRects()).map(q => Math.round(q.top)));
    if (tops.size < 2) continue;
    let prevTop = null;
    for (let i = 0; i < s.length; i++) {
      range.setStart(t, i);
      range.setEnd(t, i + 1);
      const q = range.getClientRects()[0];
      if (!q) continue;
      if (prevTop !== null && q.top > prevTop + 2 && letter.test(s[i]) && letter.test(s[i - 1])) {
        let a = i - 1;
        let b = i;
        while (a > 0 && letter.test(s[a - 1])) a--;
        while (b < s.length && letter.test(s[b])) b++;
        range.setStart(t, a);
        range.setEnd(t, b);
        const wide = Array.from(range.getClientRects()).reduce((w, x) => w + x.width, 0);
        let block = t.parentElement;
        while (block.parentElement && getComputedStyle(block).display.startsWith('inline')) block = block.parentElement;
        if (wide <= block.clientWidth) brokenWords.push(`${say(t.parentElement)}: ${s.slice(a, i)}|${s.slice(i, b)}`);
      }
      prevTop = q.top;
    }
  }
  const multiLinePaths = [];
  const cutNames = [];
  root.querySelectorAll('.lens-pack-name').forEach(name => {
    if (!name.getClientRects().length) return;
    const tops = new Set(Array.from(name.children).map(c => Math.round(c.getBoundingClientRect().top)));
    if (tops.size > 1 || name.getBoundingClientRect().height > 2 * parseFloat(getComputedStyle(name).lineHeight)) {
      multiLinePaths.push(name.textContent);
    }
    if (name.textContent !== name.title && !name.title.endsWith(name.textContent)) multiLinePaths.push(`text != title: ${name.title}`);
    const leaf = name.querySelector('.lens-pack-seg-leaf');
    if (leaf && leaf.scrollWidth > leaf.clientWidth + 1) cutNames.push(name.textContent);
  });
  return {
    width: Math.round(rect.width),
    names: root.querySelectorAll('.lens-pack-name').length,
    clipped: clipped.slice(0, 10),
    spills: spills.slice(0, 10),
    brokenWords: brokenWords.slice(0, 10),
    multiLinePaths: multiLinePaths.slice(0, 10),
    cutNames: cutNames.slice(0, 10)
  };
}

/**
 * Clicks the first chip of a pass-through box (jit, remat) and measures where the
 * details panel opens: its box against the row of chips' box, and the chips'
 * heights before and after (issue 43: the panel opened inside the row, the chip
 * grew into a tall grey box and the others wrapped below). Clicks again to close.
 */
async function chipClick(renderer, shot) {
  const row = renderer.locator('.lens-pack-chips').first();
  const heights = () =>
    row.evaluate(r => ({
      row: Math.round(r.getBoundingClientRect().height),
      chips: Array.from(r.children).map(c => Math.round(c.getBoundingClientRect().height))
    }));
  const before = await heights();
  const chip = row.locator('.lens-pack-chip').first();
  await chip.click();
  const after = await heights();
  const placed = await row.evaluate(r => {
    const panel = r.nextElementSibling;
    const b = r.getBoundingClientRect();
    const p = panel && panel.getBoundingClientRect();
    return {
      isPanel: !!panel && panel.classList.contains('lens-pack-details'),
      inRow: !!r.querySelector('.lens-pack-details'),
      row: [b.left, b.top, b.right, b.bottom].map(Math.round),
      panel: p ? [p.left, p.top, p.right, p.bottom].map(Math.round) : null,
      maxWidth: panel ? parseFloat(getComputedStyle(panel).maxWidth) : null,
      rowPadding: parseFloat(getComputedStyle(r).paddingLeft)
    };
  });
  await shoot(renderer, shot);
  await chip.click();
  const closed = await renderer.locator('.lens-pack-details').count();
  return { before, after, ...placed, closed };
}

const browser = await chromium.launch({
  executablePath,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
         '--disable-component-update', '--disable-sync']
});
const report = { golden: {}, fallback: {} };
const VISIBLE = '.jp-NotebookPanel:not(.lm-mod-hidden)';
try {
  const page = await browser.newPage({ viewport: { width: 1500, height: 1000 } });
  await openAndRun(page, '02_lifting.ipynb', 3);
  const first = page.locator(`${VISIBLE} .lens-pack-renderer`).first();
  await first.scrollIntoViewIfNeeded();
  report.renderers = await page.locator(`${VISIBLE} .lens-pack-renderer`).count();
  report.summary = await first.locator('.lens-pack-summary').first().textContent();
  report.groupTitles = await first.locator('.lens-pack-group-head').allTextContents();
  report.paramsLanes = await first.locator('.lens-pack-lane[data-collection="params"]').count();
  // Click a lane: the details panel shows its full path.
  await first.locator('.lens-pack-lane[data-collection="params"]').first().click();
  report.details = await first.locator('.lens-pack-details .lens-pack-details-value').allTextContents();
  // The panel sits right under the clicked lane, is short, and no line of it holds
  // only one or two characters (issue 26: a squeezed <dl> showed 'co/ll/ec/ti/on').
  report.panel = await first.locator('.lens-pack-lane.lens-pack-selected').evaluate(row => {
    const panel = row.nextElementSibling;
    const r = row.getBoundingClientRect();
    const p = panel.getBoundingClientRect();
    const narrowLines = [];
    panel.querySelectorAll('*').forEach(n => {
      if (n.children.length || !n.textContent.trim()) return;
      const range = document.createRange();
      range.selectNodeContents(n);
      const lines = new Set(Array.from(range.getClientRects()).map(q => Math.round(q.top)));
      const chars = n.textContent.trim().length;
      if (lines.size > 1 && chars / lines.size <= 2) narrowLines.push(n.textContent);
    });
    return {
      isPanel: panel.classList.contains('lens-pack-details'),
      gap: Math.round(p.top - r.bottom),
      height: Math.round(p.height),
      rows: panel.querySelectorAll('.lens-pack-details-key').length,
      narrowLines
    };
  });
  report.htmlFallbackShown = await page.locator(`${VISIBLE} .jp-OutputArea-output.jp-RenderedHTMLCommon`).count();
  await shoot(first, '02_lifting_first.png');

  await openAndRun(page, 'e2e_extra.ipynb', 2);
  report.errorText = await page.locator(`${VISIBLE} .lens-pack-error`).first().textContent();
  const scan = page.locator(`${VISIBLE} .lens-pack-renderer`).last();
  report.scanRenderMs = Number(await scan.getAttribute('data-render-ms'));
  report.scanLanes = await scan.locator('.lens-pack-lane:not(.lens-pack-lane-head)').count();

  // The golden payloads (stored outputs, no kernel needed) at two widths, light and
  // dark: the notebook opened once, alone across the window, as a user reading it
  // has it; the theme and width switched in place.
  await openAlone(page, 'golden.ipynb', '.lens-pack-renderer .lens-pack', goldenNames.length);
  for (const [width, theme] of [[600, 'light'], [1200, 'light'], [600, 'dark'], [1200, 'dark']]) {
    await setTheme(page, theme);
    await setWidth(page, width);
    await shoot(page, `lab-${width}${theme === 'dark' ? '-dark' : ''}.png`);
    const renderers = page.locator(`${VISIBLE} .lens-pack-renderer`);
    for (let i = 0; i < goldenNames.length; i++) {
      const r = renderers.nth(i);
      await r.scrollIntoViewIfNeeded();
      const key = `${goldenNames[i]}@${width}${theme === 'dark' ? '-dark' : ''}`;
      report.golden[key] = await r.locator('.lens-pack').evaluate(measure);
      report.golden[key].contrast = await r.locator('.lens-pack').evaluate(lowContrast);
      await shoot(r, `${goldenNames[i].replace('.json', '')}-${width}${theme === 'dark' ? '-dark' : ''}.png`);
    }
  }

  // Issue 43: the golden payloads at the cell widths readers have: 400, 600 and
  // 1600 px (side panels shut, the window sized to give that cell), and a 1200 px
  // window with the file browser open (about 768 px, the usual laptop layout).
  // At each: no clipped text, nothing outside the renderer, no word broken that
  // fits a line, every path on one line with its name whole; a chip's details
  // open below its row of chips.
  await setTheme(page, 'light');
  report.cells = {};
  report.chipClicks = {};
  const renderers = page.locator(`${VISIBLE} .lens-pack-renderer`);
  const cellWidth = () => renderers.first().locator('.lens-pack').evaluate(n => n.getBoundingClientRect().width);
  await setWidth(page, 1200);
  const chrome = 1200 - (await cellWidth());
  for (const cell of [400, 600, 1600, 'file browser']) {
    if (cell === 'file browser') {
      await setWidth(page, 1200);
      await page.evaluate(() => window.jupyterapp.shell.activateById('filebrowser'));
      await page.waitForFunction(() => !window.jupyterapp.shell.leftCollapsed, null, { timeout: 30000 });
      await setWidth(page, 1200);
    } else {
      // JupyterLab's chrome around a cell is not the same at every window width.
      await setWidth(page, Math.round(cell + chrome));
      const off = cell - (await cellWidth());
      if (Math.abs(off) > 4) await setWidth(page, Math.round(cell + chrome + off));
    }
    const tag = cell === 'file browser' ? 'filebrowser-1200' : String(cell);
    for (let i = 0; i < goldenNames.length; i++) {
      const r = renderers.nth(i);
      await r.scrollIntoViewIfNeeded();
      const key = `${goldenNames[i]}@${tag}`;
      report.cells[key] = await r.locator('.lens-pack').evaluate(cellFaults);
      if (await r.locator('.lens-pack-chip').count()) {
        report.chipClicks[key] = await chipClick(r, `chip-click-${goldenNames[i].replace('.json', '')}-${tag}.png`);
      }
      await shoot(r, `cell-${tag}-${goldenNames[i].replace('.json', '')}.png`);
    }
  }
  await page.evaluate(() => window.jupyterapp.shell.collapseLeft());

  // Every kind of lens text/html output, stored in a notebook opened as a fresh
  // clone has it (untrusted), at two widths, light and dark: contrast, tables that
  // scroll inside their output at 600 px, the diff's chart drawn once, screenshots.
  if (process.env.SAMPLES) {
    const names = JSON.parse(process.env.SAMPLES);
    report.samples = {};
    await openAlone(page, 'samples.ipynb', '.jp-OutputArea-output .lens', names.length);
    for (const theme of ['dark', 'light']) {
      await setTheme(page, theme);
      for (const width of [600, 1200]) {
        await setWidth(page, width);
        const outs = page.locator(`${VISIBLE} .jp-OutputArea-output:has(.lens)`);
        for (let i = 0; i < names.length; i++) {
          const o = outs.nth(i);
          await o.scrollIntoViewIfNeeded();
          const key = `${names[i]}@${width}-${theme}`;
          report.samples[key] = await o.evaluate((n, fn) => {
            const lens = n.querySelector('.lens');
            const cs = getComputedStyle(lens);
            return {
              contrast: eval(`(${fn})`)(lens),
              overflowX: cs.overflowX,
              scrolls: lens.scrollWidth > lens.clientWidth + 1,
              wider: n.getBoundingClientRect().right > document.documentElement.clientWidth + 1,
              sparks: lens.querySelectorAll('.spark').length
            };
          }, lowContrast.toString());
          await shoot(o, `${names[i]}-${width}-${theme}.png`);
        }
        report.samples[`page@${width}-${theme}`] = await page.evaluate(() => ({
          docScroll: document.documentElement.scrollWidth > document.documentElement.clientWidth,
          trusted: window.jupyterapp.shell.currentWidget.content.widgets.map(c => c.model.trusted)
        }));
      }
    }
  }

  // lens's text/html outputs through JupyterLab's own sanitizer (what an untrusted
  // notebook shows): every element keeps every inline style declaration.
  if (process.env.LENS_HTML) {
    const samples = JSON.parse(readFileSync(process.env.LENS_HTML, 'utf8'));
    report.sanitized = await page.evaluate(samples => {
      const sanitizer = window.jupyterapp.shell.currentWidget.content.rendermime.sanitizer;
      const styles = html => {
        const doc = new DOMParser().parseFromString(`<body>${html}</body>`, 'text/html');
        return Array.from(doc.body.querySelectorAll('*')).map(n => `${n.tagName}{${n.style.cssText}}`);
      };
      const out = {};
      for (const [name, html] of Object.entries(samples)) {
        const before = styles(html);
        const after = styles(sanitizer.sanitize(html));
        const lost = before.filter((x, i) => after[i] !== x).slice(0, 5);
        // The same output trusted (as lens wrote it) and untrusted (sanitized), side
        // by side in a notebook output area: every element's box must be the same.
        const area = document.querySelector('.jp-OutputArea-output');
        const boxes = h => {
          const host = document.createElement('div');
          host.className = 'jp-RenderedHTMLCommon jp-RenderedHTML';
          host.style.width = '560px';
          host.innerHTML = h;
          area.appendChild(host);
          const o = host.getBoundingClientRect();
          const rects = Array.from(host.querySelectorAll('*')).map(n => {
            const r = n.getBoundingClientRect();
            return [Math.round(r.left - o.left), Math.round(r.top - o.top), Math.round(r.width), Math.round(r.height)].join(',');
          });
          host.remove();
          return rects;
        };
        const [t, u] = [boxes(html), boxes(sanitizer.sanitize(html))];
        const moved = t.map((x, i) => (x === u[i] ? null : `${i}: ${x} vs ${u[i]}`)).filter(Boolean).slice(0, 5);
        out[name] = { elements: before.length, kept: after.length, lost, moved, measured: t.length };
      }
      return out;
    }, samples);
  }

  // The script-free HTML alone, as GitHub or nbviewer would show it (no extension, no stylesheet).
  if (fallbackPage) {
    for (const width of [600, 1200]) {
      await page.setViewportSize({ width, height: 1000 });
      await page.setContent(readFileSync(fallbackPage, 'utf8'));
      report.fallback[width] = await page.evaluate(() => ({
        scripts: document.querySelectorAll('script').length,
        overflow: document.documentElement.scrollWidth > document.documentElement.clientWidth,
        text: document.body.innerText
      }));
      await shoot(page, `html-fallback-${width}.png`, { fullPage: true });
    }
  }
} finally {
  await browser.close();
}
console.log(JSON.stringify(report));
