/**
 * PNG at the chunk level, for the fuzzer: a signature, IHDR (sometimes two that disagree), PLTE, text chunks
 * (tEXt, zTXt, iTXt, with inflate bombs and pathological infotext), IDAT (right-sized, short, random or a
 * bomb) and IEND, with the CRC right most of the time. Every chunk is built by hand so the structure, not
 * just the bytes, varies.
 */
import { deflateSync } from 'node:zlib';
import { pngChunk as validChunk } from '../../support/hostile.ts';
import fc from 'fast-check';

export const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** A chunk with its length and CRC (test/support/hostile.ts), the CRC's last bit flipped when `badCrc`. */
export function pngChunk(type: string, data: Buffer, badCrc = false): Buffer {
  const chunk = validChunk(type, data);
  if (badCrc) chunk[chunk.length - 1]! ^= 1;
  return chunk;
}

export function ihdr(width: number, height: number, bitDepth = 8, colorType = 6, interlace = 0): Buffer {
  const d = Buffer.alloc(13);
  d.writeUInt32BE(width >>> 0, 0);
  d.writeUInt32BE(height >>> 0, 4);
  d[8] = bitDepth;
  d[9] = colorType;
  d[12] = interlace;
  return pngChunk('IHDR', d);
}

const compressed = new Map<string, Buffer>();
/** zlib of `n` zeros (or of `byte` repeated), cached: bombs are built once per size. */
export function deflatedRepeat(n: number, byte = 0): Buffer {
  const key = `${n}:${byte}`;
  let z = compressed.get(key);
  if (!z) {
    z = deflateSync(Buffer.alloc(n, byte), { level: 9 });
    compressed.set(key, z);
  }
  return z;
}

/** Bytes per pixel row for a colour type and depth (as the PNG spec defines it), plus the filter byte. */
function rowBytes(width: number, bitDepth: number, colorType: number): number {
  const channels = ({ 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 } as Record<number, number>)[colorType] ?? 4;
  return 1 + Math.ceil((width * channels * bitDepth) / 8);
}

/** A complete, valid non-interlaced PNG of zeros: the base most mutations start from. */
export function validPng(width: number, height: number, bitDepth = 8, colorType = 6, textChunks: Buffer[] = []): Buffer {
  const idat = deflateSync(Buffer.alloc(rowBytes(width, bitDepth, colorType) * height));
  const plte = colorType === 3 ? [pngChunk('PLTE', Buffer.alloc(3 * 4, 0x80))] : [];
  return Buffer.concat([
    PNG_SIGNATURE,
    ihdr(width, height, bitDepth, colorType),
    ...plte,
    ...textChunks,
    pngChunk('IDAT', idat),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

export const textChunk = (key: string, text: string): Buffer =>
  pngChunk('tEXt', Buffer.concat([Buffer.from(key, 'latin1'), Buffer.from([0]), Buffer.from(text, 'latin1')]));
export const zTxtChunk = (key: string, deflated: Buffer): Buffer =>
  pngChunk('zTXt', Buffer.concat([Buffer.from(key, 'latin1'), Buffer.from([0, 0]), deflated]));
export const iTxtChunk = (key: string, deflated: Buffer, compressedFlag = 1): Buffer =>
  pngChunk(
    'iTXt',
    Buffer.concat([Buffer.from(key, 'latin1'), Buffer.from([0, compressedFlag, 0]), Buffer.from('en', 'latin1'), Buffer.from([0, 0]), deflated]),
  );

const dims = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 1, max: 64 }) },
  { weight: 1, arbitrary: fc.constantFrom(0, 4096, 8192, 65_535, 100_000, 2 ** 31 - 1, 2 ** 32 - 1) },
);

/** Infotext-like text, including the shapes that made hand-written parsers backtrack. */
export const infotextArb = fc.oneof(
  fc.string({ maxLength: 200 }),
  fc.constant('a cat\nSteps: 20, Sampler: Euler, Seed: 1, Size: 512x512'),
  fc.integer({ min: 10, max: 3_000 }).map((n) => `prompt\nSteps: 20,${' '.repeat(n)}`),
  fc.integer({ min: 10, max: 3_000 }).map((n) => `x\n${'a: '.repeat(n)}`),
  fc.integer({ min: 10, max: 3_000 }).map((n) => `x\nNegative prompt: ${'\n'.repeat(n)}Steps: 1`),
  fc.integer({ min: 10, max: 2_000 }).map((n) => `x\n${'"'.repeat(n)}: ${'"'.repeat(n)}`),
  fc.integer({ min: 10, max: 2_000 }).map((n) => `${'Steps: 1, '.repeat(n)}`),
);

const textChunkArb = fc.oneof(
  infotextArb.map((t) => textChunk('parameters', t)),
  infotextArb.map((t) => zTxtChunk('parameters', deflateSync(Buffer.from(t, 'latin1')))),
  infotextArb.map((t) => iTxtChunk('parameters', deflateSync(Buffer.from(t, 'utf8')))),
  infotextArb.map((t) => iTxtChunk('parameters', Buffer.from(t, 'utf8'), 0)),
  // Text inflate bombs: a few KB that inflate to megabytes.
  fc.constantFrom(1, 4, 16).map((mib) => zTxtChunk('parameters', deflatedRepeat(mib * 1024 * 1024, 0x20))),
  fc.constantFrom(1, 4, 16).map((mib) => iTxtChunk('parameters', deflatedRepeat(mib * 1024 * 1024, 0x41))),
  fc.tuple(fc.constantFrom('zTXt', 'iTXt', 'tEXt'), fc.uint8Array({ maxLength: 64 })).map(([type, b]) => pngChunk(type, Buffer.from(b))),
);

/** One grammar-generated PNG: mostly well-formed containers with one or more parts wrong. */
export const pngArb: fc.Arbitrary<Buffer> = fc
  .record({
    width: dims,
    height: dims,
    bitDepth: fc.constantFrom(1, 2, 4, 8, 16, 3, 0),
    colorType: fc.constantFrom(0, 2, 3, 4, 6, 1, 7),
    interlace: fc.constantFrom(0, 0, 0, 1, 2),
    secondIhdr: fc.option(fc.record({ width: dims, height: dims }), { freq: 6 }),
    texts: fc.array(textChunkArb, { maxLength: 3 }),
    idat: fc.oneof(
      { weight: 6, arbitrary: fc.constant('right' as const) },
      { weight: 1, arbitrary: fc.constant('short' as const) },
      { weight: 1, arbitrary: fc.constant('random' as const) },
      { weight: 1, arbitrary: fc.constant('bomb' as const) },
      { weight: 1, arbitrary: fc.constant('split' as const) },
    ),
    badCrc: fc.oneof({ weight: 7, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
    randomIdat: fc.uint8Array({ maxLength: 128 }),
    truncateTo: fc.option(fc.nat(), { freq: 8 }),
    signatureOk: fc.oneof({ weight: 15, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
  })
  .map((p) => {
    const w = Math.min(p.width, 64);
    const h = Math.min(p.height, 64);
    let idat: Buffer[];
    const raw = Buffer.alloc(rowBytes(w, p.bitDepth || 8, p.colorType) * h);
    if (p.idat === 'right') idat = [pngChunk('IDAT', deflateSync(raw), p.badCrc)];
    else if (p.idat === 'short') idat = [pngChunk('IDAT', deflateSync(raw.subarray(0, raw.length >> 1)))];
    else if (p.idat === 'random') idat = [pngChunk('IDAT', Buffer.from(p.randomIdat))];
    else if (p.idat === 'bomb') idat = [pngChunk('IDAT', deflatedRepeat(16 * 1024 * 1024))];
    else {
      const z = deflateSync(raw);
      idat = [pngChunk('IDAT', z.subarray(0, z.length >> 1)), pngChunk('IDAT', z.subarray(z.length >> 1))];
    }
    const parts = [
      p.signatureOk ? PNG_SIGNATURE : Buffer.from('\x89PNX\r\n\x1a\n', 'latin1'),
      ihdr(p.width, p.height, p.bitDepth, p.colorType, p.interlace),
      ...(p.colorType === 3 ? [pngChunk('PLTE', Buffer.alloc(12, 0x40))] : []),
      ...(p.secondIhdr ? [ihdr(p.secondIhdr.width, p.secondIhdr.height, p.bitDepth, p.colorType, p.interlace)] : []),
      ...p.texts,
      ...idat,
      pngChunk('IEND', Buffer.alloc(0)),
    ];
    const png = Buffer.concat(parts);
    return p.truncateTo !== null ? png.subarray(0, p.truncateTo % (png.length + 1)) : png;
  });
