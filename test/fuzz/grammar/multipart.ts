/**
 * multipart/form-data bodies for the fuzzer: well-formed parts (fields and files) and the ways real bodies
 * break: a wrong or missing boundary, no closing delimiter, headers without a blank line, a part with no
 * name, duplicated fields, a flood of tiny parts.
 */
import fc from 'fast-check';

export interface Part {
  name?: string;
  filename?: string;
  contentType?: string;
  data: Buffer;
}

export function multipart(parts: Part[], boundary: string, flaw: MultipartFlaw = 'none'): Buffer {
  const out: Buffer[] = [];
  for (const p of parts) {
    const disp = [`form-data`, ...(p.name !== undefined ? [`name="${p.name}"`] : []), ...(p.filename !== undefined ? [`filename="${p.filename}"`] : [])].join(
      '; ',
    );
    const headers = `Content-Disposition: ${disp}\r\n${p.contentType ? `Content-Type: ${p.contentType}\r\n` : ''}`;
    out.push(Buffer.from(`--${boundary}\r\n${headers}${flaw === 'no-blank-line' ? '' : '\r\n'}`, 'latin1'), p.data, Buffer.from('\r\n', 'latin1'));
  }
  if (flaw !== 'no-close') out.push(Buffer.from(`--${boundary}--\r\n`, 'latin1'));
  return Buffer.concat(out);
}

export type MultipartFlaw = 'none' | 'no-close' | 'no-blank-line' | 'wrong-boundary' | 'no-boundary';

export interface MultipartRequest {
  body: Buffer;
  contentType: string;
}

/** A multipart request whose parts come from `partsArb`, with a flaw now and then. */
export function multipartArb(partsArb: fc.Arbitrary<Part[]>): fc.Arbitrary<MultipartRequest> {
  return fc
    .record({
      parts: partsArb,
      boundary: fc.oneof(fc.constant('----fuzzBoundary7MA4YWxk'), fc.stringMatching(/^[A-Za-z0-9'()+_,./:=?-]{1,70}$/)),
      flaw: fc.oneof(
        { weight: 12, arbitrary: fc.constant<MultipartFlaw>('none') },
        { weight: 1, arbitrary: fc.constantFrom<MultipartFlaw>('no-close', 'no-blank-line', 'wrong-boundary', 'no-boundary') },
      ),
    })
    .map(({ parts, boundary, flaw }) => ({
      body: multipart(parts, boundary, flaw),
      contentType: flaw === 'no-boundary' ? 'multipart/form-data' : `multipart/form-data; boundary=${flaw === 'wrong-boundary' ? `${boundary}x` : boundary}`,
    }));
}

export const field = (name: string, value: string): Part => ({ name, data: Buffer.from(value, 'utf8') });
export const file = (name: string, data: Buffer, filename = 'image.png', contentType = 'image/png'): Part => ({ name, filename, contentType, data });
