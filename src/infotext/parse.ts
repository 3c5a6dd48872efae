/**
 * A1111's infotext (`parse_generation_parameters`), parsed in one forward pass. The text comes from request
 * bytes (a PNG text chunk, an EXIF comment), so no regex with nested quantifiers may touch it: A1111's own
 * `key: value, ...` regex backtracks cubically on a line of spaces (16 s for 2 000 of them).
 */

/** Key characters A1111 accepts: word characters, space, `-` and `/`, starting with a word character. */
const KEY = /^\w[\w /-]*$/;
/** A one-line infotext is only parameters when it starts like `Steps: `. */
const FIRST_KEY = /^\w[\w ]*$/;

/** `Key: value` pairs of the last infotext line; quoted values (A1111's quote()) may hold `,` and `:`. */
export function infotextPairs(line: string): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  const n = line.length;
  let i = 0;
  while (i < n) {
    const start = i;
    while (i < n && line[i] !== ':' && line[i] !== ',') i++;
    if (i >= n) break;
    if (line[i] === ',') {
      i++;
      continue;
    }
    const key = line.slice(start, i).trim();
    i++;
    while (i < n && (line[i] === ' ' || line[i] === '\t')) i++;
    const valueStart = i;
    let end = -1;
    if (line[i] === '"') {
      let j = i + 1;
      while (j < n && line[j] !== '"') j += line[j] === '\\' ? 2 : 1;
      // A quoted value counts only when a comma (or the end) follows it; otherwise it is a plain value.
      if (j < n) {
        let k = j + 1;
        while (k < n && (line[k] === ' ' || line[k] === '\t')) k++;
        if (k >= n || line[k] === ',') {
          end = j + 1;
          i = k + 1;
        }
      }
    }
    if (end < 0) {
      const comma = line.indexOf(',', valueStart);
      end = comma < 0 ? n : comma;
      i = end + 1;
    }
    if (KEY.test(key)) out.push([key, line.slice(valueStart, end).trim()]);
  }
  return out;
}

/** A1111's `parse_generation_parameters`, for the keys this service writes (values as strings, Size split). */
export function parseInfotext(text: string): Record<string, string> {
  const lines = text.trim().split('\n');
  const first = lines[0] ?? '';
  const colon = first.indexOf(': ');
  const lastIsParams = lines.length > 1 || (colon > 0 && FIRST_KEY.test(first.slice(0, colon)));
  const last = lastIsParams ? (lines.pop() ?? '') : '';
  const out: Record<string, string> = {};
  const prompt: string[] = [];
  const negative: string[] = [];
  let inNegative = false;
  for (const line of lines) {
    if (line.startsWith('Negative prompt:')) {
      inNegative = true;
      negative.push(line.slice('Negative prompt:'.length).trim());
    } else (inNegative ? negative : prompt).push(line);
  }
  out.Prompt = prompt.join('\n');
  out['Negative prompt'] = negative.join('\n');
  for (const [key, raw] of infotextPairs(last)) {
    let value = raw;
    if (value.startsWith('"')) {
      try {
        value = JSON.parse(value) as string;
      } catch {
        // kept as written
      }
    }
    out[key] = value;
    const size = /^(\d+)x(\d+)$/.exec(value);
    if (size && (key === 'Size' || key === 'Hires resize')) {
      out[`${key}-1`] = size[1]!;
      out[`${key}-2`] = size[2]!;
    }
  }
  return out;
}
