/**
 * Pure layout logic for pack traces (schema lens.pack-trace, version 1):
 * validation, the stage columns of one pack call, colours, and navigation.
 * No DOM here, so it is unit-tested directly.
 */

import { Problem, RECORD_SCHEMA, typeName, validate } from './validate';

export type { Problem } from './validate';

export const MIME_TYPE = 'application/vnd.lens.pack+json';
export const SCHEMA_ID = 'lens.pack-trace';
export const SCHEMA_VERSION = 1;

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

export interface PackRecord {
  id: number;
  transform: string;
  options: Record<string, unknown>;
  scopes: { path: string; root: boolean; root_index: number; relative_path: string[] }[];
  groups: Group[];
  rngs: { stream: string; group: number; split: boolean; label: string }[];
  hidden_collections?: string[];
  hidden_rngs?: string[];
  repack: { created: Entry[]; mutated: Entry[] };
  commit: Entry[];
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

const FIXED: Record<string, string> = {
  params: '#1f77b4',
  batch_stats: '#d62728',
  cache: '#2ca02c',
  intermediates: '#9467bd'
};
const OTHERS = ['#ff7f0e', '#17becf', '#8c564b', '#e377c2'];

/** One stable colour per collection name. */
export function collectionColor(name: string): string {
  if (Object.prototype.hasOwnProperty.call(FIXED, name)) {
    return FIXED[name]; // own keys only: "constructor" is an ordinary name
  }
  let h = 0;
  for (let i = 0; i < name.length; i++) {
    h = (h * 31 + name.charCodeAt(i)) >>> 0;
  }
  return OTHERS[h % OTHERS.length];
}

/** `f32[3,4]` (with axis names when boxed). */
export function shapeText(spec: Spec | null | undefined): string {
  if (!spec) {
    return '?';
  }
  const dtype = spec.dtype
    .replace(/^bfloat/, 'bf')
    .replace(/^float/, 'f')
    .replace(/^uint/, 'u')
    .replace(/^int/, 'i');
  let s = `${dtype}[${spec.shape.join(',')}]`;
  if (spec.names) {
    s += ` (${spec.names.map(n => (n === null ? 'None' : `'${n}'`)).join(',')})`;
  }
  return s;
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

/** `axis 0` -> `0`; other labels as they are. */
export function axisText(label: string): string {
  const m = /^axis (-?\d+)$/.exec(label);
  return m ? m[1] : label;
}

export interface Item {
  key: string; // the same variable in every stage shares its key
  collection: string;
  color: string;
  text: string;
  detail?: string;
}

export interface Column {
  stage: string;
  title: string;
  items: Item[];
}

export const STAGES = ['scopes', 'groups', 'inside', 'repack', 'commit'];
const TITLES: Record<string, string> = {
  scopes: '1 · scopes lifted',
  groups: '2 · filter: groups',
  inside: '3–4 · inside the transform',
  repack: '5 · repack',
  commit: '6 · commit'
};

function key(collection: string, path: string): string {
  return `${collection}:${path}`;
}

/** A variable path relative to the lifted scope (`/mlp/hidden/kernel` -> `hidden/kernel`). */
export function relativePath(path: string, scopePath: string): string {
  if (scopePath === '/' || !scopePath) {
    return path.replace(/^\//, '');
  }
  return path.startsWith(scopePath + '/') ? path.slice(scopePath.length + 1) : path;
}

/** The five stage columns of one pack call. */
export function layoutRecord(rec: PackRecord): Column[] {
  const rootPaths = rec.scopes.filter(s => s.root).map(s => s.path);
  const rel = (scope: number, path: string) => relativePath(path, rootPaths[scope] ?? '/');
  const scopes: Item[] = rec.scopes.map(s => ({
    key: `scope:${s.path}`,
    collection: '',
    color: '#555',
    text: s.path,
    detail: s.root ? 'root: lifted' : `rebuilt by path ${s.relative_path.join('/')}`
  }));
  const groups: Item[] = [];
  for (const g of rec.groups) {
    // Name each group by its filter, so empty groups (nothing created yet) still
    // say where a collection would go.
    const names = [...g.collections];
    for (const n of filterNames(g.filter)) {
      if (!names.includes(n)) {
        names.push(n);
      }
    }
    for (const c of names) {
      groups.push({
        key: `col:${c}`,
        collection: g.collections.includes(c) ? c : '',
        color: collectionColor(c),
        text: `${c}: ${axisText(g.label)}`,
        detail: g.collections.includes(c) ? `group ${g.index}` : 'no variables yet'
      });
    }
  }
  for (const c of rec.hidden_collections ?? []) {
    groups.push({ key: `col:${c}`, collection: c, color: '#999', text: `${c}: not lifted` });
  }
  const inside: Item[] = [];
  for (const g of rec.groups) {
    for (const v of g.variables) {
      inside.push({
        key: key(v.collection, v.path),
        collection: v.collection,
        color: collectionColor(v.collection),
        text: `${rel(v.scope, v.path)} ${shapeText(v.inner)}`,
        detail: `outer ${shapeText(v.outer)} · ${axisText(v.axis)}`
      });
    }
  }
  for (const r of rec.rngs) {
    inside.push({ key: `rng:${r.stream}`, collection: '', color: '#555', text: `rng ${r.stream}: ${r.label}` });
  }
  const repack: Item[] = [
    ...rec.repack.created.map(e => ({
      key: key(e.collection, e.path),
      collection: e.collection,
      color: collectionColor(e.collection),
      text: `${rel(e.scope, e.path)} ${shapeText(e.inner)}`,
      detail: 'created'
    })),
    ...rec.repack.mutated.map(e => ({
      key: key(e.collection, e.path),
      collection: e.collection,
      color: collectionColor(e.collection),
      text: `${rel(e.scope, e.path)} ${shapeText(e.inner)}`,
      detail: 'mutated'
    }))
  ];
  const commit: Item[] = rec.commit.map(e => ({
    key: key(e.collection, e.path),
    collection: e.collection,
    color: collectionColor(e.collection),
    text: `${rel(e.scope, e.path)} ${shapeText(e.outer)}`,
    detail: 'written back'
  }));
  const items: Record<string, Item[]> = { scopes, groups, inside, repack, commit };
  return STAGES.map(stage => ({ stage, title: TITLES[stage], items: items[stage] }));
}

/** `vmap at /mlp` */
export function recordTitle(rec: PackRecord): string {
  const roots = rec.scopes.filter(s => s.root).map(s => s.path);
  return `${rec.transform} at ${roots.join(', ') || '/'}`;
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
