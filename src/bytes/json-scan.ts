/**
 * A linear pre-scan of a large JSON body, run in a byte worker before the body is parsed on the event loop:
 * JSON.parse of 10 MB of `0,0,0,...` takes the loop for a second and builds millions of values. Counting
 * values and nesting needs no parse and no allocation; a body within the bounds parses quickly (its size
 * is then in long strings: images).
 */
import { RequestError } from '../errors/request-error.ts';

/**
 * More values than any real request has (A1111 bodies with ControlNet units have a few hundred). Validation
 * reports one issue per wrong array element, so this also bounds what a wrongly typed array costs.
 */
export const MAX_JSON_VALUES = 10_000;

/** Counts the values and nesting of JSON bytes; throws a RequestError (413 / 400) naming the body past a bound. */
export function scanJsonShape(bytes: Buffer, maxValues = MAX_JSON_VALUES, maxDepth = 64): void {
  let values = 0;
  let depth = 0;
  const n = bytes.length;
  for (let i = 0; i < n; i++) {
    const c = bytes[i]!;
    if (c === 0x22) {
      // A string: jump to its closing quote (one not escaped by an odd run of backslashes).
      values++;
      let j = i;
      for (;;) {
        j = bytes.indexOf(0x22, j + 1);
        if (j < 0) return; // unterminated: JSON.parse says so
        let k = j - 1;
        while (bytes[k] === 0x5c) k--;
        if ((j - 1 - k) % 2 === 0) break;
      }
      i = j;
    } else if (c === 0x7b || c === 0x5b) {
      values++;
      if (++depth > maxDepth) throw new RequestError(400, 'body', `body: JSON nested deeper than ${maxDepth} levels`, { limit: maxDepth });
    } else if (c === 0x7d || c === 0x5d) depth--;
    else if (c === 0x2c) values++;
    if (values > maxValues) throw new RequestError(413, 'body', `body: more than ${maxValues} JSON values`, { limit: maxValues });
  }
}
