/**
 * DOM rendering of a pack trace. Strings from the payload only ever reach the
 * page through textContent and attributes (never innerHTML), so user names such as
 * `<img src=x onerror=...>` stay text.
 */

import {
  Column,
  PackRecord,
  Problem,
  Trace,
  layoutRecord,
  parsePayload,
  recordAt,
  recordTitle
} from './layout';

function el(tag: string, cls?: string, text?: string): HTMLElement {
  const node = document.createElement(tag);
  if (cls) {
    node.className = cls;
  }
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

/** Renders an error view for a malformed payload. */
export function renderError(host: HTMLElement, message: string): void {
  host.replaceChildren();
  const box = el('div', 'lens-pack-error');
  box.appendChild(el('b', undefined, 'lens: cannot draw this pack trace. '));
  box.appendChild(el('span', undefined, message));
  host.appendChild(box);
}

function renderColumns(columns: Column[]): HTMLElement {
  const stages = el('div', 'lens-pack-stages');
  columns.forEach((col, i) => {
    if (i > 0) {
      stages.appendChild(el('div', 'lens-pack-arrow', '→'));
    }
    const c = el('div', 'lens-pack-stage');
    c.dataset.stage = col.stage;
    c.appendChild(el('div', 'lens-pack-stage-title', col.title));
    if (col.items.length === 0) {
      c.appendChild(el('div', 'lens-pack-none', 'none'));
    }
    for (const item of col.items) {
      const row = el('div', 'lens-pack-item');
      row.dataset.key = item.key;
      if (item.collection) {
        row.dataset.collection = item.collection;
      }
      const swatch = el('span', 'lens-pack-swatch');
      swatch.style.background = item.color;
      row.appendChild(swatch);
      row.appendChild(el('span', 'lens-pack-text', item.text));
      if (item.detail) {
        row.appendChild(el('span', 'lens-pack-detail', item.detail));
        row.title = `${item.key} ${item.text} — ${item.detail}`;
      }
      c.appendChild(row);
    }
    stages.appendChild(c);
  });
  return stages;
}

/** Hovering an item highlights the same variable in every stage. */
function wireHover(root: HTMLElement): void {
  root.addEventListener('mouseover', ev => {
    const item = (ev.target as HTMLElement).closest('.lens-pack-item') as HTMLElement | null;
    root.querySelectorAll('.lens-pack-hl').forEach(n => n.classList.remove('lens-pack-hl'));
    if (!item || !item.dataset.key) {
      return;
    }
    root.querySelectorAll('.lens-pack-item').forEach(n => {
      if ((n as HTMLElement).dataset.key === item.dataset.key) {
        n.classList.add('lens-pack-hl');
      }
    });
  });
  root.addEventListener('mouseleave', () => {
    root.querySelectorAll('.lens-pack-hl').forEach(n => n.classList.remove('lens-pack-hl'));
  });
}

/** Interactive view state: which top-level transform, and the drill-in path. */
export class PackView {
  top = 0;
  path: number[] = [];

  constructor(
    readonly host: HTMLElement,
    readonly trace: Trace,
    readonly problems: Problem[] = []
  ) {
    wireHover(host);
  }

  current(): PackRecord | undefined {
    return recordAt(this.trace, this.top, this.path);
  }

  select(top: number): void {
    this.top = top;
    this.path = [];
    this.render();
  }

  drill(child: number): void {
    this.path = [...this.path, child];
    this.render();
  }

  up(depth: number): void {
    this.path = this.path.slice(0, depth);
    this.render();
  }

  render(): void {
    const host = this.host;
    host.replaceChildren();
    const root = el('div', 'lens-pack');
    const packs = this.trace.packs;
    const header = el('div', 'lens-pack-header');
    header.appendChild(el('b', undefined, `Pack trace · ${packs.length} transform${packs.length === 1 ? '' : 's'}`));
    if (packs.length > 1) {
      const picker = document.createElement('select');
      picker.className = 'lens-pack-picker';
      packs.forEach((p, i) => {
        const opt = document.createElement('option');
        opt.value = String(i);
        opt.textContent = `${i + 1}. ${recordTitle(p)}`;
        picker.appendChild(opt);
      });
      picker.value = String(this.top);
      picker.addEventListener('change', () => this.select(Number(picker.value)));
      header.appendChild(picker);
    }
    root.appendChild(header);
    if (this.problems.length) {
      root.appendChild(renderProblems(this.problems));
    }
    const rec = this.current();
    if (!rec) {
      root.appendChild(el('div', 'lens-pack-none', 'No pack calls were recorded.'));
      host.appendChild(root);
      return;
    }
    // Breadcrumb: the transforms we drilled through.
    const crumbs = el('div', 'lens-pack-crumbs');
    const chain: PackRecord[] = [packs[this.top]];
    this.path.forEach(i => chain.push(chain[chain.length - 1].children[i]));
    chain.forEach((r, depth) => {
      if (depth > 0) {
        crumbs.appendChild(el('span', 'lens-pack-sep', ' › '));
      }
      const c = el('button', 'lens-pack-crumb', recordTitle(r));
      c.addEventListener('click', () => this.up(depth));
      crumbs.appendChild(c);
    });
    root.appendChild(crumbs);
    const opts = el('div', 'lens-pack-options', summarizeOptions(rec.options));
    root.appendChild(opts);
    root.appendChild(renderColumns(layoutRecord(rec)));
    if (rec.children.length) {
      const kids = el('div', 'lens-pack-children');
      kids.appendChild(el('span', undefined, 'nested: '));
      rec.children.forEach((child, i) => {
        const b = el('button', 'lens-pack-child', recordTitle(child));
        b.addEventListener('click', () => this.drill(i));
        kids.appendChild(b);
      });
      root.appendChild(kids);
    }
    host.appendChild(root);
  }
}

/** `[["params", 0]]` (a recorded mapping) -> `{params: 0}`. */
export function optionText(v: unknown): string {
  if (Array.isArray(v) && v.length > 0 && v.every(p => Array.isArray(p) && p.length === 2)) {
    return `{${(v as unknown[][]).map(([a, b]) => `${optionText(a)}: ${optionText(b)}`).join(', ')}}`;
  }
  return typeof v === 'string' ? v : JSON.stringify(v);
}

function summarizeOptions(options: Record<string, unknown>): string {
  const keys = ['variable_axes', 'variable_broadcast', 'variable_carry', 'split_rngs', 'length', 'axis_size'];
  const parts: string[] = [];
  for (const k of keys) {
    const v = options[k];
    if (v === undefined || v === null || v === false || (Array.isArray(v) && v.length === 0)) {
      continue;
    }
    parts.push(`${k}=${optionText(v)}`);
  }
  return parts.join(' · ');
}

const SHOWN_PROBLEMS = 10;

/** What could not be drawn, each with its path in the payload. */
function renderProblems(problems: Problem[]): HTMLElement {
  const box = el('details', 'lens-pack-warning');
  const n = problems.length;
  box.appendChild(
    el('summary', undefined, `lens: ${n} part${n === 1 ? '' : 's'} of this trace could not be drawn; the rest is shown.`)
  );
  const list = el('ul');
  for (const p of problems.slice(0, SHOWN_PROBLEMS)) {
    list.appendChild(el('li', undefined, `${p.path}: ${p.message}`));
  }
  if (n > SHOWN_PROBLEMS) {
    list.appendChild(el('li', undefined, `... and ${n - SHOWN_PROBLEMS} more`));
  }
  box.appendChild(list);
  return box;
}

/** Validates and draws; a malformed payload shows the error view. */
export function renderPayload(host: HTMLElement, data: unknown): PackView | null {
  const parsed = parsePayload(data);
  if (!parsed.ok) {
    renderError(host, parsed.error);
    return null;
  }
  const view = new PackView(host, parsed.trace, parsed.problems);
  view.render();
  return view;
}
