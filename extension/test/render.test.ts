// @vitest-environment jsdom
import { readFileSync } from 'fs';
import { join } from 'path';
import { describe, expect, it } from 'vitest';

import { meaning } from '../src/glossary';
import { OPEN_GROUP_LANES } from '../src/layout';
import { optionText, renderPayload } from '../src/render';

/** The budget of a test that renders many boxes: seconds on a loaded 2-core machine,
 * where vitest's default 5 s has run out. */
const HEAVY = 30_000;

const fixture = (name: string) => JSON.parse(readFileSync(join(__dirname, 'fixtures', name), 'utf8'));

describe('renderPayload', () => {
  it('draws one lane per variable, with full path and both shapes', () => {
    const host = document.createElement('div');
    const doc = fixture('vmap_scan.json');
    renderPayload(host, doc);
    const rows = Array.from(host.querySelectorAll('.lens-pack-lane:not(.lens-pack-lane-head)')) as HTMLElement[];
    const lanes = doc.packs[0].lanes.length + doc.packs[0].children[0].lanes.length;
    expect(rows.length).toBe(lanes);
    const kernel = rows.find(r => r.textContent!.includes('/<img src=x onerror=alert(1)>/ScanBlock_0/Dense_0/kernel'))!;
    expect(kernel.querySelector('.lens-pack-outer')!.textContent).toBe("f32[2,3,4,4] ('ens','layers','embed','mlp')");
    expect(kernel.querySelector('.lens-pack-axis')!.textContent).toBe('2');
    expect(kernel.querySelector('.lens-pack-inner')!.textContent).toBe("f32[3,4,4] ('layers','embed','mlp')");
    expect(kernel.querySelector('.lens-pack-how')!.textContent).toContain("vmap axis 0, size 2 ('ens')");
    expect(kernel.dataset.fate).toBe('created');
    expect(kernel.title).toContain('path: /<img src=x onerror=alert(1)>/ScanBlock_0/Dense_0/kernel');
  });

  it('heads each box with the one-line summary', () => {
    const host = document.createElement('div');
    const doc = fixture('scan_carry.json');
    renderPayload(host, doc);
    expect(host.querySelector('.lens-pack-summary')!.textContent).toBe(doc.packs[0].summary);
    expect(host.querySelector('.lens-pack-badge')!.textContent).toBe('scan');
    const groups = Array.from(host.querySelectorAll('.lens-pack-group-head')).map(n => n.textContent);
    // A note every lane of a group shares is said once, in the group's head.
    expect(groups).toEqual([
      'batch_stats: broadcast · 2 variables · each broadcast: the same value in every slice',
      'counter: carry · 1 variable',
      'params: axis 0 · 4 variables · each scan axis 0, length 3'
    ]);
    const params = host.querySelectorAll('.lens-pack-lane[data-collection="params"] .lens-pack-note');
    expect(params.length).toBe(0);
    expect(host.querySelector('.lens-pack-lane[data-collection="counter"] .lens-pack-note')!.textContent).toContain('carry');
    expect(host.querySelector('.lens-pack-rng')!.textContent).toBe('rng params: split into 3 keys');
  });

  it('shows in_axes per argument, the axis and partition names, and created state', () => {
    const host = document.createElement('div');
    const doc = fixture('nnx_ensemble.json');
    renderPayload(host, doc);
    const axes = host.querySelector('.lens-pack-axes')!;
    expect(Array.from(axes.querySelectorAll('.lens-pack-arg')).map(n => n.textContent)).toEqual(['rngs split along axis 0']);
    expect(axes.textContent).toBe(
      "inputs: rngs split along axis 0 · outputs stacked along axis 0 · axis_name 'ensemble' · partition name 'members'"
    );
    const created = Array.from(host.querySelectorAll('.lens-pack-lane[data-fate="created"]')) as HTMLElement[];
    expect(created.map(n => n.querySelector('.lens-pack-name')!.textContent)).toEqual([
      '/out/hidden/bias',
      '/out/hidden/kernel'
    ]);
    expect(created[1].querySelector('.lens-pack-axis')!.textContent).toBe('5');
  });

  it("says a Linen scan's carry is carried and its xs split, and the results part by part", () => {
    const host = document.createElement('div');
    const doc = fixture('scan_carry.json');
    renderPayload(host, doc);
    const axes = host.querySelector('.lens-pack-axes')!;
    expect(Array.from(axes.querySelectorAll('.lens-pack-arg')).map(n => n.textContent)).toEqual([
      'c carried step to step',
      'x split along axis 0',
      'carry from the last step',
      'ys stacked along axis 0'
    ]);
    expect(axes.textContent).toBe(
      'inputs: c carried step to step x split along axis 0 · outputs: carry from the last step ys stacked along axis 0'
    );
    const scope = Array.from(host.querySelectorAll('.lens-pack-scope')).map(n => n.textContent);
    expect(scope).toEqual(['writes the variables back to /steps_with_a_long_descriptive_name_to_check_wrapping']);
  });

  it('draws an older payload whose axes have no out_parts as before', () => {
    const host = document.createElement('div');
    const doc = fixture('scan_carry.json');
    delete doc.packs[0].axes.out_parts;
    doc.packs[0].axes.out = 'stacked along axis 0';
    renderPayload(host, doc);
    expect(host.querySelector('.lens-pack-axes')!.textContent).toBe(
      'inputs: c carried step to step x split along axis 0 · outputs stacked along axis 0'
    );
  });

  it('says in plain words which scopes a multi-scope pack lifts', () => {
    const host = document.createElement('div');
    renderPayload(host, fixture('multi_scope.json'));
    expect(Array.from(host.querySelectorAll('.lens-pack-scope')).map(n => n.textContent)).toEqual([
      '/a: its variables are created inside and written back',
      '/a/inner: goes in as part of /a',
      '/b: its variables are created inside and written back'
    ]);
  });

  it('draws a pass-through jit as one line of variables, its nested scan in full', () => {
    const host = document.createElement('div');
    const doc = fixture('nnx_jit_scan.json');
    renderPayload(host, doc);
    const jit = host.querySelector('.lens-pack-box[data-transform="jit"]') as HTMLElement;
    const own = (sel: string) =>
      Array.from(jit.querySelectorAll(sel)).filter(n => n.closest('.lens-pack-box') === jit);
    expect(own('.lens-pack-group').length).toBe(0);
    expect(own('.lens-pack-passes-text')[0].textContent).toBe(
      'traced once and compiled; state passed through · 2 variables flow through'
    );
    expect(own('.lens-pack-chip').map(n => n.textContent)).toEqual(['linear/bias', 'linear/kernel']);
    const scan = jit.querySelector('.lens-pack-box[data-transform="scan"]') as HTMLElement;
    expect(scan.querySelectorAll('.lens-pack-group .lens-pack-lane').length).toBe(2);
    expect(Array.from(scan.querySelectorAll('.lens-pack-arg')).map(n => n.textContent)).toEqual(['x carried step to step', 'block split along axis 0']);
    // a chip opens the details panel as a lane does
    (own('.lens-pack-chip')[1] as HTMLElement).click();
    expect(jit.querySelector('.lens-pack-details-title')!.textContent).toBe('/block/linear/kernel in jit of /block');
  });

  it("opens a chip's details below the whole row of chips, not inside it", () => {
    const host = document.createElement('div');
    renderPayload(host, fixture('nested.json'));
    const row = host.querySelector('.lens-pack-chips') as HTMLElement;
    const chips = Array.from(row.children) as HTMLElement[];
    expect(chips.length).toBe(2);
    chips[0].click();
    const panel = host.querySelector('.lens-pack-details') as HTMLElement;
    expect(row.nextElementSibling).toBe(panel); // after the row, in the row's parent
    expect(panel.parentElement).toBe(row.parentElement);
    expect(Array.from(row.children)).toEqual(chips); // the row holds its chips only
    expect(chips[0].classList.contains('lens-pack-selected')).toBe(true);
    expect(chips[0].getAttribute('aria-expanded')).toBe('true');
    // the full path, which the chip may cut with an ellipsis
    const path = '/ScanBody_0/VmapMember_0/hidden_projection_with_a_very_long_name/bias';
    expect(panel.querySelector('.lens-pack-details-title')!.textContent).toBe(`${path} in jit of /`);
    expect(chips[0].querySelector('.lens-pack-name')!.getAttribute('title')).toBe(path);
    // another chip moves the panel; the same chip again closes it
    chips[1].click();
    expect(host.querySelectorAll('.lens-pack-details').length).toBe(1);
    expect(row.nextElementSibling!.querySelector('.lens-pack-details-title')!.textContent).toContain('/kernel');
    chips[1].click();
    expect(host.querySelector('.lens-pack-details')).toBeNull();
    expect(row.nextElementSibling).toBeNull();
  });

  it('draws a path as segments and slashes on one line, the muted prefix marked, the whole path in its title', () => {
    const host = document.createElement('div');
    const doc = fixture('scan_carry.json');
    renderPayload(host, doc);
    const row = host.querySelector('.lens-pack-lane[data-collection="batch_stats"]') as HTMLElement;
    const name = row.querySelector('.lens-pack-path > .lens-pack-name') as HTMLElement;
    const path = '/steps_with_a_long_descriptive_name_to_check_wrapping/BatchNorm_0/mean';
    expect(name.textContent).toBe(path);
    expect(name.title).toBe(path);
    expect(name.querySelector('wbr')).toBeNull(); // no line break opportunity inside
    const parts = Array.from(name.children) as HTMLElement[];
    expect(parts.map(p => [p.className, p.textContent])).toEqual([
      ['lens-pack-seg lens-pack-seg-first lens-pack-seg-gives lens-pack-prefix', '/steps_with_a_long_descriptive_name_to_check_wrapping'],
      ['lens-pack-slash lens-pack-prefix', '/'],
      ['lens-pack-seg lens-pack-seg-mid lens-pack-seg-gives', 'BatchNorm_0'],
      ['lens-pack-slash', '/'],
      ['lens-pack-seg lens-pack-seg-leaf lens-pack-seg-gives', 'mean']
    ]);
    // the muted prefix gives way first, the name last; slashes never
    const shrink = parts.map(p => Number(p.style.flexShrink || 0));
    expect(shrink[0]).toBeGreaterThan(shrink[2] * 1000);
    expect(shrink[2]).toBeGreaterThan(shrink[4] * 1000);
    expect(shrink[4]).toBeGreaterThanOrEqual(1); // below 1, flex would leave it overflowing
    expect([shrink[1], shrink[3]]).toEqual([0, 0]);
    // the value columns are sized from the box's lanes, the path column from its paths
    const box = row.closest('.lens-pack-box') as HTMLElement;
    expect(box.style.getPropertyValue('--lens-pack-path-w')).toMatch(/^\d+ch$/);
    expect(box.style.getPropertyValue('--lens-pack-outer-min')).toMatch(/^\d+ch$/);
  });

  it('lets a shape break after its commas only, and a note before its fate', () => {
    const host = document.createElement('div');
    renderPayload(host, fixture('vmap_scan.json'));
    const kernel = Array.from(host.querySelectorAll('.lens-pack-lane')).find(r =>
      r.querySelector('.lens-pack-name')?.textContent!.endsWith('/Dense_0/kernel')
    )!;
    const drawn = (n: Element) => Array.from(n.childNodes).map(c => (c.nodeName === 'WBR' ? '|' : c.textContent)).join('');
    expect(drawn(kernel.querySelector('.lens-pack-outer')!)).toBe("f32[2,|3,|4,|4] ('ens',|'layers',|'embed',|'mlp')");
    // a space between the note and the fate: the line breaks there, not inside 'created'
    const how = kernel.querySelector('.lens-pack-how')!;
    expect(how.textContent).toBe("vmap axis 0, size 2 ('ens') created");
    // a short segment (two characters or fewer) never gives way
    const short = document.createElement('div');
    const doc = fixture('multi_scope.json');
    renderPayload(short, doc);
    const v = Array.from(short.querySelectorAll('.lens-pack-name')).find(n => n.textContent === '/a/inner/v')!;
    expect(Array.from(v.children).map(c => c.classList.contains('lens-pack-seg-gives'))).toEqual([false, false, true, false, false]);
    expect(Array.from(v.children).map(c => (c as HTMLElement).style.flexShrink !== '')).toEqual([false, false, true, false, false]);
  });

  it('keeps user strings as text (no HTML injection)', () => {
    const host = document.createElement('div');
    renderPayload(host, fixture('vmap_scan.json'));
    expect(host.querySelector('img')).toBeNull();
    expect(host.textContent).toContain('<img src=x onerror=alert(1)>');
  });

  it('highlights a variable in every box on hover', () => {
    const host = document.createElement('div');
    renderPayload(host, fixture('vmap_apply.json'));
    const inner = host.querySelector('.lens-pack-box .lens-pack-box [data-collection="batch_stats"]') as HTMLElement;
    inner.dispatchEvent(new MouseEvent('mouseover', { bubbles: true }));
    const lit = Array.from(host.querySelectorAll('.lens-pack-hl')) as HTMLElement[];
    // The same variable in the vmap's box and in the scan's box nested in it.
    expect(lit.map(n => (n.closest('.lens-pack-box') as HTMLElement).dataset.transform)).toEqual(['vmap', 'scan']);
    expect(new Set(lit.map(n => n.dataset.key))).toEqual(new Set([inner.dataset.key]));
  });

  it('nests transforms as boxes, with a breadcrumb back out', () => {
    const host = document.createElement('div');
    const view = renderPayload(host, fixture('nested.json'))!;
    const boxes = Array.from(host.querySelectorAll('.lens-pack-box')) as HTMLDetailsElement[];
    expect(boxes.map(b => [b.dataset.transform, b.dataset.depth])).toEqual([['jit', '0'], ['scan', '1'], ['vmap', '2']]);
    expect(boxes[2].parentElement).toBe(boxes[1]);
    const crumbs = boxes[2].querySelector(':scope > .lens-pack-crumbs')!;
    expect(crumbs.textContent).toBe('in jit of / › scan of /ScanBody_0 › vmap of /ScanBody_0/VmapMember_0');
    (crumbs.querySelector('.lens-pack-crumb') as HTMLElement).click(); // back out to jit
    expect([boxes[0].open, boxes[1].open, boxes[2].open]).toEqual([true, false, false]);
    expect(view.boxOf(view.trace.packs[0])).toBe(boxes[0]);
  });

  it('shows everything about a lane in the details panel on click', () => {
    const host = document.createElement('div');
    renderPayload(host, fixture('scan_carry.json'));
    const row = host.querySelector('[data-collection="counter"]') as HTMLElement;
    row.click();
    const panel = host.querySelector('.lens-pack-details')!;
    const pairs = Array.from(panel.querySelectorAll('.lens-pack-details-key')).map(
      k => `${k.textContent}=${k.nextElementSibling!.textContent}`
    );
    // right under the clicked lane, not below the whole trace
    expect(row.nextElementSibling).toBe(panel);
    expect(panel.querySelectorAll('dl, dt, dd').length).toBe(0);
    expect(pairs).toContain('path=/steps_with_a_long_descriptive_name_to_check_wrapping/steps');
    expect(pairs).toContain('lifted=carry: in → out, threaded through the steps');
    expect(pairs).toContain('carry out=i32[]');
    expect(row.classList.contains('lens-pack-selected')).toBe(true);
    row.click(); // clicking again closes it
    expect(host.querySelector('.lens-pack-details')).toBeNull();
    expect(row.classList.contains('lens-pack-selected')).toBe(false);
  });

  it('filters lanes and counts the matches per group', () => {
    const host = document.createElement('div');
    const view = renderPayload(host, fixture('vmap_scan.json'))!;
    expect(host.querySelector('.lens-pack-filter')).not.toBeNull(); // 12 lanes > 10
    view.filter('kernel');
    const shown = Array.from(host.querySelectorAll('.lens-pack-lane:not(.lens-pack-lane-head)')).filter(
      n => !(n as HTMLElement).hidden
    );
    expect(shown.map(n => n.querySelector('.lens-pack-name')!.textContent!.split('/').pop())).toEqual(['kernel', 'kernel']);
    expect(host.querySelector('.lens-pack-count')!.textContent).toBe(' · 1 of 4 variables');
    view.filter('');
    expect(host.querySelector('.lens-pack-count')!.textContent).toBe(' · 4 variables');
  });

  it('collapses large groups and boxes beyond the first few', () => {
    // Just past both limits (OPEN_GROUP_LANES lanes in a group, 8 boxes side by
    // side): a few hundred jsdom nodes, not thousands.
    const host = document.createElement('div');
    const one = fixture('scan_carry.json').packs[0];
    const many = Array.from({ length: 11 }, (_, i) => ({ ...one, id: i }));
    const n = OPEN_GROUP_LANES + 1;
    const big = { ...one, lanes: Array.from({ length: n }, (_, i) => ({ ...one.lanes[0], key: `k${i}`, path: `/layer_${i}/kernel` })) };
    renderPayload(host, { schema: 'lens.pack-trace', version: 2, packs: [big, ...many] });
    const boxes = Array.from(host.querySelectorAll('.lens-pack-box')) as HTMLDetailsElement[];
    expect(boxes.length).toBe(12);
    expect(boxes.filter(b => b.open).length).toBe(3);
    const firstGroup = boxes[0].querySelector('.lens-pack-group') as HTMLDetailsElement;
    expect(firstGroup.open).toBe(false);
    expect(firstGroup.querySelector('.lens-pack-count')!.textContent).toBe(` · ${n} variables`);
    const smallGroup = boxes[1].querySelector('.lens-pack-group') as HTMLDetailsElement;
    expect(smallGroup.open).toBe(true);
  }, HEAVY);

  it('formats recorded options', () => {
    expect(optionText([['params', 0], ['batch_stats', null]])).toBe('{params: 0, batch_stats: None}');
    expect(optionText([['params', true]])).toBe('{params: True}'); // as Python writes it
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
    renderPayload(host, {
      schema: 'lens.pack-trace',
      version: 2,
      packs: [{ transform: 'scan', groups: 'params' }, good]
    })!;
    expect(Array.from(host.querySelectorAll('.lens-pack-box')).map(b => (b as HTMLElement).dataset.transform)).toEqual(['vmap', 'scan']);
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
      expect(host.querySelector('.lens-pack-error, .lens-pack')).not.toBeNull(); // drawn, or said why not
      drawn += host.querySelector('.lens-pack-box') ? 1 : 0;
    }
    expect(drawn).toBeGreaterThan(0); // corruption in one record leaves the others drawn
  }, 4 * HEAVY); // 300 renders
});

describe('terms explained on hover', () => {
  /** `[term as shown, its hover text]` of every explained term under `node`, in reading order. */
  const terms = (node: Element) =>
    Array.from(node.querySelectorAll('.lens-pack-term')).map(n => [n.textContent, (n as HTMLElement).title]);
  const draw = (name: string, edit?: (doc: any) => void) => {
    const host = document.createElement('div');
    const doc = fixture(name);
    edit?.(doc);
    renderPayload(host, doc);
    return host;
  };

  it("explains a scan's carried, split and broadcast state, its results, keys and what is written back", () => {
    const host = draw('scan_carry.json');
    const got = Object.fromEntries(terms(host));
    expect(got['outer value → inner value']).toBe(meaning('outer value → inner value')); // the legend
    expect(got['broadcast']).toBe(meaning('not split (broadcast)')); // the summary: batch_stats broadcast
    expect(got['carried step to step']).toBe(meaning('carried step to step'));
    expect(got['split along axis 0']).toBe(meaning('split along axis n'));
    expect(got['carry from the last step']).toBe(meaning('carry from the last step'));
    expect(got['stacked along axis 0']).toBe(meaning('stacked along axis n'));
    expect(got['writes the variables back']).toBe(meaning('writes the variables back'));
    expect(got['scan axis 0, length 3']).toBe(meaning('vmap axis / scan axis')); // a group's shared note
    expect(got['split into 3 keys']).toBe(meaning('split into n keys'));
    // the text reads as before: the terms are spans inside it, underlined with dots
    const axes = host.querySelector('.lens-pack-axes')!;
    expect(axes.textContent).toBe(
      'inputs: c carried step to step x split along axis 0 · outputs: carry from the last step ys stacked along axis 0'
    );
    const carry = Array.from(axes.querySelectorAll('.lens-pack-term')).find(n => n.textContent === 'carry from the last step')!;
    expect(carry.closest('.lens-pack-arg')).not.toBeNull();
    expect(carry.querySelector('b')!.textContent).toBe('carry'); // the part's name still bold, inside the term
    expect(host.querySelector('.lens-pack-rng .lens-pack-term')!.textContent).toBe('split into 3 keys');
  });

  it('explains each term where the picture first says it, once per output', () => {
    const host = draw('vmap_scan.json'); // vmap then the scan inside it: "split along axis 0" in both boxes
    const split = terms(host).filter(([, title]) => title === meaning('split along axis n'));
    expect(split).toEqual([['split along axis 0', meaning('split along axis n')]]);
    const vmap = host.querySelector('.lens-pack-box')!;
    expect(vmap.querySelector(':scope > .lens-pack-axes .lens-pack-term')!.textContent).toBe('split along axis 0');
    const names = terms(host).map(([, title]) => title);
    expect(new Set(names).size).toBe(names.length);
    expect(terms(host).map(([text]) => text)).toEqual(expect.arrayContaining(['vmap axis 0, size 2', 'partition name']));
    // another output (or the same drawn again) explains them again
    expect(terms(draw('vmap_scan.json'))).toEqual(terms(host));
  });

  it('explains the words of a pass-through jit, an axis name and a lane note', () => {
    const jit = Object.fromEntries(terms(draw('nnx_jit_scan.json')));
    expect(jit['passed in whole']).toBe(meaning('flow through')); // the summary says it first
    expect(jit['writes the variables back']).toBe(meaning('writes the variables back'));
    const ens = draw('nnx_ensemble.json');
    expect(Object.fromEntries(terms(ens))['axis_name']).toBe(meaning('axis_name'));
    // a lane's own note (its group's lanes say different things), the first lane's only
    const lanes = draw('multi_scope.json', doc => {
      doc.packs[0].lanes[0].note += ' (first)';
    });
    const notes = Array.from(lanes.querySelectorAll('.lens-pack-note'));
    expect(notes.map(n => n.textContent)).toEqual(['vmap axis 0, size 3 (first)', 'vmap axis 0, size 3', 'vmap axis 0, size 3']);
    expect(notes.map(n => terms(n))).toEqual([[['vmap axis 0, size 3', meaning('vmap axis / scan axis')]], [], []]);
    // "counter: carry" heads its group; the axes line has explained the carry already
    const scan = draw('scan_carry.json');
    const head = Array.from(scan.querySelectorAll('.lens-pack-group-head')).find(n => n.textContent!.startsWith('counter'))!;
    expect(head.textContent).toBe('counter: carry · 1 variable');
    expect(terms(head)).toEqual([]);
    const noAxes = draw('scan_carry.json', doc => {
      delete doc.packs[0].axes;
    });
    const first = Array.from(noAxes.querySelectorAll('.lens-pack-group-head')).find(n => n.textContent!.startsWith('counter'))!;
    expect(terms(first)).toEqual([['carry', meaning('carried step to step')]]);
  });

  it("leaves a user's argument name alone, and payload text stays text", () => {
    const host = draw('scan_carry.json', doc => {
      doc.packs[0].axes.in[0].arg = 'mutable';
      doc.packs[0].summary = 'scan of /<b>mutable</b>';
    });
    const chip = host.querySelector('.lens-pack-arg')!;
    expect(chip.textContent).toBe('mutable carried step to step');
    expect(chip.querySelector('b')!.textContent).toBe('mutable');
    expect(chip.querySelector('b')!.closest('.lens-pack-term')).toBeNull();
    expect(terms(chip)).toEqual([['carried step to step', meaning('carried step to step')]]);
    const summary = host.querySelector('.lens-pack-summary')!;
    expect(summary.textContent).toBe('scan of /<b>mutable</b>');
    expect(summary.querySelector('b')).toBeNull();
  });

  it('explains the terms of the details panel, on their own', () => {
    const host = draw('scan_carry.json');
    (host.querySelector('[data-collection="counter"]') as HTMLElement).click();
    const panel = host.querySelector('.lens-pack-details')!;
    expect(Object.fromEntries(terms(panel))).toEqual({
      lifted: meaning('lifted'),
      carry: meaning('carried step to step'),
      'written back': meaning('writes the variables back')
    });
    // names and shapes are not searched for terms
    expect(panel.querySelectorAll('.lens-pack-details-value')[1].querySelector('.lens-pack-term')).toBeNull();
  });
});
