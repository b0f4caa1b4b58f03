// Each tour notebook opened in a real JupyterLab, its kernel started as a user's
// would be: is the notebook marked modified before the user did anything? Driven by
// tests/e2e/test_open_clean_browser.py on the shared JupyterLab; prints one JSON
// report on stdout: per notebook, whether it is dirty and the kernel it got.
const { chromium } = await import(process.env.PLAYWRIGHT);

const base = process.env.LAB_URL;
const notebooks = JSON.parse(process.env.NOTEBOOKS);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking']
});
const report = {};
try {
  const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  for (const nb of notebooks) {
    // a workspace of its own: the other scripts share this server
    await page.goto(`${base}/lab/workspaces/open-clean/tree/${nb}`);
    await page.waitForFunction(
      path => {
        const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
        const kernel = w && w.sessionContext && w.sessionContext.session &&
          w.sessionContext.session.kernel;
        return w && w.context && w.context.path === path && w.context.isReady &&
          kernel && kernel.status === 'idle';
      },
      nb,
      { timeout: 120000 }
    );
    // what the kernel's info reply writes (language_info) lands after idle
    await page.waitForTimeout(1500);
    report[nb] = await page.evaluate(async () => {
      const w = window.jupyterapp.shell.currentWidget;
      const out = {
        dirty: w.context.model.dirty,
        kernel: w.sessionContext.session.kernel.name,
        title: w.title.className
      };
      await w.sessionContext.shutdown();
      w.close();
      return out;
    });
  }
} finally {
  await browser.close();
}
console.log(JSON.stringify(report));
