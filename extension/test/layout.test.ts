import { readFileSync } from 'fs';
import { join } from 'path';
import { describe, expect, it } from 'vitest';

import {
  allRecords,
  axisText,
  collectionColor,
  layoutRecord,
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
    [{ schema: 'lens.pack-trace', version: 1, packs: [{ transform: 'vmap' }] }, 'packs[0] has no "scopes"']
  ])('rejects %j with a readable error', (payload, message) => {
    const parsed = parsePayload(payload);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) {
      expect(parsed.error).toContain(message);
    }
  });

  it('checks nested records', () => {
    const bad = fixture('vmap_scan.json');
    bad.packs[0].children[0].repack = {};
    const parsed = parsePayload(bad);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) {
      expect(parsed.error).toContain('packs[0].children[0].repack');
    }
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

  it('keeps one colour per collection', () => {
    expect(collectionColor('params')).toBe(collectionColor('params'));
    expect(collectionColor('params')).not.toBe(collectionColor('batch_stats'));
    expect(collectionColor('my_stats')).toMatch(/^#[0-9a-f]{6}$/);
  });
});
