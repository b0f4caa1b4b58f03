// @vitest-environment jsdom
import { readFileSync } from 'fs';
import { join } from 'path';
import { describe, expect, it } from 'vitest';

import { optionText, renderPayload } from '../src/render';

const fixture = (name: string) => JSON.parse(readFileSync(join(__dirname, 'fixtures', name), 'utf8'));

describe('renderPayload', () => {
  it('draws the stage columns and collection rows', () => {
    const host = document.createElement('div');
    renderPayload(host, fixture('vmap_scan.json'));
    expect(host.querySelectorAll('.lens-pack-stage').length).toBe(5);
    expect(host.querySelectorAll('[data-collection="params"]').length).toBeGreaterThan(0);
    expect(host.textContent).toContain('params: 0');
  });

  it('keeps user strings as text (no HTML injection)', () => {
    const host = document.createElement('div');
    renderPayload(host, fixture('vmap_scan.json'));
    expect(host.querySelector('img')).toBeNull();
    expect(host.textContent).toContain('<img src=x onerror=alert(1)>');
  });

  it('highlights a variable in every stage on hover', () => {
    const host = document.createElement('div');
    renderPayload(host, fixture('vmap_scan.json'));
    const item = host.querySelector('[data-stage="repack"] .lens-pack-item') as HTMLElement;
    item.dispatchEvent(new MouseEvent('mouseover', { bubbles: true }));
    const lit = Array.from(host.querySelectorAll('.lens-pack-hl')) as HTMLElement[];
    expect(lit.length).toBeGreaterThanOrEqual(2);
    expect(new Set(lit.map(n => n.dataset.key))).toEqual(new Set([item.dataset.key]));
    expect(new Set(lit.map(n => (n.parentElement as HTMLElement).dataset.stage))).toEqual(new Set(['repack', 'commit']));
  });

  it('drills into a nested transform and back', () => {
    const host = document.createElement('div');
    const view = renderPayload(host, fixture('vmap_scan.json'))!;
    (host.querySelector('.lens-pack-child') as HTMLElement).click();
    expect(view.current()!.transform).toBe('scan');
    expect(host.querySelectorAll('.lens-pack-crumb').length).toBe(2);
    (host.querySelector('.lens-pack-crumb') as HTMLElement).click();
    expect(view.current()!.transform).toBe('vmap');
  });

  it('picks among several transforms', () => {
    const host = document.createElement('div');
    const view = renderPayload(host, fixture('two_transforms.json'))!;
    const picker = host.querySelector('.lens-pack-picker') as HTMLSelectElement;
    expect(picker.options.length).toBe(2);
    picker.value = '1';
    picker.dispatchEvent(new Event('change'));
    expect(view.current()!.transform).toBe('scan');
  });

  it('formats recorded options', () => {
    expect(optionText([['params', 0], ['batch_stats', null]])).toBe('{params: 0, batch_stats: null}');
    expect(optionText(3)).toBe('3');
    expect(optionText('params')).toBe('params');
  });

  it('shows a readable error for a malformed payload', () => {
    const host = document.createElement('div');
    expect(renderPayload(host, { schema: 'lens.pack-trace', version: 99, packs: [] })).toBeNull();
    expect(host.querySelector('.lens-pack-error')!.textContent).toContain('version 99 is not supported');
  });

  it('draws the valid records and lists what was left out', () => {
    const host = document.createElement('div');
    const good = fixture('vmap_scan.json').packs[0];
    const view = renderPayload(host, {
      schema: 'lens.pack-trace',
      version: 1,
      packs: [{ transform: 'scan', groups: 'params' }, good]
    })!;
    expect(view.current()!.transform).toBe('vmap');
    expect(host.querySelectorAll('.lens-pack-stage').length).toBe(5);
    const warning = host.querySelector('.lens-pack-warning')!;
    expect(warning.textContent).toContain('1 part of this trace could not be drawn');
    expect(warning.textContent).toContain('packs[0] (scan): left out');
  });

  it('never throws on randomly corrupted payloads', () => {
    // Deterministic corruption of a real trace: each run replaces one value
    // somewhere in it with a value of another type.
    const values: unknown[] = [null, 'constructor', 7, -1, true, [], {}, ['a'], { shape: 'x' }];
    let seed = 12345;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    const paths = (x: unknown, prefix: (string | number)[] = [], out: (string | number)[][] = []) => {
      if (x && typeof x === 'object') {
        for (const [k, v] of Object.entries(x)) {
          const p = [...prefix, Array.isArray(x) ? Number(k) : k];
          out.push(p);
          paths(v, p, out);
        }
      }
      return out;
    };
    const all = paths(fixture('vmap_apply.json'));
    let drawn = 0;
    for (let run = 0; run < 300; run++) {
      const doc = fixture('vmap_apply.json');
      const p = all[rand(all.length)];
      let node = doc;
      for (const k of p.slice(0, -1)) {
        node = node[k];
      }
      node[p[p.length - 1]] = values[rand(values.length)];
      const host = document.createElement('div');
      expect(() => renderPayload(host, doc)).not.toThrow();
      expect(host.textContent!.length).toBeGreaterThan(0);
      drawn += host.querySelector('.lens-pack-stages') ? 1 : 0;
    }
    expect(drawn).toBeGreaterThan(0); // corruption in one record leaves the others drawn
  });
});
