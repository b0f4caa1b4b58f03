import { readFileSync } from 'fs';
import { join } from 'path';
import { describe, expect, it } from 'vitest';

import { Gloss, TERMS, TERM_STYLE, jsPattern, meaning } from '../src/glossary';

const fixture = (name: string) => JSON.parse(readFileSync(join(__dirname, 'fixtures', name), 'utf8'));

/** A declaration list as a sorted list of `property:value`, spaces dropped. */
const declarations = (css: string) =>
  css
    .split(';')
    .map(d => d.replace(/\s+/g, ''))
    .filter(Boolean)
    .sort();

describe('glossary', () => {
  it("keeps the shipped glossary and the extension's copy identical", () => {
    const shipped = readFileSync(join(__dirname, '..', '..', 'lens', 'display', 'glossary.json'), 'utf8');
    const copy = readFileSync(join(__dirname, '..', 'src', 'glossary.json'), 'utf8');
    expect(JSON.parse(copy)).toEqual(JSON.parse(shipped));
    expect(TERMS.length).toBeGreaterThan(20);
  });

  it('reads every pattern as a JavaScript RegExp (flag u)', () => {
    for (const t of TERMS) {
      expect(() => new RegExp(jsPattern(t.pattern), 'u'), t.name).not.toThrow();
    }
  });

  it('cuts every caption as lens.display does (glossed.json, written by lens)', () => {
    const cases: { text: string; pieces: [string, string | null][] }[] = fixture('glossed.json');
    expect(cases.length).toBeGreaterThan(50);
    for (const c of cases) {
      const got = new Gloss().pieces(c.text).map(p => [p.text, p.term ? p.term.name : null]);
      expect([c.text, got]).toEqual([c.text, c.pieces]);
    }
  });

  it('reads \\b and \\d as Python does (Unicode letters, digits and _ are word characters)', () => {
    const names = (text: string) => new Gloss().pieces(text).filter(p => p.term).map(p => p.text);
    expect(names('émutable · mutableé · rel_ · été rel')).toEqual(['rel']);
    expect(names('split along axis ٣')).toEqual(['split along axis ٣']);
    expect(names('𝒳broadcast')).toEqual([]);
  });

  it('explains each term once per Gloss, and leaves a term found in the first `skip` characters alone', () => {
    const g = new Gloss();
    expect(g.pieces('x split along axis 0, y split along axis 1')).toEqual([
      { text: 'x ', term: null },
      { text: 'split along axis 0', term: TERMS.find(t => t.name === 'split along axis n') },
      { text: ', y split along axis 1', term: null }
    ]);
    expect(g.pieces('z split along axis 2')).toEqual([{ text: 'z split along axis 2', term: null }]);
    expect(new Gloss().pieces('z split along axis 2')[1].term!.means).toBe(meaning('split along axis n'));
    const chip = new Gloss();
    expect(chip.pieces('broadcast not split (broadcast)', 'broadcast'.length).map(p => p.term?.name ?? null)).toEqual([
      null,
      'not split (broadcast)'
    ]);
    // a term that begins in the name and goes on past it is explained
    expect(new Gloss().pieces('carry from the last step', 'carry'.length)[0].term!.name).toBe('carry from the last step');
  });

  it('underlines a term with the dots of the script-free HTML (style/index.css)', () => {
    const css = readFileSync(join(__dirname, '..', 'style', 'index.css'), 'utf8');
    const rule = /\.lens-pack-term\s*\{([^}]*)\}/.exec(css);
    expect(rule).not.toBeNull();
    expect(declarations(rule![1])).toEqual(declarations(TERM_STYLE));
  });
});
