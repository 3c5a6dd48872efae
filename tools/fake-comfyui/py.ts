/**
 * Python value semantics for JSON values, so the fake's validation converts, compares and prints values the
 * way ComfyUI (CPython) does: `int("48")` passes, `int(48.7)` truncates, `1 == 1.0 == True`, `repr` of lists
 * and strings, `str(float)` keeps `.0`. Raised conversions are `PyError`s carrying the Python type name.
 */

/** A Python exception: `type` is what `full_type_name` would print (`ValueError`, `KeyError`, ...). */
export class PyError extends Error {
  constructor(
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

export function pyTypeName(v: unknown): string {
  if (v === null || v === undefined) return 'NoneType';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'number') return Number.isInteger(v) ? 'int' : 'float';
  if (typeof v === 'string') return 'str';
  if (Array.isArray(v)) return 'list';
  return 'dict';
}

const INT_LITERAL = /^[+-]?\d+(_\d+)*$/;
const FLOAT_LITERAL = /^[+-]?(\d+(_\d+)*(\.(\d+(_\d+)*)?)?|\.\d+(_\d+)*)([eE][+-]?\d+(_\d+)*)?$/;

/** `int(v)`. */
export function pyInt(v: unknown): number {
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'number') {
    if (Number.isNaN(v)) throw new PyError('ValueError', 'cannot convert float NaN to integer');
    if (!Number.isFinite(v)) throw new PyError('OverflowError', 'cannot convert float infinity to integer');
    return Math.trunc(v);
  }
  if (typeof v === 'string') {
    const s = v.trim();
    if (INT_LITERAL.test(s)) return Number(s.replaceAll('_', ''));
    throw new PyError('ValueError', `invalid literal for int() with base 10: ${pyRepr(v)}`);
  }
  throw new PyError('TypeError', `int() argument must be a string, a bytes-like object or a real number, not '${pyTypeName(v)}'`);
}

/** `float(v)`. */
export function pyFloat(v: unknown): number {
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'number') return v;
  if (typeof v === 'string') {
    const s = v.trim();
    const special = /^([+-]?)(inf|infinity|nan)$/i.exec(s);
    if (special) return special[2]?.toLowerCase() === 'nan' ? NaN : special[1] === '-' ? -Infinity : Infinity;
    if (FLOAT_LITERAL.test(s)) return Number(s.replaceAll('_', ''));
    throw new PyError('ValueError', `could not convert string to float: ${pyRepr(v)}`);
  }
  throw new PyError('TypeError', `float() argument must be a string or a real number, not '${pyTypeName(v)}'`);
}

/** `bool(v)`. */
export function pyBool(v: unknown): boolean {
  if (v === null || v === undefined || v === false || v === 0 || v === '') return false;
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === 'object') return Object.keys(v).length > 0;
  return true;
}

/** `a == b` for JSON values. */
export function pyEq(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  const n = (x: unknown) => (typeof x === 'boolean' ? Number(x) : x);
  const [x, y] = [n(a), n(b)];
  if (typeof x === 'number' && typeof y === 'number') return x === y;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((v, i) => pyEq(v, b[i]));
  if (a && b && typeof a === 'object' && typeof b === 'object' && !Array.isArray(a) && !Array.isArray(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && pyEq((a as never)[k], (b as never)[k]));
  }
  return false;
}

/** `repr(float)`: shortest round-trip digits, exponent outside 1e-4 <= |x| < 1e16. */
export function pyFloatRepr(x: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  const [mantissa, exp] = x.toExponential().split('e') as [string, string];
  const e = Number(exp);
  if (e < -4 || e >= 16) return `${mantissa}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`;
  const s = String(x);
  return s.includes('.') ? s : `${s}.0`;
}

/**
 * A number as Python prints it. JSON cannot tell `1.0` from `1`, so the caller says whether the value is a
 * float (a FLOAT input after `float()`, or a FLOAT spec's min/max).
 */
export function pyNum(x: number, isFloat: boolean): string {
  return isFloat ? pyFloatRepr(x) : Number.isInteger(x) && Math.abs(x) < 1e16 ? String(x) : pyFloatRepr(x);
}

function reprString(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = '';
  for (const ch of s) {
    const c = ch.codePointAt(0) as number;
    if (ch === '\\') out += '\\\\';
    else if (ch === quote) out += `\\${quote}`;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (c < 0x20 || c === 0x7f) out += `\\x${c.toString(16).padStart(2, '0')}`;
    else out += ch;
  }
  return quote + out + quote;
}

/** `repr(v)`: `['a', 1]`, `{'k': None}`, `True`. */
export function pyRepr(v: unknown): string {
  if (v === null || v === undefined) return 'None';
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  if (typeof v === 'number') return pyNum(v, false);
  if (typeof v === 'string') return reprString(v);
  if (Array.isArray(v)) return `[${v.map(pyRepr).join(', ')}]`;
  return `{${Object.entries(v)
    .map(([k, x]) => `${reprString(k)}: ${pyRepr(x)}`)
    .join(', ')}}`;
}

/** `str(v)`. */
export function pyStr(v: unknown): string {
  return typeof v === 'string' ? v : pyRepr(v);
}

/** `seq[i]` with Python's errors for tuples (`RETURN_TYPES`). */
export function pyTupleIndex(seq: readonly unknown[], i: unknown): unknown {
  const k0 = typeof i === 'boolean' ? Number(i) : i;
  if (typeof k0 !== 'number' || !Number.isInteger(k0)) {
    throw new PyError('TypeError', `tuple indices must be integers or slices, not ${pyTypeName(i)}`);
  }
  const k = k0 < 0 ? seq.length + k0 : k0;
  if (k < 0 || k >= seq.length) throw new PyError('IndexError', 'tuple index out of range');
  return seq[k];
}

/** Python `<` / `>` between a converted value and a numeric bound; non-numbers raise like CPython. */
export function pyLess(a: unknown, b: unknown): boolean {
  const n = (x: unknown) => (typeof x === 'boolean' ? Number(x) : x);
  const [x, y] = [n(a), n(b)];
  if (typeof x === 'number' && typeof y === 'number') return x < y;
  if (typeof x === 'string' && typeof y === 'string') return x < y;
  throw new PyError('TypeError', `'<' not supported between instances of '${pyTypeName(a)}' and '${pyTypeName(b)}'`);
}
