import { readFileSync } from 'fs';
import { join } from 'path';
import { describe, expect, it } from 'vitest';

import {
  allRecords,
  axisText,
  collectionColor,
  layoutRecord,
  MAX_NESTING,
  parsePayload,
  recordAt,
  recordTitle,
  shapeText,
  STAGES
} from '../src/layout';

const fixture = (name: string) => JSON.parse(readFileSync(join(__dirname, 'fixtures', name), 'utf8'));

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
    [{ schema: 'lens.pack-trace', version: 2, packs: [] }, 'version 2 is not supported'],
    [{ schema: 'lens.pack-trace', version: 1 }, 'no "packs" list'],
    [{ schema: 'lens.pack-trace', version: 1, packs: 'vmap' }, 'no "packs" list (got a string)']
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
    for (const name of ['vmap_scan.json', 'two_transforms.json', 'vmap_apply.json']) {
      expect(problemsOf(fixture(name)).text).toBe('');
    }
  });

  it('leaves out a malformed record, says where, and keeps the rest', () => {
    const payload = { schema: 'lens.pack-trace', version: 1, packs: [{ transform: 'vmap' }, fixture('vmap_scan.json').packs[0]] };
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
    const { trace, text } = problemsOf({ schema: 'lens.pack-trace', version: 1, packs: [rec] });
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

describe('layoutRecord', () => {
  const trace = fixture('vmap_scan.json');
  const vmap = trace.packs[0];
  const scan = vmap.children[0];

  it('has the five stage columns in order', () => {
    expect(layoutRecord(vmap).map(c => c.stage)).toEqual(STAGES);
  });

  it('labels each lifted collection with its axis', () => {
    const groups = layoutRecord(scan).find(c => c.stage === 'groups')!;
    const texts = groups.items.map(i => i.text);
    expect(texts).toContain('params: 0');
    expect(texts).toContain('batch_stats: 0');
    expect(texts.some(t => t.startsWith('broadcast'))).toBe(false); // variable_broadcast=False
  });

  it('gives a variable the same key, and its collection the same colour, in every stage', () => {
    const cols = layoutRecord(vmap);
    const repack = cols.find(c => c.stage === 'repack')!.items;
    const commit = cols.find(c => c.stage === 'commit')!.items;
    expect(repack.length).toBeGreaterThan(0);
    for (const item of repack) {
      const twin = commit.find(c => c.key === item.key);
      expect(twin).toBeDefined();
      expect(twin!.color).toBe(item.color);
      expect(item.color).toBe(collectionColor(item.collection));
    }
  });

  it('shows inner shapes at repack and outer shapes at commit', () => {
    const cols = layoutRecord(vmap);
    const kernelIn = cols.find(c => c.stage === 'repack')!.items.find(i => i.text.includes('kernel'))!;
    const kernelOut = cols.find(c => c.stage === 'commit')!.items.find(i => i.key === kernelIn.key)!;
    expect(kernelIn.text).toContain("f32[3,4,4] ('layers','embed','mlp')");
    expect(kernelOut.text).toContain("f32[2,3,4,4] ('ens','layers','embed','mlp')");
  });

  it('marks split and shared rng streams', () => {
    const inside = layoutRecord(vmap).find(c => c.stage === 'inside')!;
    expect(inside.items.map(i => i.text)).toContain('rng params: split');
  });
});

describe('relativePath', () => {
  it('strips the lifted scope', async () => {
    const { relativePath } = await import('../src/layout');
    expect(relativePath('/mlp/hidden/kernel', '/mlp')).toBe('hidden/kernel');
    expect(relativePath('/kernel', '/')).toBe('kernel');
    expect(relativePath('/other/k', '/mlp')).toBe('/other/k');
  });
});

describe('filterNames', () => {
  it('reads the recorded filter forms', async () => {
    const { filterNames } = await import('../src/layout');
    expect(filterNames('params')).toEqual(['params']);
    expect(filterNames(['a', 'b'])).toEqual(['a', 'b']);
    expect(filterNames(true)).toEqual(['all']);
    expect(filterNames(false)).toEqual([]);
  });
});

describe('navigation and text helpers', () => {
  it('walks nested records and names them', () => {
    const trace = fixture('vmap_scan.json');
    expect(recordTitle(recordAt(trace, 0, [])!)).toMatch(/^vmap at \//);
    expect(recordAt(trace, 0, [0])!.transform).toBe('scan');
    expect(recordAt(trace, 0, [5])).toBeUndefined();
    expect(allRecords(trace).map(r => r.transform)).toEqual(['vmap', 'scan']);
  });

  it('formats shapes and axes', () => {
    expect(shapeText({ shape: [2, 3], dtype: 'float32' })).toBe('f32[2,3]');
    expect(shapeText({ shape: [4], dtype: 'bfloat16', names: [null] })).toBe('bf16[4] (None)');
    expect(shapeText(null)).toBe('?');
    expect(axisText('axis 1')).toBe('1');
    expect(axisText('broadcast')).toBe('broadcast');
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
});
