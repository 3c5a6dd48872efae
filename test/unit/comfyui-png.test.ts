import zlib from 'node:zlib';
import { PNG } from 'pngjs';
import { describe, expect, it } from 'vitest';
import { PngFormatError, readPngSize, readPngText, stripPngText } from '../../src/comfyui/png-metadata.ts';

function chunk(type: string, data: Buffer): Buffer {
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, 'latin1');
  data.copy(out, 8);
  out.writeUInt32BE(zlib.crc32(out.subarray(4, 8 + data.length)) >>> 0, 8 + data.length);
  return out;
}

/** A 3×2 PNG from pngjs with ComfyUI-style tEXt chunks (prompt/workflow) inserted before IDAT. */
function comfyPng(prefix: string): Buffer {
  const png = new PNG({ width: 3, height: 2 });
  for (let i = 0; i < png.data.length; i++) png.data[i] = (i * 37) & 0xff;
  const plain = PNG.sync.write(png);
  const idat = plain.indexOf(Buffer.from('IDAT')) - 4;
  const text = Buffer.concat([
    chunk('tEXt', Buffer.from(`prompt\0{"9":{"inputs":{"filename_prefix":"${prefix}"}}}`, 'latin1')),
    chunk('tEXt', Buffer.from('workflow\0{"nodes":[]}', 'latin1')),
    chunk('zTXt', Buffer.concat([Buffer.from('z\0\0', 'latin1'), zlib.deflateSync('compressed')])),
  ]);
  return Buffer.concat([plain.subarray(0, idat), text, plain.subarray(idat)]);
}

describe('stripPngText', () => {
  it('removes text chunks, keeps pixels, and makes identical renders byte-identical', () => {
    const a = comfyPng('job-a');
    const b = comfyPng('job-b');
    expect(a.equals(b)).toBe(false);
    expect(readPngText(a)).toMatchObject({ workflow: '{"nodes":[]}', z: 'compressed' });
    const sa = stripPngText(a);
    const sb = stripPngText(b);
    expect(sa.equals(sb)).toBe(true);
    expect(readPngText(sa)).toEqual({});
    expect(sa.includes(Buffer.from('tEXt'))).toBe(false);
    const decoded = PNG.sync.read(sa);
    expect([decoded.width, decoded.height]).toEqual([3, 2]);
    expect(Buffer.from(decoded.data).equals(Buffer.from(PNG.sync.read(a).data))).toBe(true);
  });

  it('inserts tEXt (Latin-1) or iTXt (unicode) chunks right after IHDR, with valid CRCs', () => {
    const out = stripPngText(comfyPng('x'), { parameters: 'a cat\nSteps: 20, Seed: 1', title: 'カメラ' });
    expect(readPngText(out)).toEqual({ parameters: 'a cat\nSteps: 20, Seed: 1', title: 'カメラ' });
    expect(out.subarray(37, 41).toString('latin1')).toBe('tEXt'); // 8 signature + 25 IHDR + 4 length
    expect(out.includes(Buffer.from('iTXt'))).toBe(true);
    expect(PNG.sync.read(out).width).toBe(3); // pngjs checks CRCs
    // idempotent: stripping again with the same keep gives the same bytes
    expect(stripPngText(out, { parameters: 'a cat\nSteps: 20, Seed: 1', title: 'カメラ' }).equals(out)).toBe(true);
  });

  it('throws on malformed input', () => {
    const good = comfyPng('x');
    expect(() => stripPngText(Buffer.from('GIF89a....'))).toThrow(PngFormatError);
    expect(() => stripPngText(good.subarray(0, good.length - 5))).toThrow(PngFormatError);
    const badCrc = Buffer.from(good);
    badCrc[30] = badCrc[30]! ^ 0xff; // inside IHDR data
    expect(() => stripPngText(badCrc)).toThrow(/CRC/);
    expect(() => stripPngText(Buffer.concat([good, Buffer.from('junk')]))).toThrow(PngFormatError);
    expect(() => stripPngText(good, { '': 'x' })).toThrow(TypeError);
  });
});

describe('readPngSize', () => {
  it('reads IHDR and validates the signature', () => {
    expect(readPngSize(comfyPng('x'))).toEqual({ width: 3, height: 2 });
    expect(() => readPngSize(Buffer.alloc(40))).toThrow(PngFormatError);
  });
});
