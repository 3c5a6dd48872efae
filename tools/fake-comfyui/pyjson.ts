/**
 * Python `json.dumps(obj)` with default settings (`", "` / `": "` separators, `ensure_ascii=True`), the
 * text SaveImage embeds in PNG `tEXt` chunks. Matching it keeps metadata readable by the same tools that
 * read real ComfyUI files. (Integral floats such as `1.0` cannot be told apart from ints after JSON.parse.)
 */
export function pyJsonDumps(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (typeof v === 'number') {
    if (Number.isNaN(v)) return 'NaN';
    if (!Number.isFinite(v)) return v > 0 ? 'Infinity' : '-Infinity';
    return JSON.stringify(v);
  }
  if (typeof v === 'string') return asciiString(v);
  if (Array.isArray(v)) return `[${v.map(pyJsonDumps).join(', ')}]`;
  if (typeof v === 'object') {
    return `{${Object.entries(v as Record<string, unknown>)
      .map(([k, x]) => `${asciiString(k)}: ${pyJsonDumps(x)}`)
      .join(', ')}}`;
  }
  return 'null';
}

function asciiString(s: string): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const ch = s[i] as string;
    if (ch === '"') out += '\\"';
    else if (ch === '\\') out += '\\\\';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\b') out += '\\b';
    else if (ch === '\f') out += '\\f';
    else if (c < 0x20 || c > 0x7e) out += `\\u${c.toString(16).padStart(4, '0')}`;
    else out += ch;
  }
  return `${out}"`;
}
