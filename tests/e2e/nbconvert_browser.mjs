// Notebooks converted by `jupyter nbconvert --to html` (what GitHub-like hosts and a
// docs site show), opened in Debian's Chromium at 600 and 1200 px. Driven by
// tests/e2e/test_nbconvert_browser.py; prints one JSON report on stdout. When $SHOTS
// is set, screenshots go to $SHOTS/nbconvert-<name>-<width>.png (the page) and
// -<i>.png (each lens output).
const { chromium } = await import(process.env.PLAYWRIGHT);
const { lowContrast, brokenText, shoot } = await import(process.env.MEASURE);

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking']
});
const report = {};
try {
  const page = await browser.newPage({ viewport: { width: 1200, height: 1000 } });
  for (const file of JSON.parse(process.env.NBCONVERT)) {
    for (const width of [600, 1200]) {
      await page.setViewportSize({ width, height: 1000 });
      await page.goto(`file://${file}`);
      const name = file.split('/').pop().replace('.html', '');
      report[`${name}@${width}`] = await page.evaluate(fns => {
        const [contrast, broken] = fns.map(f => eval(`(${f})`));
        const roots = Array.from(document.querySelectorAll('.jp-OutputArea-output .lens'));
        const low = [];
        const clipped = [];
        const narrow = [];
        let checked = 0;
        for (const r of roots) {
          const c = contrast(r);
          checked += c.checked;
          low.push(...c.low);
          const b = broken(r);
          clipped.push(...b.clipped);
          narrow.push(...b.narrow);
        }
        return {
          outputs: roots.length,
          docScroll: document.documentElement.scrollWidth > document.documentElement.clientWidth,
          scrollable: roots.every(r => getComputedStyle(r).overflowX === 'auto'),
          packs: roots.filter(r => r.textContent.includes('outer value')).length,
          headers: roots.filter(r => /^Pack trace · \d+ transforms? · \d+ variable lanes?/.test(r.textContent)).length,
          nnx: roots.filter(r => /Param/.test(r.textContent)).length,
          checked,
          low: low.slice(0, 10),
          clipped: clipped.slice(0, 10),
          narrow: narrow.slice(0, 10)
        };
      }, [lowContrast.toString(), brokenText.toString()]);
      await shoot(page, `nbconvert-${name}-${width}.png`);
      // each lens output alone, to look at
      const outs = page.locator('.jp-OutputArea-output:has(.lens)');
      const n = process.env.SHOTS ? await outs.count() : 0;
      for (let i = 0; i < n; i++) await shoot(outs.nth(i), `nbconvert-${name}-${width}-${i}.png`);
    }
  }
} finally {
  await browser.close();
}
console.log(JSON.stringify(report));
