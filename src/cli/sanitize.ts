/**
 * Terminal output from untrusted text. Prompts, failure messages and ComfyUI's errors come from clients; raw,
 * their escape sequences would recolour the terminal, retitle the window, erase lines or move the cursor.
 * Every C0 control but newline and tab, DEL and every C1 control (U+0080–U+009F, including the 8-bit CSI
 * U+009B) is shown as a `\u00XX` escape instead: readable, inert, and still valid inside JSON strings.
 */
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

export function sanitizeForTerminal(s: string): string {
  return s.replace(CONTROL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
