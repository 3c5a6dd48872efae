/**
 * Numeric strings for lax number fields, A1111's and OpenAI's form fields (`"7.5"`, `" 20 "`), parsed in linear time.
 *
 * Why not one regex: `\d+\.?\d*` can split a digit run between its two quantifiers in n ways, so a string of
 * 64 000 digits followed by junk made the old pattern backtrack quadratically and block the event loop for
 * seconds (the worker shares the process: heartbeats were missed). Here the fraction digits need the dot,
 * which leaves the pattern one way to match, and the length is capped before any pattern runs.
 */

/**
 * No real number needs more: a double has 17 significant digits, and a generous margin admits padding,
 * signs and exponents. Longer strings are not numbers (type error, as for any other junk).
 */
export const MAX_NUMERIC_STRING_CHARS = 64;

const FLOAT = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;
const INT = /^[+-]?\d+$/;

/** The number a numeric string denotes, or undefined when it is not one (or is too long to be one). */
export function parseNumericString(v: string, kind: 'int' | 'float'): number | undefined {
  if (v.length > MAX_NUMERIC_STRING_CHARS) return undefined;
  const s = v.trim();
  if (!(kind === 'int' ? INT : FLOAT).test(s)) return undefined;
  return Number(s);
}
