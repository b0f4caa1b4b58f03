/**
 * Plain words for the technical terms in the pack picture's captions (`carried step
 * to step`, `split along axis 0`, `broadcast`, ...), shown on hover, as lens's
 * script-free HTML shows them. The terms, the patterns that find them and their
 * words come from `glossary.json`, a copy of `lens/display/glossary.json` (which
 * lens/display/_glossary.py reads); tests on both sides keep the two equal, and
 * `test/fixtures/glossed.json` (written by lens) checks that a caption is cut
 * into the same pieces here as in Python. No DOM here.
 */

import glossary from './glossary.json';

/** A term as the glossary names it, its pattern (Python's syntax) and its plain words. */
export interface Term {
  name: string;
  pattern: string;
  means: string;
}

export const TERMS: Term[] = glossary.terms;

/** The dotted underline of an explained term (style/index.css's `.lens-pack-term`). */
export const TERM_STYLE: string = glossary.style;

// Python's `\b` and `\d` on text are Unicode-aware (a word character is a letter, a
// number or `_`; a digit any decimal digit); JavaScript's are ASCII-only, even with
// the `u` flag. Spelled out, they match as in Python (`émutable` holds no `mutable`).
const WORD = '[\\p{L}\\p{N}_]';
const BOUNDARY = `(?:(?<=${WORD})(?!${WORD})|(?<!${WORD})(?=${WORD}))`;

/** A glossary pattern (as Python's `re` reads it) for JavaScript's `RegExp` with the `u` flag. */
export function jsPattern(pattern: string): string {
  let out = '';
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '\\' && i + 1 < pattern.length) {
      const next = pattern[++i];
      out += next === 'd' ? '\\p{Nd}' : next === 'b' && !inClass ? BOUNDARY : c + next;
      continue;
    }
    if (c === '[' && !inClass) {
      inClass = true;
    } else if (c === ']' && inClass) {
      inClass = false;
    }
    out += c;
  }
  return out;
}

/** Every term's pattern as one alternation: where two match at one place, the earlier term wins. */
const FIND = new RegExp(TERMS.map((t, i) => `(?<t${i}>${jsPattern(t.pattern)})`).join('|'), 'gu');

/** A piece of a caption: a term said for the first time (with its words), or plain text. */
export interface Piece {
  text: string;
  term: Term | null;
}

/**
 * Cuts captions into pieces, each term explained where an output first says it
 * (one `Gloss` per output, every caption in reading order), as Python's `Gloss`.
 */
export class Gloss {
  readonly seen = new Set<string>();

  /**
   * `text` cut into pieces that join to it. A term found entirely in its first
   * `skip` characters (a user's argument name) stays plain and unexplained.
   */
  pieces(text: string, skip = 0): Piece[] {
    const out: Piece[] = [];
    let at = 0;
    for (const m of text.matchAll(FIND)) {
      const start = m.index ?? 0;
      const end = start + m[0].length;
      const key = Object.keys(m.groups ?? {}).find(k => m.groups![k] !== undefined);
      const term = key === undefined ? undefined : TERMS[Number(key.slice(1))];
      if (!term || end <= skip || this.seen.has(term.name)) {
        continue;
      }
      this.seen.add(term.name);
      if (start > at) {
        out.push({ text: text.slice(at, start), term: null });
      }
      out.push({ text: m[0], term });
      at = end;
    }
    if (at < text.length) {
      out.push({ text: text.slice(at), term: null });
    }
    return out;
  }
}

/** The plain words for the term named `name` (as the glossary names it). */
export function meaning(name: string): string {
  const term = TERMS.find(t => t.name === name);
  if (!term) {
    throw new Error(`no glossary term ${JSON.stringify(name)}`);
  }
  return term.means;
}
