/**
 * PNG inflate bombs for tests: a tiny declared size (1×1 by default) whose IDAT inflates to `inflatedBytes`
 * of zeros. Valid chunk structure and CRCs, so only the inflated size gives it away.
 */
import { deflateSync } from 'node:zlib';
import { pngChunk } from './hostile.ts';

const compressedZeros = new Map<number, Buffer>();

export function pngBomb(opts: { inflatedBytes: number; interlaced?: boolean; width?: number; height?: number }): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(opts.width ?? 1, 0);
  ihdr.writeUInt32BE(opts.height ?? 1, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 6; // RGBA
  ihdr[12] = opts.interlaced ? 1 : 0;
  let z = compressedZeros.get(opts.inflatedBytes);
  if (!z) {
    z = deflateSync(Buffer.alloc(opts.inflatedBytes), { level: 9 });
    compressedZeros.set(opts.inflatedBytes, z);
  }
  const idats: Buffer[] = [];
  for (let off = 0; off < z.length; off += 65_536) idats.push(pngChunk('IDAT', z.subarray(off, off + 65_536)));
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), pngChunk('IHDR', ihdr), ...idats, pngChunk('IEND', Buffer.alloc(0))]);
}
