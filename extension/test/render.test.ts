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
});
