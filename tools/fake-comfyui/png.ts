/**
 * Cheap, deterministic "renders": a pattern derived from a hash, encoded as an 8-bit RGB PNG like ComfyUI's
 * SaveImage writes, with `tEXt` metadata chunks (prompt, workflow) placed before the image data as PIL does.
 * Same hash → identical pixels; the metadata differs between renders, so byte-identical results need the
 * client to strip metadata, exactly as with the real server.
 */
import { createHash } from 'node:crypto';
import { PNG } from 'pngjs';

export interface RenderSpec {
  width: number;
  height: number;
  /** Any string; the pixels are a pure function of it (and the size). */
  contentKey: string;
  /** `tEXt` chunks in insertion order (keyword → Latin-1 text). */
  text?: Record<string, string>;
  /** zlib level; ComfyUI uses 4 for SaveImage and 1 for previews. Lower is faster. */
  deflateLevel?: number;
  /**
   * An RGBA PNG (SaveImage of a 4-channel image, e.g. JoinImageWithAlpha's cut-out): opaque inside a centred
   * ellipse, transparent outside, like a foreground cut out of its background.
   */
  alpha?: boolean;
}

export function renderPng(spec: RenderSpec): Buffer {
  const { width, height } = spec;
  const h = createHash('sha256').update(spec.contentKey).digest();
  const byte = (i: number) => h[i % h.length] as number;
  const base = [byte(0), byte(1), byte(2)];
  const dx = [(byte(3) % 7) + 1, (byte(4) % 7) + 1, (byte(5) % 7) + 1];
  const dy = [(byte(6) % 5) + 1, (byte(7) % 5) + 1, (byte(8) % 5) + 1];
  const cell = 8 << (byte(9) % 4);
  const accent = [byte(10), byte(11), byte(12)];

  // Rows are built from a per-column ramp plus a per-row offset: cheap even at 1024x1024 and still
  // unique per key (the ramps, offsets and the checker accent all come from the hash).
  const data = Buffer.allocUnsafe(width * height * 3);
  for (let y = 0; y < height; y++) {
    const rowOff = y * width * 3;
    const checkRow = (y / cell) & 1;
    const oy0 = (y * (dy[0] as number)) >> 2;
    const oy1 = (y * (dy[1] as number)) >> 2;
    const oy2 = (y * (dy[2] as number)) >> 2;
    for (let x = 0; x < width; x++) {
      const on = (((x / cell) & 1) ^ checkRow) === 1;
      const i = rowOff + x * 3;
      data[i] = ((base[0] as number) + ((x * (dx[0] as number)) >> 2) + oy0 + (on ? (accent[0] as number) : 0)) & 255;
      data[i + 1] = ((base[1] as number) + ((x * (dx[1] as number)) >> 2) + oy1 + (on ? (accent[1] as number) : 0)) & 255;
      data[i + 2] = ((base[2] as number) + ((x * (dx[2] as number)) >> 2) + oy2 + (on ? (accent[2] as number) : 0)) & 255;
    }
  }
  const colorType = spec.alpha ? 6 : 2;
  const png = new PNG({ width, height, colorType, inputColorType: colorType, inputHasAlpha: spec.alpha === true });
  png.data = spec.alpha ? withEllipseAlpha(data, width, height) : data;
  const encoded = PNG.sync.write(png, {
    colorType,
    inputColorType: colorType,
    inputHasAlpha: spec.alpha === true,
    deflateLevel: spec.deflateLevel ?? 1,
    filterType: 1,
  });
  return spec.text ? insertTextChunks(encoded, spec.text) : encoded;
}

/** RGB rows to RGBA: alpha 255 inside the ellipse inscribed in the image, 0 outside. */
function withEllipseAlpha(rgb: Buffer, width: number, height: number): Buffer {
  const out = Buffer.allocUnsafe(width * height * 4);
  const [cx, cy] = [(width - 1) / 2, (height - 1) / 2];
  const [rx, ry] = [Math.max(1, width / 2), Math.max(1, height / 2)];
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = y * width + x;
      rgb.copy(out, i * 4, i * 3, i * 3 + 3);
      out[i * 4 + 3] = ((x - cx) / rx) ** 2 + ((y - cy) / ry) ** 2 <= 1 ? 255 : 0;
    }
  }
  return out;
}

/** Inserts `tEXt` chunks right after IHDR. */
export function insertTextChunks(png: Buffer, text: Record<string, string>): Buffer {
  const ihdrEnd = 8 + 8 + 13 + 4;
  const chunks = Object.entries(text).map(([k, v]) => chunk('tEXt', Buffer.concat([Buffer.from(k, 'latin1'), Buffer.from([0]), Buffer.from(v, 'latin1')])));
  return Buffer.concat([png.subarray(0, ihdrEnd), ...chunks, png.subarray(ihdrEnd)]);
}

/** `tEXt` chunks of a PNG, in file order. */
export function readTextChunks(png: Buffer): Record<string, string> {
  const out: Record<string, string> = {};
  let off = 8;
  while (off + 8 <= png.length) {
    const len = png.readUInt32BE(off);
    const type = png.toString('latin1', off + 4, off + 8);
    if (type === 'tEXt') {
      const body = png.subarray(off + 8, off + 8 + len);
      const nul = body.indexOf(0);
      if (nul > 0) out[body.toString('latin1', 0, nul)] = body.toString('latin1', nul + 1);
    }
    if (type === 'IEND') break;
    off += 12 + len;
  }
  return out;
}

function chunk(type: string, body: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(body.length, 0);
  head.write(type, 4, 'latin1');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), body])), 0);
  return Buffer.concat([head, body, crc]);
}

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

function crc32(buf: Buffer): number {
  let c = 0xffffffff;
  for (let i = 0; i < buf.length; i++) c = (CRC_TABLE[(c ^ (buf[i] as number)) & 0xff] as number) ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

export interface ImageHeader {
  format: 'png' | 'jpeg' | 'webp';
  width: number;
  height: number;
  hasAlpha: boolean;
}

/** Size and alpha of a PNG, JPEG or WebP from its header bytes; undefined for anything else. */
export function readImageHeader(buf: Buffer): ImageHeader | undefined {
  if (buf.length >= 26 && buf.readUInt32BE(0) === 0x89504e47 && buf.toString('latin1', 12, 16) === 'IHDR') {
    const colorType = buf[25] as number;
    let hasAlpha = colorType === 4 || colorType === 6;
    if (!hasAlpha && buf.includes(Buffer.from('tRNS', 'latin1'))) hasAlpha = true;
    return { format: 'png', width: buf.readUInt32BE(16), height: buf.readUInt32BE(20), hasAlpha };
  }
  if (buf.length >= 4 && buf[0] === 0xff && buf[1] === 0xd8) {
    let off = 2;
    while (off + 9 < buf.length) {
      if (buf[off] !== 0xff) {
        off++;
        continue;
      }
      const marker = buf[off + 1] as number;
      if (marker === 0xd8 || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
        off += 2;
        continue;
      }
      const len = buf.readUInt16BE(off + 2);
      if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
        return { format: 'jpeg', height: buf.readUInt16BE(off + 5), width: buf.readUInt16BE(off + 7), hasAlpha: false };
      }
      off += 2 + len;
    }
    return undefined;
  }
  if (buf.length >= 30 && buf.toString('latin1', 0, 4) === 'RIFF' && buf.toString('latin1', 8, 12) === 'WEBP') {
    const kind = buf.toString('latin1', 12, 16);
    if (kind === 'VP8X') {
      return {
        format: 'webp',
        width: 1 + buf.readUIntLE(24, 3),
        height: 1 + buf.readUIntLE(27, 3),
        hasAlpha: ((buf[20] as number) & 0x10) !== 0,
      };
    }
    if (kind === 'VP8L') {
      const b = buf.readUInt32LE(21);
      return { format: 'webp', width: (b & 0x3fff) + 1, height: ((b >> 14) & 0x3fff) + 1, hasAlpha: ((b >> 28) & 1) === 1 };
    }
    if (kind === 'VP8 ') {
      return { format: 'webp', width: buf.readUInt16LE(26) & 0x3fff, height: buf.readUInt16LE(28) & 0x3fff, hasAlpha: false };
    }
  }
  return undefined;
}

/**
 * `/view?channel=rgb|a` for PNGs: `rgb` drops alpha, `a` returns an RGBA image carrying only the alpha
 * channel (255 when the source has none), as the real route does with PIL.
 */
export function pngChannel(buf: Buffer, channel: 'rgb' | 'a'): Buffer {
  const src = PNG.sync.read(buf);
  const n = src.width * src.height;
  if (channel === 'rgb') {
    const rgb = Buffer.allocUnsafe(n * 3);
    for (let i = 0; i < n; i++) {
      rgb[i * 3] = src.data[i * 4] as number;
      rgb[i * 3 + 1] = src.data[i * 4 + 1] as number;
      rgb[i * 3 + 2] = src.data[i * 4 + 2] as number;
    }
    const p = new PNG({ width: src.width, height: src.height, colorType: 2, inputColorType: 2, inputHasAlpha: false });
    p.data = rgb;
    return PNG.sync.write(p, { colorType: 2, inputColorType: 2, inputHasAlpha: false });
  }
  const out = new PNG({ width: src.width, height: src.height });
  out.data.fill(0);
  for (let i = 0; i < n; i++) out.data[i * 4 + 3] = src.data[i * 4 + 3] as number;
  return PNG.sync.write(out);
}
