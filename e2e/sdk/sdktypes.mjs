// Checks values against the Codex SDK's own type declarations: it reads
// @openai/codex-sdk's dist/index.d.ts (the types the SDK hands to its users)
// and checks a value against a named type strictly: every required field
// present, no field the type does not declare, every value of its declared
// type (string, number, boolean, string literals, unions, arrays, inline
// objects and the named types they refer to).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// Types imported from other packages, accepted as any object.
const EXTERNAL = new Set(['ContentBlock']);

export function loadSdkTypes() {
  // The package's entry point is dist/index.js; its declarations sit beside it.
  const entry = fileURLToPath(import.meta.resolve('@openai/codex-sdk'));
  const dts = readFileSync(entry.replace(/\.js$/, '.d.ts'), 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/^\s*\/\/.*$/gm, '');
  const types = new Map();
  for (const m of dts.matchAll(/^type (\w+) = (\{[\s\S]*?\n\}|[^;{]+);$/gm)) {
    types.set(m[1], m[2].trim());
  }
  if (!types.has('ThreadEvent') || !types.has('ThreadItem')) {
    throw new Error('index.d.ts has no ThreadEvent/ThreadItem: the SDK changed shape');
  }
  return types;
}

// splitTop splits s on sep where no bracket is open.
function splitTop(s, sep) {
  const out = [];
  let depth = 0, cur = '', quote = false;
  for (const ch of s) {
    if (ch === '"') quote = !quote;
    if (!quote) {
      if ('{[('.includes(ch)) depth++;
      if ('}])'.includes(ch)) depth--;
      if (ch === sep && depth === 0) { out.push(cur); cur = ''; continue; }
    }
    cur += ch;
  }
  if (cur.trim()) out.push(cur);
  return out.map((p) => p.trim()).filter(Boolean);
}

function objectFields(body) {
  const fields = [];
  for (const f of splitTop(body.slice(1, -1), ';')) {
    const m = f.match(/^(\w+)(\?)?:\s*([\s\S]+)$/);
    if (!m) throw new Error(`cannot read field ${JSON.stringify(f)}`);
    fields.push({ name: m[1], optional: !!m[2], type: m[3].trim() });
  }
  return fields;
}

const isObj = (v) => typeof v === 'object' && v !== null && !Array.isArray(v);

// check returns null when v has type t, else why not.
export function check(types, t, v, at = '$') {
  t = t.trim();
  const alts = splitTop(t, '|');
  if (alts.length > 1) {
    // A tagged union: pick the alternative by its "type" literal.
    const reasons = [];
    for (const a of alts) {
      const why = check(types, a, v, at);
      if (!why) return null;
      reasons.push(why);
    }
    const tagged = reasons.find((r) => !r.includes('.type:'));
    return tagged ?? `${at}: matches none of ${t}`;
  }
  if (t.endsWith('[]')) {
    if (!Array.isArray(v)) return `${at}: not an array`;
    for (let i = 0; i < v.length; i++) {
      const why = check(types, t.slice(0, -2), v[i], `${at}[${i}]`);
      if (why) return why;
    }
    return null;
  }
  if (t.startsWith('"')) return v === JSON.parse(t) ? null : `${at}: ${JSON.stringify(v)} is not ${t}`;
  switch (t) {
    case 'string': return typeof v === 'string' ? null : `${at}: not a string`;
    case 'number': return typeof v === 'number' ? null : `${at}: not a number`;
    case 'boolean': return typeof v === 'boolean' ? null : `${at}: not a boolean`;
    case 'unknown': return null;
  }
  if (t.startsWith('{')) {
    if (!isObj(v)) return `${at}: not an object`;
    const fields = objectFields(t);
    for (const f of fields) {
      if (!(f.name in v)) {
        if (f.optional) continue;
        return `${at}.${f.name}: missing`;
      }
      const why = check(types, f.type, v[f.name], `${at}.${f.name}`);
      if (why) return why;
    }
    for (const k of Object.keys(v)) {
      if (!fields.some((f) => f.name === k)) return `${at}.${k}: not declared by the SDK`;
    }
    return null;
  }
  if (EXTERNAL.has(t)) return isObj(v) ? null : `${at}: not an object`;
  if (types.has(t)) return check(types, types.get(t), v, at);
  throw new Error(`unknown type ${t} at ${at}`);
}
