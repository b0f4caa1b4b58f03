/**
 * DOM rendering of a pack trace: one box per transform (nested transforms as nested
 * boxes with a breadcrumb back out), in each box one lane per variable grouped by
 * filter group — outer value, inner value, how it was lifted, what came back — then
 * the rng streams. A filter box, collapsible groups and a details panel keep large
 * traces readable. Technical terms in the captions (`carried step to step`, `split
 * along axis 0`, `broadcast`, ...) are underlined with dots where the picture first
 * says them and hold their plain words as hover text (`glossary.ts`), as in lens's
 * script-free HTML.
 *
 * Strings from the payload only ever reach the page through textContent and
 * attributes (never innerHTML), so user names such as `<img src=x onerror=...>`
 * stay text.
 */

import {
  Axes,
  FILTER_BOX_LANES,
  Lane,
  OPEN_GROUP_LANES,
  PackRecord,
  Problem,
  Spec,
  Trace,
  allRecords,
  collectionColor,
  laneDetails,
  laneColumns,
  laneGroups,
  laneMatches,
  outerOf,
  parsePayload,
  pathPieces,
  recordTitle,
  shapeParts,
  sharedNote,
  startsOpen
} from './layout';
import { Gloss, Term } from './glossary';

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

/** A shape, its mapped dimension in a highlighted `<b>`. */
function shapeNode(spec: Spec | null, axis: number | null, cls: string): HTMLElement {
  const node = el('span', cls);
  for (const part of shapeParts(spec, axis)) {
    if (part.mapped) {
      const b = el('b', 'lens-pack-axis', part.text);
      b.title = `the axis the transform maps or scans over`;
      node.appendChild(b);
    } else {
      // A shape breaks after its commas (dimensions and axis names), never inside a name.
      for (const piece of part.text.split(/(?<=,)/)) {
        node.appendChild(document.createTextNode(piece));
        if (piece.endsWith(',')) {
          node.appendChild(document.createElement('wbr'));
        }
      }
    }
  }
  return node;
}

/**
 * A path on one line that never breaks inside a name: each segment a flex item
 * that gives way with an ellipsis when the line is too narrow, in the order
 * `pathPieces` ranks them (the muted prefix and the segments between first, the
 * variable's own name last); the slashes always show. The text is the whole path
 * (and so is `title`): the filter, copying and screen readers get all of it, and
 * the details panel shows it in full.
 */
function pathNode(path: string, muted = 0, title = path): HTMLElement {
  const node = el('span', 'lens-pack-name');
  node.title = title;
  for (const piece of pathPieces(path, muted)) {
    const span = el('span', piece.role === 'slash' ? 'lens-pack-slash' : `lens-pack-seg lens-pack-seg-${piece.role}`);
    if (piece.role !== 'slash' && piece.text.length > 2) {
      span.classList.add('lens-pack-seg-gives');
      // Flex shrinks each in proportion to factor x width: factors 1e6 apart make
      // the ranks give way one after another, the next rank's share below a layout
      // unit (none below 1: flex would stop short).
      span.style.flexShrink = String(1e6 ** Math.min(piece.gives, 5));
    }
    const cut = Math.max(0, Math.min(piece.text.length, muted - piece.start));
    if (piece.muted || (piece.role === 'slash' && cut > 0)) {
      span.classList.add('lens-pack-prefix');
      span.textContent = piece.text;
    } else {
      if (cut > 0) {
        span.appendChild(el('span', 'lens-pack-prefix', piece.text.slice(0, cut)));
      }
      span.appendChild(document.createTextNode(piece.text.slice(cut)));
    }
    node.appendChild(span);
  }
  return node;
}

/** The lifted scope's prefix of a lane's path (drawn muted), in characters. */
function prefixLength(lane: Lane): number {
  const cut = lane.path.length - lane.relative.length;
  return cut > 0 && lane.path.endsWith(lane.relative) ? cut : 0;
}

/** Appends `text` with line-break opportunities after each `/` (textContent unchanged). */
function breakable(node: HTMLElement, text: string): HTMLElement {
  text.split(/(?<=\/)/).forEach((piece, i) => {
    if (i > 0) {
      node.appendChild(document.createElement('wbr'));
    }
    node.appendChild(document.createTextNode(piece));
  });
  return node;
}

/** A term, underlined with dots, its plain words in `title` (what hover shows). */
function termNode(term: Term): HTMLElement {
  const node = el('span', 'lens-pack-term');
  node.title = term.means;
  return node;
}

/**
 * Appends `text` with each term that `gloss` has not explained yet in a term node
 * (textContent unchanged); with `slashes`, lines may break after each `/`.
 */
function glossed(node: HTMLElement, text: string, gloss: Gloss, slashes = false): HTMLElement {
  for (const piece of gloss.pieces(text)) {
    const into = piece.term ? node.appendChild(termNode(piece.term)) : node;
    if (slashes) {
      breakable(into, piece.text);
    } else {
      into.appendChild(document.createTextNode(piece.text));
    }
  }
  return node;
}

function laneRow(lane: Lane, manyRoots: boolean, gloss: Gloss, noteInHead = false): HTMLElement {
  const row = el('div', 'lens-pack-lane');
  row.dataset.key = lane.key;
  row.dataset.collection = lane.collection;
  row.dataset.fate = lane.fate;
  row.tabIndex = 0;
  row.title = laneDetails(lane)
    .map(([k, v]) => `${k}: ${v}`)
    .join('\n');
  const name = el('span', 'lens-pack-path');
  const swatch = el('span', 'lens-pack-swatch');
  swatch.style.background = collectionColor(lane.collection);
  name.appendChild(swatch);
  name.appendChild(el('span', 'lens-pack-col', lane.collection));
  name.appendChild(document.createTextNode(' '));
  name.appendChild(pathNode(lane.path, prefixLength(lane)));
  row.appendChild(name);
  row.appendChild(shapeNode(outerOf(lane), lane.axis, 'lens-pack-outer'));
  row.appendChild(el('span', 'lens-pack-to', '→'));
  row.appendChild(shapeNode(lane.inner, null, 'lens-pack-inner'));
  const how = el('span', 'lens-pack-how');
  if (!noteInHead) {
    how.appendChild(glossed(el('span', 'lens-pack-note'), lane.note, gloss));
    how.appendChild(document.createTextNode(' ')); // the line may break here, not inside a word
  }
  // In a box the commit target is the lifted scope; named per lane only when there are several.
  const fate = el('span', `lens-pack-fate lens-pack-fate-${lane.fate}`, lane.fate);
  fate.title = lane.fate_text;
  how.appendChild(fate);
  if (manyRoots && lane.committed) {
    how.appendChild(el('span', 'lens-pack-committed', ` → ${lane.committed}`));
  }
  row.appendChild(how);
  return row;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** The column heads of a box's lanes, in plain words (no stage numbers). */
function laneHead(): HTMLElement {
  const head = el('div', 'lens-pack-lane lens-pack-lane-head');
  head.appendChild(el('span', 'lens-pack-path', 'variable'));
  head.appendChild(el('span', 'lens-pack-outer', 'outside'));
  head.appendChild(el('span', 'lens-pack-to', '→'));
  head.appendChild(el('span', 'lens-pack-inner', 'inside'));
  head.appendChild(el('span', 'lens-pack-how', 'how it goes in · what came out'));
  return head;
}

/** Interactive view state: the boxes, the filter, the details panel. */
export class PackView {
  query = '';
  /** Which terms the picture has explained (each once, where it first says it). */
  private gloss = new Gloss();
  private boxes: { rec: PackRecord; node: HTMLDetailsElement; crumbs: HTMLDetailsElement[] }[] = [];

  constructor(
    readonly host: HTMLElement,
    readonly trace: Trace,
    readonly problems: Problem[] = []
  ) {
    wireHover(host);
  }

  /** The box drawn for a record (for tests and the breadcrumb). */
  boxOf(rec: PackRecord): HTMLDetailsElement | undefined {
    return this.boxes.find(b => b.rec === rec)?.node;
  }

  render(): void {
    const host = this.host;
    host.replaceChildren();
    this.boxes = [];
    this.gloss = new Gloss();
    const root = el('div', 'lens-pack');
    const packs = this.trace.packs;
    const records = allRecords(this.trace);
    const lanes = records.reduce((n, r) => n + r.lanes.length, 0);
    const header = el('div', 'lens-pack-header');
    header.appendChild(
      el('b', undefined, `Pack trace · ${plural(records.length, 'transform')} · ${plural(lanes, 'variable lane')}`)
    );
    if (lanes > FILTER_BOX_LANES) {
      const box = document.createElement('input');
      box.type = 'search';
      box.className = 'lens-pack-filter';
      box.placeholder = 'filter variables (path, collection, created…)';
      box.setAttribute('aria-label', 'filter variables');
      box.addEventListener('input', () => this.filter(box.value));
      header.appendChild(box);
    }
    root.appendChild(header);
    root.appendChild(legend(this.gloss));
    if (this.problems.length) {
      root.appendChild(renderProblems(this.problems));
    }
    if (!packs.length) {
      root.appendChild(el('div', 'lens-pack-none', 'No pack calls were recorded.'));
    }
    packs.forEach((rec, i) => root.appendChild(this.renderBox(rec, [], 0, i, packs.length)));
    root.addEventListener('click', ev => this.onClick(ev));
    root.addEventListener('keydown', ev => {
      const key = (ev as KeyboardEvent).key;
      if (key === 'Enter') {
        this.onClick(ev);
      } else if (key === 'Escape') {
        this.closeDetails();
      }
    });
    host.appendChild(root);
  }

  private renderBox(
    rec: PackRecord,
    chain: HTMLDetailsElement[],
    depth: number,
    index: number,
    siblings: number
  ): HTMLDetailsElement {
    const box = document.createElement('details');
    box.className = 'lens-pack-box';
    box.dataset.transform = rec.transform;
    box.dataset.depth = String(depth);
    box.open = startsOpen(depth, index, siblings);
    const head = el('summary', 'lens-pack-box-head');
    head.appendChild(el('span', 'lens-pack-badge', rec.transform));
    head.appendChild(glossed(el('span', 'lens-pack-summary'), rec.summary, this.gloss, true));
    box.appendChild(head);
    if (chain.length) {
      const crumbs = el('div', 'lens-pack-crumbs');
      crumbs.appendChild(el('span', 'lens-pack-sep', 'in '));
      chain.forEach((outer, d) => {
        if (d > 0) {
          crumbs.appendChild(el('span', 'lens-pack-sep', ' › '));
        }
        const rec0 = this.boxes.find(b => b.node === outer)!.rec;
        const c = breakable(el('button', 'lens-pack-crumb'), recordTitle(rec0));
        c.title = 'close this box and go back out to that transform';
        c.addEventListener('click', () => {
          box.open = false;
          for (const inner of chain.slice(d + 1)) {
            inner.open = false;
          }
          outer.open = true;
          const target = outer.querySelector('summary') as HTMLElement | null;
          target?.focus?.();
          target?.scrollIntoView?.({ block: 'nearest' });
        });
        crumbs.appendChild(c);
      });
      crumbs.appendChild(el('span', 'lens-pack-sep', ' › '));
      crumbs.appendChild(breakable(el('span', 'lens-pack-here'), recordTitle(rec)));
      box.appendChild(crumbs);
    }
    this.boxes.push({ rec, node: box, crumbs: chain });
    const options = optionsText(rec.options);
    if (options) {
      box.appendChild(el('div', 'lens-pack-options', options));
    }
    if (rec.axes && rec.axes.text) {
      box.appendChild(axesNode(rec.axes, this.gloss));
    }
    const notes = rec.scope_notes.filter(n => !n.root || rec.scope_notes.length > 1);
    for (const n of notes) {
      box.appendChild(glossed(el('div', 'lens-pack-scope'), `${n.path}: ${n.text}`, this.gloss, true));
    }
    const roots = rec.scopes.filter(sc => sc.root).map(sc => sc.path);
    const mutableBack = rec.lanes.some(l => l.committed);
    if (roots.length === 1 && mutableBack) {
      box.appendChild(glossed(el('div', 'lens-pack-scope'), `writes the variables back to ${roots[0]}`, this.gloss, true));
    }
    const groups = rec.passes ? [] : laneGroups(rec);
    if (rec.passes) {
      box.appendChild(passesNode(rec, this.gloss));
    }
    if (groups.length) {
      // How wide each column wants to be and can shrink to; the stylesheet's grid
      // turns them into floors and limits.
      const cols = laneColumns(groups, roots.length > 1);
      box.style.setProperty('--lens-pack-path-w', `${cols.path}ch`);
      for (const k of ['outer', 'inner', 'how'] as const) {
        box.style.setProperty(`--lens-pack-${k}-w`, `${cols[k].wants}ch`);
        box.style.setProperty(`--lens-pack-${k}-min`, `${cols[k].least}ch`);
      }
      box.appendChild(laneHead());
    }
    for (const g of groups) {
      const sec = document.createElement('details');
      sec.className = 'lens-pack-group';
      sec.open = g.lanes.length <= OPEN_GROUP_LANES;
      const title = el('summary', 'lens-pack-group-head');
      title.appendChild(glossed(el('span'), g.title, this.gloss));
      const count = el('span', 'lens-pack-count', ` · ${plural(g.lanes.length, 'variable')}`);
      count.dataset.total = String(g.lanes.length);
      title.appendChild(count);
      // One note for the whole group (e.g. "vmap axis 0, size 3") is said once, here.
      const shared = sharedNote(g);
      if (shared) {
        title.appendChild(glossed(el('span', 'lens-pack-group-note', ' · each '), shared, this.gloss));
      }
      sec.appendChild(title);
      for (const lane of g.lanes) {
        sec.appendChild(laneRow(lane, roots.length > 1, this.gloss, shared !== null));
      }
      box.appendChild(sec);
    }
    for (const r of rec.rng_lanes) {
      const row = el('div', 'lens-pack-rng');
      row.dataset.split = String(r.split);
      row.appendChild(el('span', 'lens-pack-col', 'rng '));
      row.appendChild(el('b', undefined, r.stream));
      row.appendChild(document.createTextNode(': '));
      glossed(row, r.text, this.gloss);
      box.appendChild(row);
    }
    const hidden = [...(rec.hidden_collections ?? []), ...(rec.hidden_rngs ?? []).map(r => `rng ${r}`)];
    if (hidden.length) {
      const line = glossed(el('div', 'lens-pack-none', 'not '), 'lifted', this.gloss);
      line.appendChild(document.createTextNode(`: ${hidden.join(', ')}`));
      box.appendChild(line);
    }
    rec.children.forEach((child, i) =>
      box.appendChild(this.renderBox(child, [...chain, box], depth + 1, i, rec.children.length))
    );
    return box;
  }

  /** Shows only lanes matching `query`; groups say how many of theirs match. */
  filter(query: string): void {
    this.query = query;
    this.host.querySelectorAll('.lens-pack-group').forEach(sec => {
      const rows = Array.from(sec.querySelectorAll(':scope > .lens-pack-lane')) as HTMLElement[];
      let shown = 0;
      for (const row of rows) {
        const lane = this.laneOf(row);
        const ok = !lane || laneMatches(lane, query);
        row.hidden = !ok;
        shown += ok ? 1 : 0;
      }
      const count = sec.querySelector('.lens-pack-count') as HTMLElement;
      const total = Number(count.dataset.total);
      count.textContent = query ? ` · ${shown} of ${plural(total, 'variable')}` : ` · ${plural(total, 'variable')}`;
      if (query && shown) {
        (sec as HTMLDetailsElement).open = true;
      }
    });
  }

  private laneOf(row: HTMLElement): Lane | undefined {
    const box = row.closest('.lens-pack-box');
    const rec = this.boxes.find(b => b.node === box)?.rec;
    return rec?.lanes.find(l => l.key === row.dataset.key);
  }

  /**
   * Clicking a lane opens the details panel right under it, a chip's under its row
   * of chips (clicking it again, or Escape, closes it): the full path, then one
   * key-value row per fact, keys on one line, values wrapping at `/` and `,` only.
   */
  private onClick(ev: Event): void {
    const row = (ev.target as HTMLElement).closest('.lens-pack-lane') as HTMLElement | null;
    if (!row || row.classList.contains('lens-pack-lane-head')) {
      return;
    }
    const lane = this.laneOf(row);
    if (!lane) {
      return;
    }
    const wasOpen = row.classList.contains('lens-pack-selected');
    this.closeDetails();
    if (wasOpen) {
      return;
    }
    const box = row.closest('.lens-pack-box');
    const rec = this.boxes.find(b => b.node === box)?.rec;
    const panel = el('div', 'lens-pack-details');
    panel.setAttribute('role', 'region');
    panel.setAttribute('aria-label', `details of ${lane.path}`);
    const title = breakable(el('div', 'lens-pack-details-title'), lane.path);
    if (rec) {
      title.appendChild(document.createTextNode(` in ${recordTitle(rec)}`));
    }
    panel.appendChild(title);
    const grid = el('div', 'lens-pack-details-grid');
    // The panel explains its own terms (its keys and lens's words, not the names).
    const gloss = new Gloss();
    for (const [k, v] of laneDetails(lane)) {
      grid.appendChild(glossed(el('span', 'lens-pack-details-key'), k, gloss));
      const value = el('span', 'lens-pack-details-value');
      grid.appendChild(GLOSSED_DETAILS.has(k) ? glossed(value, v, gloss, true) : breakable(value, v));
    }
    panel.appendChild(grid);
    // A chip's panel goes below the whole row of chips, across its width.
    (row.classList.contains('lens-pack-chip') ? row.closest('.lens-pack-chips') ?? row : row).after(panel);
    row.classList.add('lens-pack-selected');
    row.setAttribute('aria-expanded', 'true');
  }

  /** Removes the open details panel, if any. */
  closeDetails(): void {
    this.host.querySelectorAll('.lens-pack-details').forEach(n => n.remove());
    this.host.querySelectorAll('.lens-pack-selected').forEach(n => {
      n.classList.remove('lens-pack-selected');
      n.removeAttribute('aria-expanded');
    });
  }
}

/** The details panel's values in lens's words (the others are names and shapes). */
const GLOSSED_DETAILS = new Set(['lifted', 'came back']);

/**
 * `label: ` then each argument (or result part) as a chip: its name in bold, how it
 * goes, the terms explained. A term may take in the name (a scan's `carry from the
 * last step`); one found in the name alone (an argument called `broadcast`) is not.
 */
function argChips(node: HTMLElement, label: string, args: { arg: string; axis: string }[], gloss: Gloss): void {
  node.appendChild(el('span', 'lens-pack-col', `${label}: `));
  args.forEach((a, i) => {
    const chip = el('span', 'lens-pack-arg');
    const bold = a.arg.length;
    let at = 0;
    for (const piece of gloss.pieces(`${a.arg} ${a.axis}`, bold)) {
      const into = piece.term ? chip.appendChild(termNode(piece.term)) : chip;
      const end = at + piece.text.length;
      if (at < bold) {
        into.appendChild(el('b', undefined, piece.text.slice(0, bold - at)));
      }
      if (end > Math.max(at, bold)) {
        into.appendChild(document.createTextNode(piece.text.slice(Math.max(0, bold - at))));
      }
      at = end;
    }
    node.appendChild(chip);
    if (i < args.length - 1) {
      node.appendChild(document.createTextNode(' '));
    }
  });
}

/**
 * `inputs: member split along axis 0, x not split (broadcast) · outputs stacked
 * along axis 0 · axis_name 'batch'`, each argument a chip (lens words the axes); a
 * scan's results part by part: `outputs: carry from the last step, ys stacked ...`.
 */
function axesNode(axes: Axes, gloss: Gloss): HTMLElement {
  const node = el('div', 'lens-pack-axes');
  node.title = axes.text;
  if (axes.in.length) {
    argChips(node, 'inputs', axes.in, gloss);
  }
  const rest: string[] = [];
  if (axes.out_parts && axes.out_parts.length) {
    node.appendChild(document.createTextNode(axes.in.length ? ' · ' : ''));
    argChips(node, 'outputs', axes.out_parts, gloss);
  } else if (axes.out !== null) {
    rest.push(`outputs ${axes.out}`);
  }
  if (axes.name !== null) {
    rest.push(`axis_name '${axes.name}'`);
  }
  if (axes.partition !== null) {
    rest.push(`partition name '${axes.partition}'`);
  }
  if (rest.length) {
    const before = axes.in.length || (axes.out_parts && axes.out_parts.length);
    node.appendChild(glossed(el('span', undefined, before ? ' · ' : ''), rest.join(' · '), gloss));
  }
  return node;
}

/** A pass-through box (jit, remat): what it does, and each variable that flows as a chip. */
function passesNode(rec: PackRecord, gloss: Gloss): HTMLElement {
  const node = el('div', 'lens-pack-passes');
  const line = glossed(el('div', 'lens-pack-passes-text'), rec.passes!.text, gloss);
  line.appendChild(glossed(el('span', 'lens-pack-col', ' · '), rec.passes!.flow, gloss));
  node.appendChild(line);
  const chips = el('div', 'lens-pack-chips');
  for (const lane of rec.lanes) {
    const chip = el('span', `lens-pack-lane lens-pack-chip lens-pack-fate-${lane.fate}`);
    chip.dataset.key = lane.key;
    chip.dataset.collection = lane.collection;
    chip.dataset.fate = lane.fate;
    chip.tabIndex = 0;
    chip.title = laneDetails(lane)
      .map(([k, v]) => `${k}: ${v}`)
      .join('\n');
    const swatch = el('span', 'lens-pack-swatch');
    swatch.style.background = collectionColor(lane.collection);
    chip.appendChild(swatch);
    chip.appendChild(pathNode(lane.relative || lane.path, 0, lane.path));
    chips.appendChild(chip);
  }
  node.appendChild(chips);
  return node;
}

function legend(gloss: Gloss): HTMLElement {
  const box = el('div', 'lens-pack-legend');
  box.appendChild(glossed(el('span'), 'outer value → inner value', gloss));
  box.appendChild(document.createTextNode('; '));
  box.appendChild(el('b', 'lens-pack-axis', 'n'));
  box.appendChild(el('span', undefined, ': the axis mapped or scanned over · '));
  for (const fate of ['created', 'updated', 'dropped', 'unchanged']) {
    box.appendChild(el('span', `lens-pack-fate lens-pack-fate-${fate}`, fate));
    box.appendChild(document.createTextNode(' '));
  }
  box.appendChild(el('span', undefined, '· click a variable for details'));
  return box;
}

/** Hovering a lane highlights the same variable in every box (parent and nested). */
function wireHover(root: HTMLElement): void {
  const clear = () => root.querySelectorAll('.lens-pack-hl').forEach(n => n.classList.remove('lens-pack-hl'));
  root.addEventListener('mouseover', ev => {
    const item = (ev.target as HTMLElement).closest('.lens-pack-lane') as HTMLElement | null;
    clear();
    if (!item || !item.dataset.key) {
      return;
    }
    root.querySelectorAll('.lens-pack-lane').forEach(n => {
      if ((n as HTMLElement).dataset.key === item.dataset.key) {
        n.classList.add('lens-pack-hl');
      }
    });
  });
  root.addEventListener('mouseleave', clear);
}

/** `[["params", 0]]` (a recorded mapping) -> `{params: 0}`. */
export function optionText(v: unknown): string {
  if (Array.isArray(v) && v.length > 0 && v.every(p => Array.isArray(p) && p.length === 2)) {
    return `{${(v as unknown[][]).map(([a, b]) => `${optionText(a)}: ${optionText(b)}`).join(', ')}}`;
  }
  if (typeof v === 'boolean') {
    return v ? 'True' : 'False'; // as the Python text and HTML forms write it
  }
  if (v === null) {
    return 'None';
  }
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/** The options that decide how state is lifted, as `key=value · ...`. */
export function optionsText(options: Record<string, unknown>): string {
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
