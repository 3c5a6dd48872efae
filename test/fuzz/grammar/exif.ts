/**
 * EXIF (a TIFF structure) for the fuzzer: byte order, IFD0 with a pointer to the Exif IFD, a UserComment in
 * each of its encodings (ASCII, UNICODE of even and odd length, JIS, undefined, NUL floods), and IFD
 * entries whose counts and offsets point anywhere, loop, or overflow.
 */
import fc from 'fast-check';

export interface IfdEntry {
  tag: number;
  type: number;
  count: number;
  /** Inline value/offset field (4 bytes); when `data` is given it is placed after the IFDs and pointed at. */
  value?: number;
  data?: Buffer;
}

/** A TIFF blob: IFD0 then the Exif IFD; entry data follows both. `le` picks II (little) or MM (big) order. */
export function tiff(ifd0: IfdEntry[], exifIfd: IfdEntry[], le = true): Buffer {
  const w16 = (b: Buffer, v: number, o: number) => (le ? b.writeUInt16LE(v & 0xffff, o) : b.writeUInt16BE(v & 0xffff, o));
  const w32 = (b: Buffer, v: number, o: number) => (le ? b.writeUInt32LE(v >>> 0, o) : b.writeUInt32BE(v >>> 0, o));
  const ifdSize = (n: number) => 2 + n * 12 + 4;
  const ifd0Off = 8;
  const exifOff = ifd0Off + ifdSize(ifd0.length + 1);
  let dataOff = exifOff + ifdSize(exifIfd.length);
  const datas: Buffer[] = [];
  const layout = (entries: IfdEntry[], extra: IfdEntry[] = []): Buffer => {
    const all = [...entries, ...extra];
    const b = Buffer.alloc(ifdSize(all.length));
    w16(b, all.length, 0);
    all.forEach((e, i) => {
      const o = 2 + i * 12;
      w16(b, e.tag, o);
      w16(b, e.type, o + 2);
      w32(b, e.count, o + 4);
      if (e.data && e.data.length > 4) {
        w32(b, dataOff, o + 8);
        datas.push(e.data);
        dataOff += e.data.length;
      } else if (e.data) {
        e.data.copy(b, o + 8);
      } else {
        w32(b, e.value ?? 0, o + 8);
      }
    });
    return b;
  };
  const head = Buffer.alloc(8);
  head.write(le ? 'II' : 'MM', 0, 'latin1');
  w16(head, 42, 2);
  w32(head, ifd0Off, 4);
  const i0 = layout(ifd0, [{ tag: 0x8769, type: 4, count: 1, value: exifOff }]);
  const ie = layout(exifIfd);
  return Buffer.concat([head, i0, ie, ...datas]);
}

export function userComment(prefix: 'ASCII' | 'UNICODE' | 'JIS' | 'UNDEF', body: Buffer): IfdEntry {
  const code = Buffer.alloc(8);
  if (prefix !== 'UNDEF') code.write(prefix, 0, 'latin1');
  const data = Buffer.concat([code, body]);
  return { tag: 0x9286, type: 7, count: data.length, data };
}

const commentBody = fc.oneof(
  fc.string({ maxLength: 300 }).map((s) => Buffer.from(s, 'utf8')),
  fc.constant(Buffer.from('a cat\nSteps: 20, Sampler: Euler, Seed: 7, Size: 64x64', 'latin1')),
  // NUL floods: trimming them must be linear.
  fc.integer({ min: 100, max: 100_000 }).map((n) => Buffer.alloc(n, 0)),
  fc.integer({ min: 100, max: 50_000 }).map((n) => Buffer.concat([Buffer.alloc(n, 0), Buffer.from('x'), Buffer.alloc(n, 0)])),
  // Odd-length UTF-16.
  fc.integer({ min: 1, max: 501 }).map((n) => Buffer.alloc(n | 1, 0x41)),
);

const wildEntry: fc.Arbitrary<IfdEntry> = fc.record({
  tag: fc.oneof(fc.constantFrom(0x9286, 0x010e, 0x8769, 0x8825, 0xa005, 0x0131), fc.integer({ min: 0, max: 0xffff })),
  type: fc.integer({ min: 0, max: 13 }),
  count: fc.oneof(fc.integer({ min: 0, max: 64 }), fc.constantFrom(0xffffffff, 0x7fffffff, 1_000_000)),
  value: fc.oneof(fc.integer({ min: 0, max: 256 }), fc.constantFrom(0, 8, 0xffffffff, 0x7fffffff)),
});

/** A whole EXIF payload (TIFF bytes), mostly well-formed with a UserComment, sometimes wild. */
export const exifArb: fc.Arbitrary<Buffer> = fc.oneof(
  fc
    .record({
      le: fc.boolean(),
      prefix: fc.constantFrom<'ASCII' | 'UNICODE' | 'JIS' | 'UNDEF'>('ASCII', 'UNICODE', 'UNICODE', 'JIS', 'UNDEF'),
      body: commentBody,
      extra: fc.array(wildEntry, { maxLength: 3 }),
    })
    .map((r) =>
      tiff(
        r.extra.filter((e) => e.tag !== 0x8769),
        [userComment(r.prefix, r.body), ...r.extra],
        r.le,
      ),
    ),
  fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b)),
  fc.tuple(fc.boolean(), fc.array(wildEntry, { maxLength: 8 })).map(([le, entries]) => tiff(entries, entries, le)),
);
