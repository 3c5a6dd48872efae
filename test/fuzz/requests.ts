/** What the fuzzer sends: one HTTP request, built lazily so large reproductions exist only while in flight. */
export interface FuzzRequest {
  /** Which generator or reproduction made it (reported with any problem). */
  label: string;
  method: 'GET' | 'POST' | 'DELETE' | 'PUT';
  path: string;
  headers?: Record<string, string>;
  /** Built when sent. A function returning an async iterable streams the body (for bodies of 100 MB and more). */
  body?: () => Buffer | string | AsyncIterable<Uint8Array>;
}

export const b64 = (b: Uint8Array): string => Buffer.from(b).toString('base64');

export function json(label: string, path: string, value: unknown, extraHeaders: Record<string, string> = {}): FuzzRequest {
  return { label, method: 'POST', path, headers: { 'content-type': 'application/json', ...extraHeaders }, body: () => JSON.stringify(value) ?? 'null' };
}

export function raw(label: string, path: string, contentType: string | undefined, body: Buffer | string): FuzzRequest {
  return { label, method: 'POST', path, headers: contentType === undefined ? {} : { 'content-type': contentType }, body: () => body };
}
