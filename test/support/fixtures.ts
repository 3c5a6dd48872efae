/** Small images made in-process for tests: real PNGs, no binary files in the repo. */
import { PNG } from 'pngjs';

export function makePng(width: number, height: number, fill: (x: number, y: number) => [number, number, number, number]): Buffer {
  const png = new PNG({ width, height });
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const [r, g, b, a] = fill(x, y);
      const i = (width * y + x) << 2;
      png.data[i] = r;
      png.data[i + 1] = g;
      png.data[i + 2] = b;
      png.data[i + 3] = a;
    }
  }
  return PNG.sync.write(png);
}

export const redSquare = (size = 64): Buffer => makePng(size, size, () => [220, 30, 30, 255]);
/** White = repaint: a white disc on black. */
export const discMask = (size = 64): Buffer =>
  makePng(size, size, (x, y) => ((x - size / 2) ** 2 + (y - size / 2) ** 2 < (size / 4) ** 2 ? [255, 255, 255, 255] : [0, 0, 0, 255]));

export function pngSize(b64: string): { width: number; height: number; bytes: Buffer } {
  const bytes = Buffer.from(b64, 'base64');
  const png = PNG.sync.read(bytes);
  return { width: png.width, height: png.height, bytes };
}
