/**
 * Checks a pack-trace payload against the JSON schema lens ships
 * (lens/core/pack_trace.schema.json; src/pack_trace.schema.json is a copy that a
 * unit test keeps identical).
 *
 * A small interpreter of the schema's keywords (type, const, enum, required,
 * properties, items, oneOf, $ref) rather than Ajv: Ajv compiles validators with
 * `new Function`, which strict content-security policies (VS Code's notebook
 * webviews) refuse, and its generated code recurses, so a payload nested 20,000
 * levels deep would overflow the stack. This one walks with an explicit stack and
 * a depth limit, and reports every problem with its path.
 */

import schemaJson from './pack_trace.schema.json';

export type Schema = { [key: string]: unknown };

export interface Problem {
  path: string;
  message: string;
}

/** The schema, and the definition of one pack record in it. */
export const SCHEMA = schemaJson as Schema;
const DEFS = (SCHEMA.$defs ?? {}) as Record<string, Schema>;

/** JSON nesting checked inside one record; anything deeper is reported, not walked. */
export const MAX_DEPTH = 64;

export function typeName(x: unknown): string {
  if (x === null) {
    return 'null';
  }
  if (Array.isArray(x)) {
    return 'a list';
  }
  if (typeof x === 'object') {
    return 'an object';
  }
  return `a ${typeof x}`;
}

function hasType(x: unknown, t: string): boolean {
  switch (t) {
    case 'null':
      return x === null;
    case 'array':
      return Array.isArray(x);
    case 'object':
      return typeof x === 'object' && x !== null && !Array.isArray(x);
    case 'integer':
      return Number.isInteger(x);
    case 'number':
      return typeof x === 'number' && Number.isFinite(x);
    default:
      return typeof x === t;
  }
}

const TYPE_WORDS: Record<string, string> = {
  array: 'a list',
  object: 'an object',
  integer: 'an integer',
  null: 'null'
};

function resolve(s: Schema): Schema {
  let out = s;
  for (let i = 0; i < 8 && typeof out.$ref === 'string'; i++) {
    const name = (out.$ref as string).replace(/^#\/\$defs\//, '');
    out = Object.prototype.hasOwnProperty.call(DEFS, name) ? DEFS[name] : {};
  }
  return out;
}

/**
 * The problems of `value` against `schema`, each with its path under `where`
 * (at most `limit` of them; iterative, so any depth is safe).
 */
export function validate(value: unknown, schema: Schema, where: string, limit = 20): Problem[] {
  const problems: Problem[] = [];
  const stack: [unknown, Schema, string, number][] = [[value, schema, where, 0]];
  while (stack.length && problems.length < limit) {
    const [x, raw, path, depth] = stack.pop()!;
    const s = resolve(raw);
    if (depth > MAX_DEPTH) {
      problems.push({ path, message: `nested deeper than ${MAX_DEPTH} levels` });
      continue;
    }
    if ('const' in s && x !== s.const) {
      problems.push({ path, message: `must be ${JSON.stringify(s.const)}, not ${JSON.stringify(x)}` });
      continue;
    }
    if (Array.isArray(s.enum) && !(s.enum as unknown[]).includes(x)) {
      problems.push({ path, message: `must be one of ${(s.enum as unknown[]).map(v => JSON.stringify(v)).join(', ')}, not ${JSON.stringify(x)}` });
      continue;
    }
    if (Array.isArray(s.oneOf)) {
      const fits = (s.oneOf as Schema[]).filter(alt => validate(x, alt, path, 1).length === 0);
      if (fits.length !== 1) {
        problems.push({ path, message: `does not have the expected form (got ${typeName(x)})` });
      }
      continue;
    }
    if (s.type !== undefined) {
      const types = (Array.isArray(s.type) ? s.type : [s.type]) as string[];
      if (!types.some(t => hasType(x, t))) {
        const want = types.map(t => TYPE_WORDS[t] ?? `a ${t}`).join(' or ');
        problems.push({ path, message: `should be ${want}, not ${typeName(x)}` });
        continue;
      }
    }
    if (hasType(x, 'object')) {
      const obj = x as Record<string, unknown>;
      for (const key of (s.required ?? []) as string[]) {
        if (!Object.prototype.hasOwnProperty.call(obj, key)) {
          problems.push({ path, message: `has no "${key}"` });
        }
      }
      const props = (s.properties ?? {}) as Record<string, Schema>;
      for (const key of Object.keys(props).reverse()) {
        if (Object.prototype.hasOwnProperty.call(obj, key)) {
          stack.push([obj[key], props[key], `${path}.${key}`, depth + 1]);
        }
      }
    } else if (Array.isArray(x) && s.items !== undefined) {
      for (let i = x.length - 1; i >= 0; i--) {
        stack.push([x[i], s.items as Schema, `${path}[${i}]`, depth + 1]);
      }
    }
  }
  return problems;
}

/** The schema of one pack record, without descending into its children. */
export const RECORD_SCHEMA: Schema = (() => {
  const pack = DEFS.pack ?? {};
  const props = { ...((pack.properties ?? {}) as Record<string, Schema>), children: { type: 'array' } };
  return { ...pack, properties: props };
})();
