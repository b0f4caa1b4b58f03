// Shared by the browser tests (e2e.mjs and tests/e2e/*.mjs): layout checks, each of
// which runs in the page (pass `fn.toString()` and eval it there), and, at the end,
// steps that run in node: `setTheme`, `setWidth` (drive JupyterLab) and `shoot`.

/**
 * WCAG contrast of every visible text under `root`: the text colour, faded by the
 * opacity of it and its ancestors, over the backgrounds of its ancestors blended
 * from the page down. Returns the texts below 4.5:1 (a lone ■ swatch is a graphic,
 * not text, and is skipped).
 */
export function lowContrast(root) {
  const parse = c => {
    const m = /rgba?\(([^)]+)\)/.exec(c || '');
    if (!m) return null;
    const p = m[1].split(/[\s,/]+/).filter(Boolean).map(Number);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
  };
  const over = (top, under) => [0, 1, 2].map(i => top[i] * top[3] + under[i] * (1 - top[3])).concat([1]);
  const lum = c => {
    const f = v => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
  };
  const low = [];
  let checked = 0;
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const t = walker.currentNode;
    const text = t.textContent.trim();
    const el = t.parentElement;
    if (!text || text === '\u25a0' || !el || !el.getClientRects().length) continue;
    const chain = [];
    for (let n = el; n; n = n.parentElement) chain.push(n);
    let bg = [255, 255, 255, 1];
    let alpha = 1;
    for (const n of chain.reverse()) {
      const cs = getComputedStyle(n);
      const c = parse(cs.backgroundColor);
      if (c && c[3] > 0) bg = over(c, bg);
      alpha *= Number(cs.opacity);
    }
    const fg = parse(getComputedStyle(el).color);
    const seen = over([fg[0], fg[1], fg[2], fg[3] * alpha], bg);
    const [a, b] = [lum(seen), lum(bg)].sort((x, y) => y - x);
    const ratio = (a + 0.05) / (b + 0.05);
    checked++;
    if (ratio < 4.5) low.push(`${text.slice(0, 40)} (${ratio.toFixed(2)})`);
  }
  return { checked, low: low.slice(0, 10) };
}

/**
 * The computed layout of everything under `root`: per element its tag, box
 * (relative to `root`), the styles that decide how it reads, and its own text.
 * Two renderings of the same output look alike exactly when these lists are equal.
 */
export function layoutOf(root) {
  const o = root.getBoundingClientRect();
  const keys = ['color', 'backgroundColor', 'fontFamily', 'fontSize', 'fontWeight', 'fontStyle',
                'opacity', 'textAlign', 'whiteSpace', 'overflowX', 'display', 'textDecorationLine'];
  return Array.from(root.querySelectorAll('*')).map(n => {
    const r = n.getBoundingClientRect();
    const cs = getComputedStyle(n);
    const own = Array.from(n.childNodes).filter(c => c.nodeType === 3).map(c => c.textContent).join('').trim();
    return [n.tagName, Math.round(r.left - o.left), Math.round(r.top - o.top), Math.round(r.width),
            Math.round(r.height), ...keys.map(k => cs[k]), own.slice(0, 40)].join('|');
  });
}

/**
 * What a broken picture shows: texts wider than their box (clipped or spilling
 * out), and lines that hold only one or two characters of a longer text (a column
 * squeezed to nothing). Tables' cells may overflow only into a scrolling parent.
 */
export function brokenText(root) {
  const clipped = [];
  const narrow = [];
  root.querySelectorAll('*').forEach(n => {
    const cs = getComputedStyle(n);
    const scrolls = cs.overflowX === 'auto' || cs.overflowX === 'scroll';
    if (!scrolls && n.clientWidth > 0 && n.scrollWidth > n.clientWidth + 1 && cs.overflowX !== 'visible') {
      clipped.push(`${n.tagName}: ${n.textContent.slice(0, 60)} (${n.scrollWidth} > ${n.clientWidth})`);
    }
    for (const c of n.childNodes) {
      const text = c.nodeType === 3 ? c.textContent.trim() : '';
      if (text.length < 6) continue;
      const range = document.createRange();
      range.selectNodeContents(c);
      const lines = new Set(Array.from(range.getClientRects()).map(q => Math.round(q.top)));
      if (lines.size > 1 && text.length / lines.size <= 2) narrow.push(text.slice(0, 40));
    }
  });
  const r = root.getBoundingClientRect();
  const page = document.documentElement.clientWidth;
  if (r.right > page + 1) clipped.push(`output wider than the page (${r.right} > ${page})`);
  return { clipped: clipped.slice(0, 10), narrow: narrow.slice(0, 10) };
}

/** `notebook` open and ready in JupyterLab at `base`, in a workspace of its own
 * (scripts that share one server would otherwise restore each other's tabs); returns
 * the page it is open in, which is a new one when `page` had a notebook open.
 * Each notebook gets a fresh page: a page that leaves JupyterLab can hang in its
 * unload (unsaved changes ask first; a renderer still busy drawing never answers),
 * and then every later goto on it times out. The page left is closed without
 * asking, and its notebook's kernel shut down. Under load a page can come up
 * without opening the notebook: it is opened again, in a fresh page. */
export async function openInLab(page, base, workspace, notebook) {
  for (let attempt = 1; ; attempt++) {
    if (page.url() !== 'about:blank') page = await freshPage(page, base);
    page.__lensNotebook = notebook;
    try {
      // not 'load': under load a page's last resource can take minutes, and the
      // app's own readiness is what is waited for next
      await page.goto(`${base}/lab/workspaces/${workspace}/tree/${notebook}`, {
        timeout: 60000,
        waitUntil: 'domcontentloaded'
      });
      await page.waitForFunction(
        nb => {
          const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
          return w && w.context && w.context.path === nb && w.context.isReady;
        },
        notebook,
        { timeout: 120000 }
      );
      return page;
    } catch (error) {
      if (attempt >= 4) throw error;
      console.error(`openInLab: ${notebook}, attempt ${attempt}: ${error.message.split('\n')[0]}`);
    }
  }
}

/** A new page the size of `page`, which is closed (without its unload handlers)
 * once the kernel of the notebook it had open is shut down. */
async function freshPage(page, base) {
  const viewport = page.viewportSize();
  const left = page.__lensNotebook;
  if (left) {
    try {
      const sessions = await (await fetch(`${base}/api/sessions`, { signal: AbortSignal.timeout(15000) })).json();
      for (const s of sessions.filter(s => s.path === left)) {
        await fetch(`${base}/api/sessions/${s.id}`, { method: 'DELETE', signal: AbortSignal.timeout(15000) });
      }
    } catch (error) {
      console.error(`openInLab: the kernel of ${left} was not shut down: ${error.message}`);
    }
  }
  const fresh = await page.context().browser().newPage(viewport ? { viewport } : {});
  await page.close({ runBeforeUnload: false });
  return fresh;
}

/** JupyterLab's light or dark theme, once the page has it. */
export async function setTheme(page, theme) {
  // Asked again while it has not applied: under load JupyterLab can take the
  // command before its theme manager has loaded the theme, and then drop it.
  const name = theme === 'dark' ? 'JupyterLab Dark' : 'JupyterLab Light';
  const applied = d => document.body.dataset.jpThemeLight === (d ? 'false' : 'true');
  for (let attempt = 1; ; attempt++) {
    await page.evaluate(t => window.jupyterapp.commands.execute('apputils:change-theme', { theme: t }), name);
    try {
      await page.waitForFunction(applied, theme === 'dark', { timeout: 30000 });
      return;
    } catch (error) {
      if (attempt >= 6) throw error;
    }
  }
}

/** The window at `width` px, once JupyterLab has laid out every panel again. */
export async function setWidth(page, width) {
  await page.setViewportSize({ width, height: 1000 });
  await page.waitForFunction(
    w => window.innerWidth === w && window.jupyterapp.shell.currentWidget.node.getBoundingClientRect().right <= w,
    width,
    { timeout: 30000 }
  );
  // Lumino lays out on animation frames: two frames, then the page is still.
  await page.evaluate(() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r))));
  await page.waitForTimeout(300);
}

/**
 * A screenshot of `target` (a page or a locator) as `$SHOTS/name`, when the test asks
 * for them ($SHOTS set: `LENS_SCREENSHOTS=1`); otherwise nothing. The checks never
 * read a screenshot: they are for a person to look at.
 */
export async function shoot(target, name, options = {}) {
  if (process.env.SHOTS) await target.screenshot({ ...options, path: `${process.env.SHOTS}/${name}` });
}
