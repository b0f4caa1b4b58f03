// A live training view in a real JupyterLab: driven by tests/e2e/test_live_browser.py,
// which starts JupyterLab with a notebook holding two training loops. Prints one
// JSON report on stdout; screenshots go to $SHOTS when it is set.
const { chromium } = await import(process.env.PLAYWRIGHT);
const { setTheme, setWidth, shoot } = await import(process.env.MEASURE);
import { readFileSync } from 'fs';

const base = process.env.LAB_URL;
const shots = process.env.SHOTS;
const VISIBLE = '.jp-NotebookPanel:not(.lm-mod-hidden)';

async function openNotebook(page, notebook) {
  // A workspace of its own: the scripts run side by side on one server, and the
  // default workspace would restore the tabs another script has open.
  await page.goto(`${base}/lab/workspaces/live/tree/${notebook}`);
  await page.waitForFunction(
    nb => {
      const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
      return w && w.context && w.context.path === nb && w.sessionContext;
    },
    notebook,
    { timeout: 120000 }
  );
  await page.evaluate(() => {
    window.jupyterapp.shell.collapseLeft();
    window.jupyterapp.shell.collapseRight();
  });
}

// Every 50 ms while the notebook runs: per code cell, how many outputs it has and
// the live output's text; so the test sees frames replace each other in place.
function watchOutputs() {
  window.__live = { samples: [], maxOutputs: {} };
  window.__liveTimer = setInterval(() => {
    const cells = document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell');
    cells.forEach((cell, i) => {
      const outs = cell.querySelectorAll('.jp-OutputArea-child');
      const m = window.__live.maxOutputs;
      m[i] = Math.max(m[i] || 0, outs.length);
      const lens = cell.querySelector('.jp-OutputArea-output .lens');
      if (lens) window.__live.samples.push({ cell: i, outputs: outs.length, text: lens.innerText.slice(0, 400) });
    });
  }, 50);
}

// A shot of what is on screen now: an element shot would wait for the element to
// stop changing, that is for the loop to end.
async function shootNow(page, locator, name) {
  if (!shots) return;
  const path = `${shots}/${name}`;
  const t0 = Date.now();
  const before = await locator.evaluate(n => { n.scrollIntoView({ block: 'start' }); return n.innerText.slice(0, 80); });
  (report.shots = report.shots || []).push({ path, before, t: Date.now() - t0 });
  const box = await locator.boundingBox();
  const view = page.viewportSize();
  const height = Math.min(Math.max(box.height, 20), view.height - Math.max(box.y, 0));
  await page.screenshot({ path, clip: { x: box.x, y: Math.max(box.y, 0), width: box.width, height } });
  report.shots[report.shots.length - 1].after = Date.now() - t0;
}

// What a person reads off the final picture: every element that is wider than its
// box without a scrollbar to show the rest, and per chart and heatmap what it says
// (tick labels and where they are, legend names, points, the colour scale).
async function measure(root) {
  const overflow = [];
  const check = n => {
    const scrolls = ['auto', 'scroll'].includes(getComputedStyle(n).overflowX) && n !== root;
    if (!scrolls && n.clientWidth > 0 && n.scrollWidth > n.clientWidth + 1) {
      overflow.push(`${n.className || n.tagName}: ${n.textContent.slice(0, 60)} (${n.scrollWidth} > ${n.clientWidth})`);
    }
  };
  check(root);
  root.querySelectorAll('*').forEach(check);
  const area = root.closest('.jp-OutputArea-output') || root.parentElement;
  const r = root.getBoundingClientRect();
  const a = area.getBoundingClientRect();
  if (r.right > a.right + 1) overflow.push(`wider than its output area (${r.right} > ${a.right})`);
  const boxes = Array.from(root.querySelectorAll('.lens-live-chart, .lens-live-heat')).map(n => {
    const b = n.getBoundingClientRect();
    return { right: Math.round(b.right), width: Math.round(b.width) };
  });
  const outside = boxes.filter(b => b.right > a.right + 1);
  if (outside.length) overflow.push(`${outside.length} charts past the output area`);
  const box = n => { const q = n.getBoundingClientRect(); return { left: q.left, right: q.right, top: q.top, bottom: q.bottom }; };
  const ticks = (chart, axis) => Array.from(chart.querySelectorAll(`${axis} .lens-live-tick`)).map(t => {
    const q = t.getBoundingClientRect();
    const inner = t.firstElementChild ? t.firstElementChild.getBoundingClientRect() : q;
    return { text: t.innerText.trim(), x: (inner.left + inner.right) / 2, y: (q.top + q.bottom) / 2,
             left: inner.left, right: inner.right, visible: q.height > 0 || inner.width > 0 };
  });
  const charts = [];
  for (const chart of root.querySelectorAll('.lens-live-chart')) {
    const plot = chart.querySelector('.lens-live-plot');
    const img = chart.querySelector('img.lens-live-lines');
    if (img) await img.decode().catch(() => null);
    // The lines as drawn: between two neighbouring points of a sparse series, the
    // pixel halfway along a straight segment has the series' colour.
    const points = Array.from(chart.querySelectorAll('.lens-live-point')).map(p => {
      const q = p.getBoundingClientRect();
      return [(q.left + q.right) / 2, (q.top + q.bottom) / 2, getComputedStyle(p).backgroundColor];
    });
    const midpoints = [];
    if (img && img.naturalWidth) {
      const ib = img.getBoundingClientRect();
      const c = document.createElement('canvas');
      c.width = Math.round(ib.width);
      c.height = Math.round(ib.height);
      const ctx = c.getContext('2d');
      ctx.drawImage(img, 0, 0, c.width, c.height);
      for (let i = 1; i < points.length; i++) {
        const x = (points[i - 1][0] + points[i][0]) / 2 - ib.left;
        const y = (points[i - 1][1] + points[i][1]) / 2 - ib.top;
        const d = ctx.getImageData(Math.round(x) - 1, Math.round(y) - 1, 3, 3).data;
        let hit = false;
        for (let k = 0; k < d.length; k += 4) hit = hit || (d[k + 3] > 128 && d[k] > 180 && d[k + 2] < 120);
        midpoints.push(hit);
      }
    }
    charts.push({
      title: chart.querySelector('b').innerText,
      log: /log scale/.test(chart.innerText),
      plot: box(plot),
      y: ticks(chart, '.lens-live-yaxis'),
      x: ticks(chart, '.lens-live-xaxis'),
      legend: Array.from(chart.querySelectorAll('.lens-live-name')).map(n => n.innerText.trim()),
      points: points.length,
      midpoints,
      image: img ? { complete: img.complete, width: img.naturalWidth, box: box(img) } : null
    });
  }
  const heatmaps = Array.from(root.querySelectorAll('.lens-live-heat')).map(h => {
    const scale = h.querySelector('.lens-live-scale');
    const bar = scale && Array.from(scale.querySelectorAll('div')).find(d => /gradient/.test(getComputedStyle(d).backgroundImage));
    return {
      rows: Array.from(h.querySelectorAll('.lens-live-row')).map(n => n.innerText.trim()),
      ticks: Array.from(h.querySelectorAll('.lens-live-tick')).map(n => n.innerText.trim()),
      lo: scale ? scale.querySelector('.lens-live-scale-lo').innerText : null,
      hi: scale ? scale.querySelector('.lens-live-scale-hi').innerText : null,
      bar: bar ? box(bar) : null,
      text: h.innerText.slice(0, 300)
    };
  });
  return {
    width: Math.round(r.width),
    overflow,
    charts,
    heatmaps,
    text: root.innerText.slice(0, 2000)
  };
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
         '--disable-component-update', '--disable-sync']
});
const report = { final: {} };
globalThis.report = report;
try {
  const page = await browser.newPage({ viewport: { width: 1200, height: 1000 } });
  await openNotebook(page, 'live.ipynb');
  await page.evaluate(async () => { await window.jupyterapp.shell.currentWidget.sessionContext.ready; });
  await page.evaluate(() => window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs'));
  await page.evaluate(watchOutputs);
  // Not awaited in the page: run-all's promise settles only when every cell is done.
  await page.evaluate(() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); });
  // While the first loop runs: a frame with curves, shot as it is drawn.
  await page.waitForFunction(
    () => window.__live.samples.some(s => s.cell === 0 && Number((s.text.match(/(\d+)\/80 steps/) || [])[1]) >= 30 && !/done/.test(s.text)),
    null, { timeout: 180000, polling: 100 });
  await shootNow(page, page.locator(`${VISIBLE} .jp-CodeCell`).first().locator('.jp-OutputArea'), 'live-running.png');
  // The second cell's slow first call: the compile indicator, shot while it counts.
  await page.waitForFunction(
    () => window.__live.samples.some(s => s.cell === 1 && /compiling slow_step: [3-9]/.test(s.text)),
    null, { timeout: 180000, polling: 100 });
  await shootNow(page, page.locator(`${VISIBLE} .jp-CodeCell`).nth(1).locator('.jp-OutputArea'), 'live-compiling.png');
  await page.waitForFunction(
    () => {
      const w = window.jupyterapp.shell.currentWidget;
      const k = w.sessionContext.session && w.sessionContext.session.kernel;
      const done = document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell')[1]
        .querySelectorAll('.jp-OutputArea-output .lens').length;
      return done >= 1 && k && k.status === 'idle' && window.__live.samples.some(s => s.cell === 1 && /done/.test(s.text));
    },
    null, { timeout: 180000, polling: 200 });
  await page.evaluate(() => clearInterval(window.__liveTimer));
  const log = await page.evaluate(() => window.__live);
  report.maxOutputs = log.maxOutputs;
  report.whileRunning = log.samples.filter(s => s.cell === 0 && !/done/.test(s.text)).map(s => s.outputs);
  report.stepsSeen = Array.from(new Set(log.samples.filter(s => s.cell === 0)
    .map(s => (s.text.match(/(\d+)\/80 steps/) || [])[1]).filter(Boolean).map(Number))).sort((a, b) => a - b);
  report.compilingSeen = log.samples.filter(s => /compiling slow_step/.test(s.text)).map(s => s.text.match(/compiling slow_step: [^\n]*/)[0]);
  // Saved (the command's promise settles once the server has the file): the test
  // reads the notebook from disk.
  await page.evaluate(() => window.jupyterapp.commands.execute('docmanager:save'));
  await page.waitForFunction(() => !window.jupyterapp.shell.currentWidget.context.model.dirty, null, { timeout: 30000 });

  for (const [width, theme] of [[600, 'light'], [600, 'dark'], [1200, 'light'], [1200, 'dark']]) {
    await setTheme(page, theme);
    await setWidth(page, width);
    const key = `${width}${theme === 'dark' ? '-dark' : ''}`;
    const finals = page.locator(`${VISIBLE} .jp-CodeCell .jp-OutputArea-output .lens`);
    report.final[key] = [];
    for (let i = 0; i < await finals.count(); i++) {
      const f = finals.nth(i);
      await f.scrollIntoViewIfNeeded();
      report.final[key].push(await f.evaluate(measure));
      await shoot(f, `live-final-${i}-${key}.png`);
    }
  }

  // The final picture through JupyterLab's sanitizer (an untrusted, reopened notebook).
  const html = JSON.parse(readFileSync(process.env.FINAL_HTML, 'utf8'));
  report.sanitized = await page.evaluate(html => {
    const sanitizer = window.jupyterapp.shell.currentWidget.content.rendermime.sanitizer;
    const kept = h => Array.from(new DOMParser().parseFromString(`<body>${h}</body>`, 'text/html').body.querySelectorAll('*'))
      .map(n => `${n.tagName}{${n.style.cssText}}${['src', 'title', 'class'].map(a => n.getAttribute(a) || '').join('|')}`);
    const before = kept(html);
    const after = kept(sanitizer.sanitize(html));
    return { elements: before.length, kept: after.length, images: before.filter(x => x.startsWith('IMG')).length,
             lost: before.filter((x, i) => after[i] !== x).slice(0, 5).map(x => x.slice(0, 300)) };
  }, html);
} finally {
  await browser.close();
}
console.log(JSON.stringify(report));
