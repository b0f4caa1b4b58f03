import { readFileSync } from 'fs';
import { join } from 'path';
import { describe, expect, it } from 'vitest';

import {
  allRecords,
  collectionColor,
  filterNames,
  groupTitle,
  laneColumns,
  laneDetails,
  laneGroups,
  laneMatches,
  MAX_NESTING,
  outerOf,
  parsePayload,
  PackRecord,
  pathPieces,
  recordAt,
  recordTitle,
  shapeParts,
  shapeText,
  startsOpen
} from '../src/layout';

const fixture = (name: string) => JSON.parse(readFileSync(join(__dirname, 'fixtures', name), 'utf8'));
const GOLDEN = ['vmap_scan.json', 'vmap_apply.json', 'scan_carry.json', 'nested.json', 'multi_scope.json', 'two_transforms.json'];
const lanesOf = (rec: PackRecord) => Object.fromEntries(rec.lanes.map(l => [`${l.collection} ${l.relative}`, l]));

describe('parsePayload', () => {
  it('accepts a real trace from lens', () => {
    const parsed = parsePayload(fixture('vmap_scan.json'));
    expect(parsed.ok).toBe(true);
  });

  it('accepts JSON text too', () => {
    expect(parsePayload(JSON.stringify(fixture('vmap_scan.json'))).ok).toBe(true);
  });

  it.each([
    [null, 'not a JSON object'],
    ['{not json', 'not JSON'],
    [{ schema: 'other', version: 1, packs: [] }, 'unknown schema'],
    [{ schema: 'lens.pack-trace', version: 3, packs: [] }, 'version 3 is not supported'],
    [{ schema: 'lens.pack-trace', version: 1, packs: [] }, 'drawn by an older lens (trace version 1; this extension reads version 2): re-run the cell'],
    [{ schema: 'lens.pack-trace', version: 2 }, 'no "packs" list'],
    [{ schema: 'lens.pack-trace', version: 2, packs: 'vmap' }, 'no "packs" list (got a string)']
  ])('rejects %j with a readable error', (payload, message) => {
    const parsed = parsePayload(payload);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) {
      expect(parsed.error).toContain(message);
    }
  });

  const problemsOf = (payload: unknown) => {
    const parsed = parsePayload(payload);
    if (!parsed.ok) {
      throw new Error(parsed.error);
    }
    return { trace: parsed.trace, text: parsed.problems.map(p => `${p.path}: ${p.message}`).join('\n') };
  };

  it('accepts the fixtures with no problems', () => {
    for (const name of GOLDEN) {
      expect(problemsOf(fixture(name)).text).toBe('');
    }
  });

  it('leaves out a malformed record, says where, and keeps the rest', () => {
    const payload = { schema: 'lens.pack-trace', version: 2, packs: [{ transform: 'vmap' }, fixture('vmap_scan.json').packs[0]] };
    const { trace, text } = problemsOf(payload);
    expect(trace.packs.map(p => p.transform)).toEqual(['vmap']);
    expect(trace.packs[0].children.length).toBe(1);
    expect(text).toContain('packs[0] (vmap): left out: packs[0] has no "id"');
  });

  it('checks nested records', () => {
    const bad = fixture('vmap_scan.json');
    bad.packs[0].children[0].repack = {};
    const { trace, text } = problemsOf(bad);
    expect(text).toContain('packs[0].children[0] (scan): left out: packs[0].children[0].repack has no "created"');
    expect(trace.packs[0].children).toEqual([]);
  });

  it('does not split a string where a list belongs into characters', () => {
    const bad = fixture('vmap_scan.json');
    bad.packs[0].groups[0].collections = 'params';
    const { trace, text } = problemsOf(bad);
    expect(text).toContain('packs[0].groups[0].collections should be a list, not a string');
    expect(trace.packs).toEqual([]);
  });

  it('names wrong leaf types with their path', () => {
    const bad = fixture('vmap_apply.json');
    bad.packs[0].groups[0].variables[0].outer.shape = [3, 'x'];
    bad.packs[0].rngs = [{ stream: 'params', group: 0, split: 'yes', label: 'split' }];
    const { text } = problemsOf(bad);
    expect(text).toContain('packs[0].groups[0].variables[0].outer.shape[1] should be an integer, not a string');
    expect(text).toContain('packs[0].rngs[0].split should be a boolean, not a string');
  });

  it('survives 20,000 levels of nesting without overflowing the stack', () => {
    const leaf = fixture('vmap_scan.json').packs[0].children[0];
    let rec = { ...leaf, children: [] as unknown[] };
    for (let i = 0; i < 20000; i++) {
      rec = { ...leaf, id: i, children: [rec] };
    }
    const { trace, text } = problemsOf({ schema: 'lens.pack-trace', version: 2, packs: [rec] });
    expect(allRecords(trace).length).toBe(MAX_NESTING);
    expect(text).toContain(`transforms nested deeper than ${MAX_NESTING} levels are not drawn`);

    let spec: Record<string, unknown> = { shape: [], dtype: 'float32' };
    for (let i = 0; i < 20000; i++) {
      spec = { shape: [], dtype: 'float32', leaves: [spec] };
    }
    const deepSpec = fixture('vmap_apply.json');
    deepSpec.packs[0].groups[0].variables[0].outer = spec;
    expect(problemsOf(deepSpec).text).toContain('nested deeper than 64 levels');
  });

  it('keeps the shipped schema and the extension\'s copy identical', () => {
    const shipped = readFileSync(join(__dirname, '..', '..', 'lens', 'core', 'pack_trace.schema.json'), 'utf8');
    const copy = readFileSync(join(__dirname, '..', 'src', 'pack_trace.schema.json'), 'utf8');
    expect(JSON.parse(copy)).toEqual(JSON.parse(shipped));
  });
});

describe('lanes', () => {
  it('puts outer and inner side by side with the mapped axis, its size and name (vmap init)', () => {
    const vmap = fixture('vmap_scan.json').packs[0];
    const kernel = lanesOf(vmap)['params ScanBlock_0/Dense_0/kernel'];
    expect(shapeText(outerOf(kernel))).toBe("f32[2,3,4,4] ('ens','layers','embed','mlp')");
    expect(shapeText(kernel.inner)).toBe("f32[3,4,4] ('layers','embed','mlp')");
    expect([kernel.axis, kernel.size, kernel.axis_name]).toEqual([0, 2, 'ens']);
    expect(kernel.note).toBe("vmap axis 0, size 2 ('ens')");
    expect(kernel.fate).toBe('created');
    expect(kernel.path).toBe('/<img src=x onerror=alert(1)>/ScanBlock_0/Dense_0/kernel');
    // Created inside: the outer value is the one committed.
    expect(kernel.outer).toBeNull();
    expect(outerOf(kernel)).toEqual(kernel.out);
  });

  it('marks only the mapped dimension', () => {
    const parts = shapeParts({ shape: [8, 4, 3], dtype: 'float32' }, 0);
    expect(parts.filter(p => p.mapped).map(p => p.text)).toEqual(['8']);
    expect(parts.map(p => p.text).join('')).toBe('f32[8,4,3]');
    expect(shapeParts({ shape: [4, 8], dtype: 'int32' }, 1).find(p => p.mapped)!.text).toBe('8');
    expect(shapeParts(null).map(p => p.text)).toEqual(['-']);
  });

  it('tells scanned, broadcast and carry apart (scan init)', () => {
    const scan = fixture('scan_carry.json').packs[0];
    const l = lanesOf(scan);
    expect(l['params Dense_0/kernel'].note).toBe('scan axis 0, length 3');
    expect(l['batch_stats BatchNorm_0/mean'].role).toBe('broadcast');
    expect(shapeText(outerOf(l['batch_stats BatchNorm_0/mean']))).toBe('f32[4]');
    expect(l['counter steps'].role).toBe('carry');
    expect(laneDetails(l['counter steps'])).toContainEqual(['carry out', 'i32[]']);
    expect(scan.lanes.filter(x => x.relative === 'steps').length).toBe(1); // listed once
    expect(laneGroups(scan).map(g => g.title)).toEqual(['batch_stats: broadcast', 'counter: carry', 'params: axis 0']);
    expect(scan.summary).toMatch(/^scan over 3 steps of \/steps_with_a_long_descriptive_name_to_check_wrapping: batch_stats broadcast, counter carry, params on axis 0; rngs params split; 7 created$/);
  });

  it('says what came back in apply: params unchanged, batch_stats updated and where committed', () => {
    const vmap = fixture('vmap_apply.json').packs[0];
    const l = lanesOf(vmap);
    expect(l['params ScanBlock_0/Dense_0/kernel'].fate).toBe('unchanged');
    const mean = l['batch_stats ScanBlock_0/BatchNorm_0/mean'];
    expect(mean.fate).toBe('updated');
    expect(mean.committed).toBe('/<img src=x onerror=alert(1)>');
    expect(shapeText(mean.outer)).toBe('f32[2,3,4]');
    expect(shapeText(mean.inner)).toBe('f32[3,4]');
  });

  it('nests jit(scan(vmap)) three levels deep, each with its own lanes', () => {
    const trace = fixture('nested.json');
    expect(allRecords(trace).map(r => r.transform)).toEqual(['jit', 'scan', 'vmap']);
    const vmap = recordAt(trace, 0, [0, 0])!;
    expect(vmap.summary).toBe('vmap over 3 slices of /ScanBody_0/VmapMember_0: params on axis 0; rngs params split, dropout shared; 2 created');
    expect(vmap.rng_lanes.map(r => [r.stream, r.text])).toEqual([
      ['params', 'split into 3 keys'],
      ['dropout', 'shared (the same key inside)']
    ]);
    const scan = recordAt(trace, 0, [0])!;
    expect(scan.rng_lanes.map(r => r.keys)).toEqual([2, 2]);
  });

  it('says which scopes were merged in a multi-scope pack', () => {
    const rec = fixture('multi_scope.json').packs[0];
    expect(rec.scope_notes).toEqual([
      { path: '/a', root: true, text: 'its variables are created inside and written back' },
      { path: '/a/inner', root: false, text: 'goes in as part of /a' },
      { path: '/b', root: true, text: 'its variables are created inside and written back' }
    ]);
    expect(rec.lanes.map((l: { path: string; committed: string }) => [l.path, l.committed])).toEqual([
      ['/a/inner/v', '/a'], // lanes in a stable order: group, scope, collection, path
      ['/a/w', '/a'],
      ['/b/u', '/b']
    ]);
  });

  it('names groups by filter and label, empty filters included', () => {
    const vmap = fixture('vmap_scan.json').packs[0];
    expect(groupTitle(vmap, 0)).toBe('params: axis 0');
    expect(groupTitle(vmap, 7)).toBe('no group');
    expect(filterNames(true)).toEqual(['all']);
    expect(filterNames(false)).toEqual([]);
  });

  it('filters lanes by every word of the query', () => {
    const scan = fixture('scan_carry.json').packs[0];
    const hits = (q: string) => scan.lanes.filter((l: never) => laneMatches(l, q)).map((l: { relative: string }) => l.relative);
    expect(hits('batchnorm_0/mean')).toEqual(['BatchNorm_0/mean']);
    expect(hits('params dense')).toEqual(['Dense_0/bias', 'Dense_0/kernel']);
    expect(hits('carry')).toEqual(['steps']);
    expect(hits('')).toHaveLength(scan.lanes.length);
  });

  it('opens the first levels, and only the first few of many transforms', () => {
    expect(startsOpen(0, 0, 1)).toBe(true);
    expect(startsOpen(2, 0, 1)).toBe(true);
    expect(startsOpen(3, 0, 1)).toBe(false);
    expect(startsOpen(0, 2, 64)).toBe(true);
    expect(startsOpen(0, 3, 64)).toBe(false);
  });
});

describe('navigation and text helpers', () => {
  it('walks nested records and names them', () => {
    const trace = fixture('vmap_scan.json');
    expect(recordTitle(recordAt(trace, 0, [])!)).toMatch(/^vmap of \//);
    expect(recordAt(trace, 0, [0])!.transform).toBe('scan');
    expect(recordAt(trace, 0, [5])).toBeUndefined();
    expect(allRecords(trace).map(r => r.transform)).toEqual(['vmap', 'scan']);
  });

  it('formats shapes', () => {
    expect(shapeText({ shape: [2, 3], dtype: 'float32' })).toBe('f32[2,3]');
    expect(shapeText({ shape: [4], dtype: 'bfloat16', names: [null] })).toBe('bf16[4] (None)');
    expect(shapeText(null)).toBe('-');
  });

  it('colours collections named like Object.prototype members as any other name', () => {
    for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
      expect(collectionColor(name)).toMatch(/^#[0-9a-f]{6}$/);
    }
  });

  it('keeps one colour per collection', () => {
    expect(collectionColor('params')).toBe(collectionColor('params'));
    expect(collectionColor('params')).not.toBe(collectionColor('batch_stats'));
    expect(collectionColor('my_stats')).toMatch(/^#[0-9a-f]{6}$/);
  });

  it('colours every collection as lens.display does (colors.json, written by lens)', () => {
    const expected: Record<string, string> = fixture('colors.json');
    expect(Object.keys(expected).length).toBeGreaterThan(10);
    for (const [name, colour] of Object.entries(expected)) {
      expect([name, collectionColor(name)]).toEqual([name, colour]);
    }
  });

  it('keeps the shipped palette and the extension\'s copy identical', () => {
    const shipped = readFileSync(join(__dirname, '..', '..', 'lens', 'display', 'palette.json'), 'utf8');
    const copy = readFileSync(join(__dirname, '..', 'src', 'palette.json'), 'utf8');
    expect(JSON.parse(copy)).toEqual(JSON.parse(shipped));
  });
});

describe('pyText', () => {
  it('writes recorded values as the Python forms do (True, None; no JSON true/null)', async () => {
    const { pyText } = await import('../src/layout');
    expect(pyText([true, 'params', null])).toBe('True, params, None');
    expect(pyText(false)).toBe('False');
    expect(pyText({ a: 1 })).toBe('{"a":1}');
  });
});

describe('pathPieces', () => {
  const pieces = (path: string, muted = 0) => pathPieces(path, muted).map(p => `${p.role}:${p.text}`);
  const order = (path: string, muted = 0) =>
    pathPieces(path, muted)
      .filter(p => p.role !== 'slash')
      .sort((a, b) => b.gives - a.gives)
      .map(p => p.text);

  it('cuts a path into its first segment, the segments between, its name, and the slashes', () => {
    expect(pieces('/blocks/layers_3/BatchNorm_0/mean')).toEqual([
      'first:/blocks',
      'slash:/',
      'mid:layers_3',
      'slash:/',
      'mid:BatchNorm_0',
      'slash:/',
      'leaf:mean'
    ]);
    expect(pieces('linear/kernel')).toEqual(['first:linear', 'slash:/', 'leaf:kernel']);
    expect(pieces('kernel')).toEqual(['leaf:kernel']);
    expect(pieces('/kernel')).toEqual(['leaf:/kernel']);
    expect(pieces('')).toEqual([]);
  });

  it('joins back to the path, whatever the path', () => {
    for (const path of ['/', '//a', 'a//b', 'a/b/', '/a/b/c/d/e/f/g/h', '/<img src=x>/k', ' / ', '/a b/c']) {
      for (const muted of [0, 1, 3, path.length]) {
        expect(pathPieces(path, muted).map(p => p.text).join('')).toBe(path);
      }
    }
  });

  it('gives way in the middle first, the first segment next, the name last', () => {
    expect(order('/blocks/layers_3/BatchNorm_0/mean')).toEqual(['layers_3', 'BatchNorm_0', '/blocks', 'mean']);
    const [leaf] = pathPieces('/a/b').filter(p => p.role === 'leaf');
    expect(leaf.gives).toBe(0);
    expect(pathPieces('/a/b').filter(p => p.role === 'slash').map(p => p.gives)).toEqual([-1]);
    // dense ranks: 0 (the name), then 1, 2, 3
    expect(pathPieces('/blocks/layers_3/BatchNorm_0/mean').map(p => p.gives)).toEqual([1, -1, 3, -1, 2, -1, 0]);
  });

  it('lets the muted prefix (the lifted scope, named in the box head) give way before the rest', () => {
    const path = '/steps_with_a_long_name/BatchNorm_0/mean';
    const muted = '/steps_with_a_long_name/'.length;
    expect(order(path, muted)).toEqual(['/steps_with_a_long_name', 'BatchNorm_0', 'mean']);
    expect(pathPieces(path, muted).map(p => p.muted)).toEqual([true, true, false, false, false]);
    // two muted segments: the farther from the name first, both before the unmuted
    expect(order('/a1/b2/c3/d4', '/a1/b2/'.length)).toEqual(['b2', '/a1', 'c3', 'd4']);
  });
});

describe('laneColumns', () => {
  it("asks for the longest path and values, and can shrink a value to its longest word", () => {
    const rec = fixture('vmap_scan.json').packs[0];
    const cols = laneColumns(laneGroups(rec));
    const longest = Math.max(...rec.lanes.map((l: { collection: string; path: string }) => l.collection.length + l.path.length));
    expect(cols.path).toBeGreaterThan(longest);
    // f32[2,3,4,4] ('ens','layers','embed','mlp'): 44 characters, its longest piece
    // f32[2, or 'layers', (a shape breaks after its commas)
    expect(cols.outer.wants).toBeGreaterThanOrEqual("f32[2,3,4,4] ('ens','layers','embed','mlp')".length);
    expect(cols.outer.least).toBeLessThanOrEqual("('layers',".length + 1);
    expect(cols.outer.least).toBeGreaterThanOrEqual("('layers',".length);
    expect(cols.how.least).toBeGreaterThanOrEqual('created'.length + 1); // the fate, tinted and padded
    // never narrower than the column heads
    expect(laneColumns([]).outer.wants).toBeGreaterThanOrEqual('outside'.length);
    expect(laneColumns([]).how.wants).toBeGreaterThanOrEqual('how it goes in'.length);
  });
});
