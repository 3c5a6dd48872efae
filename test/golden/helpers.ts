/** Test images and contexts shared by the models / a1111 / images unit tests and the golden graph tests. */
import { PNG } from 'pngjs';
import type { NormalizeContext } from '../../src/api/a1111/normalize.ts';

export function makePng(width: number, height: number, rgba: [number, number, number, number] = [255, 255, 255, 255]): Buffer {
  const png = new PNG({ width, height });
  for (let i = 0; i < width * height; i++) png.data.set(rgba, i * 4);
  return PNG.sync.write(png);
}

/** A PNG whose pixels come from `f(x, y)` → RGBA. */
export function makePngWith(width: number, height: number, f: (x: number, y: number) => [number, number, number, number]): Buffer {
  const png = new PNG({ width, height });
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) png.data.set(f(x, y), (y * width + x) * 4);
  return PNG.sync.write(png);
}

export const pngB64 = (w = 64, h = 64, rgba?: [number, number, number, number]): string => makePng(w, h, rgba).toString('base64');

/** A valid 1×1 baseline JPEG. */
/** A complete 1×1 baseline JPEG (Pillow-encoded, ends with its EOI marker). */
export const JPEG_1X1 = Buffer.from(
  '/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDABALDA4MChAODQ4SERATGCgaGBYWGDEjJR0oOjM9PDkzODdASFxOQERXRTc4UG1RV19iZ2hnPk1xeXBkeFxlZ2P/2wBDARESEhgVGC8aGi9jQjhCY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2P/wAARCAABAAEDASIAAhEBAxEB/8QAHwAAAQUBAQEBAQEAAAAAAAAAAAECAwQFBgcICQoL/8QAtRAAAgEDAwIEAwUFBAQAAAF9AQIDAAQRBRIhMUEGE1FhByJxFDKBkaEII0KxwRVS0fAkM2JyggkKFhcYGRolJicoKSo0NTY3ODk6Q0RFRkdISUpTVFVWV1hZWmNkZWZnaGlqc3R1dnd4eXqDhIWGh4iJipKTlJWWl5iZmqKjpKWmp6ipqrKztLW2t7i5usLDxMXGx8jJytLT1NXW19jZ2uHi4+Tl5ufo6erx8vP09fb3+Pn6/8QAHwEAAwEBAQEBAQEBAQAAAAAAAAECAwQFBgcICQoL/8QAtREAAgECBAQDBAcFBAQAAQJ3AAECAxEEBSExBhJBUQdhcRMiMoEIFEKRobHBCSMzUvAVYnLRChYkNOEl8RcYGRomJygpKjU2Nzg5OkNERUZHSElKU1RVVldYWVpjZGVmZ2hpanN0dXZ3eHl6goOEhYaHiImKkpOUlZaXmJmaoqOkpaanqKmqsrO0tba3uLm6wsPExcbHyMnK0tPU1dbX2Nna4uPk5ebn6Onq8vP09fb3+Pn6/9oADAMBAAIRAxEAPwDAooorgPrT/9k=',
  'base64',
);

/** A WebP (VP8L) header big enough for dimension parsing. */
export function makeWebp(width: number, height: number): Buffer {
  const body = Buffer.alloc(9);
  body[0] = 0x2f;
  body.writeUInt32LE(((width - 1) | ((height - 1) << 14)) >>> 0, 1);
  const chunk = Buffer.concat([Buffer.from('VP8L'), Buffer.from([body.length, 0, 0, 0]), body]);
  const riff = Buffer.concat([Buffer.from('WEBP'), chunk]);
  return Buffer.concat([Buffer.from('RIFF'), Buffer.from([riff.length & 255, riff.length >> 8, 0, 0]), riff]);
}

export const LIMITS = { maxImageBytes: 1_000_000, maxImagePixels: 4096 * 4096, maxBatch: 8, maxExtraImages: 4 };

export function ctx(over: Partial<NormalizeContext> = {}): NormalizeContext {
  return { defaultModel: 'imagegen-flux-dev', random: () => 0.25, limits: LIMITS, ...over };
}

/** Runs `f` and returns the thrown error (fails the test when nothing is thrown). */
export function thrown(f: () => unknown): { status?: number; field?: string; message: string; extra?: Record<string, unknown> } {
  try {
    f();
  } catch (e) {
    return e as { status?: number; field?: string; message: string };
  }
  throw new Error('expected an error');
}
