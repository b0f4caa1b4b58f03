/**
 * Pure layout logic for pack traces (schema lens.pack-trace, version 2):
 * validation, the lanes of one pack call grouped by filter group, shapes with the
 * mapped axis marked, filtering, what starts open, colours and navigation.
 * No DOM here, so it is unit-tested directly.
 *
 * lens computes what each lane means (lens/core/_lanes.py: role, axis, size, what
 * came back); this file only arranges it.
 */

import palette from './palette.json';
import { Problem, RECORD_SCHEMA, typeName, validate } from './validate';

export type { Problem } from './validate';

export const MIME_TYPE = 'application/vnd.lens.pack+json';
export const SCHEMA_ID = 'lens.pack-trace';
export const SCHEMA_VERSION = 2;

export interface Spec {
  shape: number[];
  dtype: string;
  box?: string;
  names?: (string | null)[];
}

export interface Variable {
  collection: string;
  scope: number;
  path: string;
  outer: Spec;
  inner: Spec | null;
  axis: string;
}

/** One variable through one transform (lens/core/_lanes.py). */
export interface Lane {
  key: string;
  collection: string;
  path: string;
  relative: string;
  scope: number;
  group: number;
  role: string;
  axis: number | null;
  size: number | null;
  axis_name: string | null;
  outer: Spec | null;
  inner: Spec | null;
  out: Spec | null;
  fate: 'unchanged' | 'updated' | 'created' | 'dropped';
  committed: string | null;
  note: string;
  fate_text: string;
}

export interface RngLane {
  stream: string;
  group: number;
  split: boolean;
  keys: number | null;
  text: string;
}

export interface Group {
  index: number;
  filter: unknown;
  label: string;
  collections: string[];
  variables: Variable[];
}

export interface Entry {
  collection: string;
  scope: number;
  path: string;
  inner?: Spec;
  outer?: Spec;
}

/** How arguments go in and results come out of a mapping or scanning transform. */
export interface Axes {
  in: { arg: string; axis: string }[];
  out: string | null;
  /** a scan's results part by part (the carry, then `ys`); absent in older outputs */
  out_parts?: { arg: string; axis: string }[];
  name: string | null;
  partition: string | null;
  text: string;
}

/** A transform that passes its state through whole (jit, remat): one compact line. */
export interface Passes {
  text: string;
  flow: string;
  keys: string[];
}

export interface PackRecord {
  id: number;
  args?: string[];
  axes?: Axes | null;
  passes?: Passes | null;
  transform: string;
  options: Record<string, unknown>;
  scopes: { path: string; root: boolean; root_index: number; relative_path: string[] }[];
  groups: Group[];
  rngs: { stream: string; group: number; split: boolean; label: string }[];
  hidden_collections?: string[];
  hidden_rngs?: string[];
  repack: { created: Entry[]; mutated: Entry[] };
  commit: Entry[];
  summary: string;
  size: number | null;
  lanes: Lane[];
  rng_lanes: RngLane[];
  scope_notes: { path: string; root: boolean; text: string }[];
  children: PackRecord[];
}

export interface Trace {
  schema: string;
  version: number;
  packs: PackRecord[];
}

export type Parsed =
  | { ok: true; trace: Trace; problems: Problem[] }
  | { ok: false; error: string };

/** Transforms nested deeper than this are not drawn (reported instead). */
export const MAX_NESTING = 64;

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

function label(raw: unknown, where: string): string {
  const t = isObject(raw) && typeof raw.transform === 'string' ? ` (${raw.transform})` : '';
  return `${where}${t}`;
}

/**
 * Validates a payload against the shipped schema. A wrong schema, version or a
 * payload that is not a trace is an error; a malformed pack record is left out
 * (with its nested records) and reported in `problems`, and the rest is drawn.
 */
export function parsePayload(data: unknown): Parsed {
  let doc = data;
  if (typeof doc === 'string') {
    try {
      doc = JSON.parse(doc);
    } catch (e) {
      return { ok: false, error: `the payload is not JSON (${(e as Error).message})` };
    }
  }
  if (!isObject(doc)) {
    return { ok: false, error: `the payload is not a JSON object (got ${typeName(doc)})` };
  }
  if (doc.schema !== SCHEMA_ID) {
    return { ok: false, error: `unknown schema ${JSON.stringify(doc.schema)} (expected "${SCHEMA_ID}")` };
  }
  if (typeof doc.version === 'number' && doc.version < SCHEMA_VERSION) {
    return {
      ok: false,
      error: `this output was drawn by an older lens (trace version ${doc.version}; this extension reads version ${SCHEMA_VERSION}): re-run the cell to draw it again`
    };
  }
  if (doc.version !== SCHEMA_VERSION) {
    return {
      ok: false,
      error: `schema version ${JSON.stringify(doc.version)} is not supported (this extension reads version ${SCHEMA_VERSION}); update lens or the extension`
    };
  }
  if (!Array.isArray(doc.packs)) {
    return { ok: false, error: `the payload has no "packs" list (got ${typeName(doc.packs)})` };
  }
  const problems: Problem[] = [];
  const packs: PackRecord[] = [];
  // Depth first with an explicit stack: any nesting depth is safe.
  const stack: [unknown, string, number, PackRecord[]][] = [];
  for (let i = doc.packs.length - 1; i >= 0; i--) {
    stack.push([doc.packs[i], `packs[${i}]`, 1, packs]);
  }
  let tooDeep = false;
  while (stack.length) {
    const [raw, where, depth, siblings] = stack.pop()!;
    if (depth > MAX_NESTING) {
      if (!tooDeep) {
        problems.push({ path: where, message: `transforms nested deeper than ${MAX_NESTING} levels are not drawn` });
        tooDeep = true;
      }
      continue;
    }
    const found = validate(raw, RECORD_SCHEMA, where, 3);
    if (found.length) {
      const what = found.map(p => `${p.path} ${p.message}`).join('; ');
      problems.push({ path: label(raw, where), message: `left out: ${what}` });
      continue;
    }
    const r = raw as Record<string, unknown>;
    const rec = { ...(r as unknown as PackRecord), children: [] as PackRecord[] };
    siblings.push(rec);
    const kids = r.children as unknown[];
    for (let i = kids.length - 1; i >= 0; i--) {
      stack.push([kids[i], `${where}.children[${i}]`, depth + 1, rec.children]);
    }
  }
  return { ok: true, trace: { schema: SCHEMA_ID, version: SCHEMA_VERSION, packs }, problems };
}

const FIXED: Record<string, string> = palette.fixed;
const OTHERS: string[] = palette.others;

/** The first word of the SHA-1 digest of `bytes` (big-endian, as hex digits 0-7). */
function sha1FirstWord(bytes: Uint8Array): number {
  const padded = new Uint8Array(((bytes.length + 8) >> 6) * 64 + 64);
  padded.set(bytes);
  padded[bytes.length] = 0x80;
  const view = new DataView(padded.buffer);
  view.setUint32(padded.length - 4, bytes.length * 8);
  view.setUint32(padded.length - 8, Math.floor(bytes.length / 0x20000000));
  const h = [0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0];
  const w = new Uint32Array(80);
  for (let block = 0; block < padded.length; block += 64) {
    for (let t = 0; t < 80; t++) {
      const x = t < 16 ? view.getUint32(block + 4 * t) : w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16];
      w[t] = t < 16 ? x : (x << 1) | (x >>> 31);
    }
    let [a, b, c, d, e] = h;
    for (let t = 0; t < 80; t++) {
      const [f, k] =
        t < 20 ? [(b & c) | (~b & d), 0x5a827999]
        : t < 40 ? [b ^ c ^ d, 0x6ed9eba1]
        : t < 60 ? [(b & c) | (b & d) | (c & d), 0x8f1bbcdc]
        : [b ^ c ^ d, 0xca62c1d6];
      const temp = (((a << 5) | (a >>> 27)) + f + e + k + w[t]) >>> 0;
      [e, d, c, b, a] = [d, c, (b << 30) | (b >>> 2), a, temp];
    }
    h[0] = (h[0] + a) >>> 0;
    h[1] = (h[1] + b) >>> 0;
    h[2] = (h[2] + c) >>> 0;
    h[3] = (h[3] + d) >>> 0;
    h[4] = (h[4] + e) >>> 0;
  }
  return h[0];
}

/**
 * One stable colour per collection name, the one lens.display draws: fixed
 * collections from palette.json, any other by the first 6 hex digits of the
 * SHA-1 of its UTF-8 name (Python's `color` in lens/display/_pack.py).
 */
export function collectionColor(name: string): string {
  if (Object.prototype.hasOwnProperty.call(FIXED, name)) {
    return FIXED[name]; // own keys only: "constructor" is an ordinary name
  }
  const top24 = sha1FirstWord(new TextEncoder().encode(name)) >>> 8;
  return OTHERS[top24 % OTHERS.length];
}

export interface ShapePart {
  text: string;
  mapped: boolean;
}

/** The pieces of `f32[8,4,3] ('ens',None,'model')`, the `axis` dimension flagged. */
export function shapeParts(spec: Spec | null | undefined, axis: number | null = null): ShapePart[] {
  if (!spec) {
    return [{ text: '-', mapped: false }];
  }
  if (spec.dtype === 'pytree') {
    const n = ((spec as { leaves?: unknown[] }).leaves ?? []).length;
    return [{ text: `pytree of ${n} leaves`, mapped: false }];
  }
  const dtype = spec.dtype
    .replace(/^bfloat/, 'bf')
    .replace(/^float/, 'f')
    .replace(/^uint/, 'u')
    .replace(/^int/, 'i')
    .replace(/^complex/, 'c');
  const parts: ShapePart[] = [{ text: `${dtype}[`, mapped: false }];
  spec.shape.forEach((d, i) => {
    if (i > 0) {
      parts.push({ text: ',', mapped: false });
    }
    parts.push({ text: String(d), mapped: i === axis });
  });
  parts.push({ text: ']', mapped: false });
  if (spec.names) {
    parts.push({ text: ` (${spec.names.map(n => (n === null ? 'None' : `'${n}'`)).join(',')})`, mapped: false });
  }
  return parts;
}

/** `f32[3,4]` (with axis names when boxed). */
export function shapeText(spec: Spec | null | undefined): string {
  return shapeParts(spec).map(p => p.text).join('');
}

/** The collection names a filter (as recorded in the trace) names; `all` for true. */
export function filterNames(filter: unknown): string[] {
  if (filter === true) {
    return ['all'];
  }
  if (typeof filter === 'string') {
    return [filter];
  }
  if (Array.isArray(filter) && filter.every(x => typeof x === 'string')) {
    return filter as string[];
  }
  return [];
}

/** The outer value a lane shows: what came in, else (created inside) what was committed. */
export function outerOf(lane: Lane): Spec | null {
  return lane.outer ?? lane.out;
}

export interface LaneGroup {
  index: number;
  title: string;
  lanes: Lane[];
}

/** `params: axis 0` — the filter and how its group is lifted. */
export function groupTitle(rec: PackRecord, index: number): string {
  const g = rec.groups[index];
  if (!g) {
    return 'no group';
  }
  const names = filterNames(g.filter);
  if (g.filter === true && (g.label === 'all' || !g.label)) {
    return 'all collections';
  }
  return `${names.length ? names.join(', ') : pyText(g.filter)}: ${g.label || 'lifted'}`;
}

/** A recorded value as the Python text and HTML forms write it (`True`, `None`, `a, b`). */
export function pyText(v: unknown): string {
  if (typeof v === 'boolean') {
    return v ? 'True' : 'False';
  }
  if (v === null || v === undefined) {
    return 'None';
  }
  if (typeof v === 'string') {
    return v;
  }
  if (Array.isArray(v)) {
    return v.map(pyText).join(', ');
  }
  return JSON.stringify(v);
}

/** The lanes of a record by filter group, in group order (lanes of no group last). */
export function laneGroups(rec: PackRecord): LaneGroup[] {
  const by = new Map<number, Lane[]>();
  for (const lane of rec.lanes) {
    if (!by.has(lane.group)) {
      by.set(lane.group, []);
    }
    by.get(lane.group)!.push(lane);
  }
  const order = [...by.keys()].sort((a, b) => (a < 0 ? 1 : b < 0 ? -1 : a - b));
  return order.map(index => ({ index, title: groupTitle(rec, index), lanes: by.get(index)! }));
}

/** The note every lane of a group shares (said once, in the group's head), else null. */
export function sharedNote(group: LaneGroup): string | null {
  const notes = new Set(group.lanes.map(l => l.note));
  return group.lanes.length > 1 && notes.size === 1 ? group.lanes[0].note : null;
}

/** The width a lane's column asks for and the least it can do with, in `ch`. */
export interface ColumnWidth {
  /** Its longest text on one line. */
  wants: number;
  /** Its longest piece that cannot break (a word; a shape breaks after commas). */
  least: number;
}

/** Widest first: the length of the longest of `texts`, and of their longest piece. */
function widths(texts: string[], breaks: RegExp, atLeast: number, pad = 0): ColumnWidth {
  let wants = atLeast;
  let least = 1;
  for (const t of texts) {
    wants = Math.max(wants, t.length + 1 + pad);
    for (const piece of t.split(breaks)) {
      least = Math.max(least, piece.length + 1 + pad);
    }
  }
  return { wants, least: Math.min(least, wants) };
}

/**
 * How wide (in `ch`: the code font is monospace) a box's lane columns are: the
 * path column asks for its longest `collection path`; the value columns (outer,
 * inner, how it went) for their longest text, and can shrink to their longest
 * piece that cannot break. The column heads count too. The stylesheet turns these
 * into each column's floor and limit (a path's floor is up to 44% of the row, so
 * shapes wrap after their commas before a path is cut short).
 */
export function laneColumns(
  groups: LaneGroup[],
  manyRoots = false
): { path: number; outer: ColumnWidth; inner: ColumnWidth; how: ColumnWidth } {
  const lanes = groups.flatMap(g => g.lanes);
  const said = groups.flatMap(g => {
    const noteInHead = sharedNote(g) !== null;
    return g.lanes.map(
      l => `${noteInHead ? '' : `${l.note} `}${l.fate}${manyRoots && l.committed ? ` → ${l.committed}` : ''}`
    );
  });
  const shape = /(?<=,)|\s+/;
  return {
    // swatch, collection, a space, the path, a little slack
    path: Math.max(10, ...lanes.map(l => l.collection.length + l.path.length + 4)),
    outer: widths(lanes.map(l => shapeText(outerOf(l))), shape, 'outside'.length + 1),
    inner: widths(lanes.map(l => shapeText(l.inner)), shape, 'inside'.length + 1),
    how: widths(said, /\s+/, 'how it goes in'.length + 1, 1) // the fate's tint pads it
  };
}

/** One piece of a drawn path: a segment, or the `/` between two. */
export interface PathPiece {
  text: string;
  /** Where `text` starts in the path (for the muted prefix). */
  start: number;
  role: 'first' | 'mid' | 'leaf' | 'slash';
  /** Whether the whole piece lies in the muted prefix. */
  muted: boolean;
  /**
   * In which order the segments give way when the line is too narrow, highest
   * first: those of the muted prefix, then the segments between (the farthest from
   * the variable's name first), then the first segment, the last segment (the
   * name) only when nothing else is left (0). Slashes never give way (-1).
   */
  gives: number;
}

/**
 * A path cut for drawing on one line with an ellipsis in the middle: its segments
 * (a leading `/` belongs to the first) and the slashes between them, each a piece,
 * ranked by which gives way first, so `/blocks/layers_3/BatchNorm_0/mean` narrows
 * to `/blocks/lay…/BatchNorm_0/mean`, then `/blocks/l…/Batch…/mean`, then
 * `/bl…/l…/B…/mean`. `muted` is how
 * many characters of the path are the lifted scope's prefix, drawn muted (it is
 * in the box's head already, so it gives way before the rest). Joined, the pieces
 * are the path.
 */
export function pathPieces(path: string, muted = 0): PathPiece[] {
  if (!path) {
    return [];
  }
  const segs: { text: string; start: number }[] = [];
  let at = 0;
  for (const text of path.split('/')) {
    segs.push({ text, start: at });
    at += text.length + 1;
  }
  if (segs[0].text === '' && segs.length > 1) {
    segs.splice(0, 2, { text: `/${segs[1].text}`, start: 0 });
  }
  const last = segs.length - 1;
  const pieces: PathPiece[] = [];
  segs.forEach((seg, i) => {
    if (i > 0) {
      const start = seg.start - 1;
      pieces.push({ text: '/', start, role: 'slash', muted: start < muted, gives: -1 });
    }
    const role = i === last ? 'leaf' : i === 0 ? 'first' : 'mid';
    const isMuted = seg.start + seg.text.length <= muted && seg.text !== '';
    const rank = role === 'leaf' ? 0 : role === 'first' ? 1 : 1 + last - i;
    pieces.push({ ...seg, role, muted: isMuted, gives: rank + (isMuted ? segs.length : 0) });
  });
  // Dense ranks: 0 (the name), 1, 2, ... in the order they give way.
  const ranks = [...new Set(pieces.map(p => p.gives).filter(g => g > 0))].sort((a, b) => a - b);
  return pieces
    .filter(p => p.text !== '' || p.role === 'leaf')
    .map(p => (p.gives > 0 ? { ...p, gives: ranks.indexOf(p.gives) + 1 } : p));
}

/** Whether a lane matches a filter-box query (case-insensitive; every word must match). */
export function laneMatches(lane: Lane, query: string): boolean {
  const hay = `${lane.collection} ${lane.path} ${lane.role} ${lane.fate}`.toLowerCase();
  return query
    .toLowerCase()
    .split(/\s+/)
    .filter(Boolean)
    .every(word => hay.includes(word));
}

/** Everything about a lane, one `[label, value]` per line (tooltip and details panel). */
export function laneDetails(lane: Lane): [string, string][] {
  const rows: [string, string][] = [
    ['collection', lane.collection],
    ['path', lane.path],
    ['outer', shapeText(outerOf(lane))],
    ['inner', shapeText(lane.inner)],
    ['lifted', lane.note]
  ];
  if (lane.role === 'carry' && lane.out) {
    rows.push(['carry out', shapeText(lane.out)]);
  }
  const box = outerOf(lane)?.box ?? lane.inner?.box;
  if (box) {
    rows.push(['box', box]);
  }
  rows.push(['came back', lane.fate_text]);
  return rows;
}

/** Groups with more lanes than this start collapsed (their count still shows). */
export const OPEN_GROUP_LANES = 40;
/** The filter box appears when a trace has more lanes than this. */
export const FILTER_BOX_LANES = 10;

/**
 * Whether a transform's box starts open: the first levels of nesting, and (in a trace
 * of many transforms, e.g. one per layer) only the first few at the top level.
 */
export function startsOpen(depth: number, index: number, siblings: number): boolean {
  if (depth >= 3) {
    return false;
  }
  return siblings <= 8 || index < 3;
}

/** `vmap of /mlp` */
export function recordTitle(rec: PackRecord): string {
  const roots = rec.scopes.filter(s => s.root).map(s => s.path);
  return `${rec.transform} of ${roots.join(', ') || '/'}`;
}

/** The record reached by following child indices from a top-level record. */
export function recordAt(trace: Trace, top: number, path: number[]): PackRecord | undefined {
  let rec: PackRecord | undefined = trace.packs[top];
  for (const i of path) {
    rec = rec?.children[i];
  }
  return rec;
}

/** Every record, depth first (for counts and search; iterative). */
export function allRecords(trace: Trace): PackRecord[] {
  const out: PackRecord[] = [];
  const stack = [...trace.packs].reverse();
  while (stack.length) {
    const r = stack.pop()!;
    out.push(r);
    for (let i = r.children.length - 1; i >= 0; i--) {
      stack.push(r.children[i]);
    }
  }
  return out;
}
