/**
 * Terminal output from untrusted text. Prompts, failure messages and ComfyUI's errors come from clients; raw,
 * their escape sequences would recolour the terminal, retitle the window, erase lines or move the cursor, and
 * their bidirectional controls would reorder what the operator reads (a prompt ending in U+202E shows the
 * following columns reversed; U+2066–U+2069 isolate and hide a span's true order).
 * Every C0 control but newline and tab, DEL, every C1 control (U+0080–U+009F, including the 8-bit CSI U+009B),
 * every bidi control (U+061C, U+200E/U+200F, U+202A–U+202E, U+2066–U+2069), the invisible zero-width characters
 * (U+200B–U+200D, U+2060, U+FEFF) and the Unicode line/paragraph separators (U+2028/U+2029) are shown as a
 * `\uXXXX` escape instead: readable, inert, and still valid inside JSON strings.
 */
// eslint-disable-next-line no-control-regex -- finding control characters is what this regex is for
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060\u2066-\u2069\ufeff]/g;

export function sanitizeForTerminal(s: string): string {
  return s.replace(CONTROL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
