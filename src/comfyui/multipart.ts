/**
 * A `multipart/form-data` body (RFC 7578) for ComfyUI's uploads (`/upload/image`, `/upload/mask`): text fields
 * and files, the files streamed from their Blob (a file-backed one from the blob store is read as it is sent).
 * Its length is known before it is sent, so the request carries a Content-Length as a browser's would.
 */
import { randomBytes } from 'node:crypto';
import type { Blob } from 'node:buffer';

type Part = { name: string; value: string } | { name: string; file: Blob; filename: string };

/** Names and filenames go in a quoted header parameter: escape what would end it or the header (as browsers do). */
function quoted(s: string): string {
  return s.replace(/\r/g, '%0D').replace(/\n/g, '%0A').replace(/"/g, '%22');
}

export class MultipartForm {
  private readonly parts: Part[] = [];
  readonly boundary = `----comfy-durable-${randomBytes(12).toString('hex')}`;

  /** A text field, or a file when `value` is a Blob (its type is the part's Content-Type). */
  append(name: string, value: string | Blob, filename?: string): void {
    this.parts.push(typeof value === 'string' ? { name, value } : { name, file: value, filename: filename ?? 'blob' });
  }

  get contentType(): string {
    return `multipart/form-data; boundary=${this.boundary}`;
  }

  private head(p: Part): Buffer {
    const disposition = `Content-Disposition: form-data; name="${quoted(p.name)}"`;
    const lines =
      'file' in p
        ? `--${this.boundary}\r\n${disposition}; filename="${quoted(p.filename)}"\r\nContent-Type: ${p.file.type || 'application/octet-stream'}\r\n\r\n`
        : `--${this.boundary}\r\n${disposition}\r\n\r\n`;
    return Buffer.from(lines, 'utf8');
  }

  private get tail(): Buffer {
    return Buffer.from(`--${this.boundary}--\r\n`, 'utf8');
  }

  /** The body's length in bytes. */
  get length(): number {
    let n = this.tail.length;
    for (const p of this.parts) n += this.head(p).length + ('file' in p ? p.file.size : Buffer.byteLength(p.value, 'utf8')) + 2;
    return n;
  }

  /** The body, part by part; a file's bytes as its Blob streams them. */
  async *chunks(): AsyncGenerator<Uint8Array> {
    const crlf = Buffer.from('\r\n');
    for (const p of this.parts) {
      yield this.head(p);
      if ('file' in p) {
        for await (const chunk of p.file.stream()) yield chunk as Uint8Array;
      } else {
        yield Buffer.from(p.value, 'utf8');
      }
      yield crlf;
    }
    yield this.tail;
  }
}
