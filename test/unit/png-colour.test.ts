/**
 * pngOneColour reads PNGs itself (zlib and the row filters), so it is held to PNGs written by another encoder
 * (libvips, through sharp) in every layout a saver writes: grey, grey + alpha, RGB, RGBA, 16 bits, palette,
 * interlaced, all five row filters (adaptive filtering), and images taller than the rows read first. Each
 * image's verdict is known from the pixels it was made of.
 */
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import sharp from 'sharp';
import { pngOneColour, pngScanlines } from '../../src/images/png-colour.ts';

type Pixel = (x: number, y: number) => number[];

interface Case {
  name: string;
  width: number;
  height: number;
  channels: 1 | 2 | 3 | 4;
  pixel: Pixel;
  expected: 'black' | 'uniform' | undefined;
}

function raw(c: Case): Buffer {
  const out = Buffer.alloc(c.width * c.height * c.channels);
  for (let y = 0; y < c.height; y++) for (let x = 0; x < c.width; x++) out.set(c.pixel(x, y), (y * c.width + x) * c.channels);
  return out;
}

function cases(channels: 1 | 2 | 3 | 4): Case[] {
  const colour = channels <= 2 ? 1 : 3;
  const withAlpha = (col: number[], a = 255) => (channels === 2 || channels === 4 ? [...col, a] : col);
  const flat = (v: number) => withAlpha(Array.from({ length: colour }, () => v));
  const one =
    (v: number, at: [number, number], other: number): Pixel =>
    (x, y) =>
      x === at[0] && y === at[1] ? flat(other) : flat(v);
  const list: Case[] = [
    { name: 'black', width: 40, height: 40, channels, pixel: () => flat(0), expected: 'black' },
    { name: 'grey 90', width: 40, height: 40, channels, pixel: () => flat(90), expected: 'uniform' },
    { name: 'gradient', width: 40, height: 40, channels, pixel: (x, y) => flat((x * 5 + y * 3) % 256), expected: undefined },
    { name: 'one pixel in the top rows', width: 40, height: 40, channels, pixel: one(0, [17, 3], 1), expected: undefined },
    { name: 'one pixel below the top rows', width: 40, height: 40, channels, pixel: one(0, [5, 30], 1), expected: undefined },
    { name: 'only the last pixel', width: 40, height: 40, channels, pixel: one(200, [39, 39], 201), expected: undefined },
    { name: 'shorter than the top rows', width: 50, height: 3, channels, pixel: () => flat(0), expected: 'black' },
    { name: 'one column', width: 1, height: 70, channels, pixel: () => flat(9), expected: 'uniform' },
    { name: 'large, differs at the end', width: 300, height: 200, channels, pixel: one(0, [299, 199], 255), expected: undefined },
  ];
  if (channels === 2 || channels === 4) {
    list.push({
      name: 'black, alpha varies',
      width: 40,
      height: 40,
      channels,
      pixel: (x, y) => withAlpha(flat(0).slice(0, colour), (x * 8 + y) % 256),
      expected: 'black',
    });
  }
  return list;
}

async function encode(c: Case, opts: { bits16?: boolean; interlaced?: boolean; palette?: boolean } = {}): Promise<Buffer> {
  let img = sharp(raw(c), { raw: { width: c.width, height: c.height, channels: c.channels } });
  if (opts.bits16) img = img.toColourspace(c.channels <= 2 ? 'grey16' : 'rgb16');
  return img.png({ adaptiveFiltering: true, progressive: opts.interlaced ?? false, palette: opts.palette ?? false, compressionLevel: 6 }).toBuffer();
}

describe('pngOneColour, against PNGs written by libvips', () => {
  for (const channels of [1, 2, 3, 4] as const) {
    for (const c of cases(channels)) {
      it(`${channels} channel(s), 8 bits: ${c.name}`, async () => {
        expect(await pngOneColour(await encode(c))).toBe(c.expected);
      });
    }
  }

  for (const c of cases(3).concat(cases(4))) {
    it(`16 bits, ${c.channels} channels: ${c.name}`, async () => {
      const png = await encode(c, { bits16: true });
      expect(png[24]).toBe(16); // IHDR bit depth: really a 16-bit file
      expect(await pngOneColour(png)).toBe(c.expected);
    });
  }

  for (const c of cases(3)) {
    it(`interlaced (Adam7): ${c.name}`, async () => {
      const png = await encode(c, { interlaced: true });
      expect(png[28]).toBe(1); // IHDR interlace method
      expect(await pngOneColour(png)).toBe(c.expected);
    });
  }

  it('palette images: colours far apart are told apart, one colour is one colour', async () => {
    const two: Case = {
      name: 'two',
      width: 40,
      height: 40,
      channels: 3,
      pixel: (x, y) => (x === 20 && y === 30 ? [200, 10, 10] : [0, 0, 0]),
      expected: undefined,
    };
    const png = await encode(two, { palette: true });
    expect(png[25]).toBe(3); // IHDR colour type: palette
    expect(await pngOneColour(png)).toBeUndefined();
    expect(await pngOneColour(await encode({ ...two, pixel: () => [0, 0, 0] }, { palette: true }))).toBe('black');
  });

  it('its row decoding gives the pixels libvips decodes, every filter type, 8 and 16 bits', async () => {
    let seed = 7;
    const random = () => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 16) & 0xff;
    for (const channels of [1, 2, 3, 4] as const) {
      // Smooth areas and noise, so that adaptive filtering picks every filter somewhere.
      const c: Case = {
        name: 'mixed',
        width: 61,
        height: 47,
        channels,
        expected: undefined,
        pixel: (x, y) => Array.from({ length: channels }, (_, k) => (y < 20 ? (x * 3 + y * 7 + k * 40) & 0xff : random())),
      };
      for (const bits16 of [false, true]) {
        const png = await encode(c, { bits16 });
        const filters = new Set<number>();
        const inflated = (await import('node:zlib')).inflateSync(
          png.subarray(png.indexOf('IDAT') + 4, png.indexOf('IDAT') + 4 + png.readUInt32BE(png.indexOf('IDAT') - 4)),
        );
        const rowBytes = c.width * channels * (bits16 ? 2 : 1);
        for (let y = 0; y < c.height; y++) filters.add(inflated[y * (rowBytes + 1)]!);
        // Kept in the file's own colour space and depth (sharp converts to 8-bit sRGB unless told otherwise).
        const decoded = bits16
          ? sharp(png)
              .toColourspace(channels <= 2 ? 'grey16' : 'rgb16')
              .raw({ depth: 'ushort' })
          : sharp(png).raw();
        const reference = await decoded.toBuffer();
        // libvips answers 16-bit samples in this machine's byte order; a PNG stores them big-endian.
        const expected = bits16 ? Buffer.from(reference).swap16() : reference;
        expect(pngScanlines(png).equals(expected), `${channels} channel(s), ${bits16 ? 16 : 8} bits, filters ${[...filters].sort().join(',')}`).toBe(true);
        if (channels >= 3) expect([...filters].sort()).toEqual([0, 1, 2, 3, 4].filter((f) => filters.has(f)));
      }
    }
  });

  it('a PNG whose image data is cut short does not pass as one colour', async () => {
    const png = await encode({ name: 'black', width: 64, height: 64, channels: 3, pixel: () => [0, 0, 0], expected: 'black' });
    const idatAt = png.indexOf('IDAT');
    const len = png.readUInt32BE(idatAt - 4);
    // Keep the chunk structure, zero the second half of the zlib stream.
    const broken = Buffer.from(png);
    broken.fill(0, idatAt + 4 + Math.floor(len / 2), idatAt + 4 + len);
    await expect(pngOneColour(broken)).rejects.toThrow();
  });
});

/** A PNG whose header claims `width` × `height` and whose image data is only its first rows, all black. */
function claimingPng(width: number, height: number, colorType: number, interlace: number): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const head = Buffer.alloc(4);
    head.writeUInt32BE(data.length);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(zlib.crc32(body) >>> 0);
    return Buffer.concat([head, body, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, colorType, 0, 0, interlace], 8);
  const rows = zlib.deflateSync(Buffer.alloc(8 * (width * 3 + 1)), { finishFlush: zlib.constants.Z_SYNC_FLUSH });
  const plte = colorType === 3 ? [chunk('PLTE', Buffer.alloc(3))] : [];
  return Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), chunk('IHDR', ihdr), ...plte, chunk('IDAT', rows), chunk('IEND', Buffer.alloc(0))]);
}

describe('pngOneColour, on the size a PNG declares', () => {
  it('an image declaring more than it may read whole, black in its first rows: not judged, nothing inflated to its claim', async () => {
    // 100 000² RGB declares 30 GB: the header is the file's own word, not a bound.
    await expect(pngOneColour(claimingPng(100_000, 100_000, 2, 0))).resolves.toBeUndefined();
  });

  it('an interlaced or palette image past the pixels pngjs may decode on the thread: not judged, not decoded', async () => {
    await expect(pngOneColour(claimingPng(100_000, 100_000, 2, 1))).resolves.toBeUndefined();
    await expect(pngOneColour(claimingPng(100_000, 100_000, 3, 0))).resolves.toBeUndefined();
  });
});
