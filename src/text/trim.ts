/**
 * Trimming by character class in one pass from each end. The regex forms (`/\/+$/`, `/[\s,]+$/`, `/\s+,/g`)
 * retry at every start position, quadratic on a long run that does not end the string; some of these
 * strings come from requests.
 */

const isSpace = (c: string): boolean => c.trim() === '';

/** `s` without the characters `drop` accepts at its end. */
export function trimEndWhere(s: string, drop: (c: string) => boolean): string {
  let end = s.length;
  while (end > 0 && drop(s[end - 1]!)) end--;
  return s.slice(0, end);
}

/** `s` without the characters `drop` accepts at either end. */
export function trimWhere(s: string, drop: (c: string) => boolean): string {
  let start = 0;
  while (start < s.length && drop(s[start]!)) start++;
  return trimEndWhere(s.slice(start), drop);
}

/** A URL or path without its trailing slashes. */
export function trimTrailingSlashes(s: string): string {
  return trimEndWhere(s, (c) => c === '/');
}

/** Prompt text tidied after tags were cut out: no space before a comma, no empty comma runs, none at the ends. */
export function tidyPromptCommas(text: string): string {
  const noSpaceBeforeComma = text
    .split(',')
    .map((part, i, all) => (i < all.length - 1 ? trimEndWhere(part, isSpace) : part))
    .join(',');
  return trimWhere(noSpaceBeforeComma.replace(/,(\s*,)+/g, ','), (c) => c === ',' || isSpace(c));
}

export { isSpace };
