/**
 * Sampler preview frames as ComfyUI sends them on the WebSocket when `extra_data.preview_method` asks for
 * them (server.py `send_image` / `send_image_with_metadata`):
 * - type 1 `PREVIEW_IMAGE`: `u32 1 | u32 image type (1 = JPEG) | JPEG`, for clients without feature flags;
 * - type 4 `PREVIEW_IMAGE_WITH_METADATA`: `u32 4 | u32 n | n bytes of JSON metadata | JPEG`, for a client
 *   that announced `supports_preview_metadata`.
 * The pictures are real, decodable JPEGs at latent resolution (width/8 x height/8, like latent2rgb before
 * the server upscales it to `--preview-size`), brightening with the step so consecutive frames differ.
 */
import { createHash } from 'node:crypto';
import sharp from 'sharp';
import { pyJsonDumps } from './pyjson.ts';

/** `preview_method` values that produce previews (`auto`, `latent2rgb`, `taesd` — which falls back). */
export function previewsRequested(method: unknown): boolean {
  return method === 'auto' || method === 'latent2rgb' || method === 'taesd';
}

/**
 * The preview frames of a sampler run, one per step (index step - 1). Encoded with sharp on libuv's pool:
 * jpeg-js builds its Huffman and quantisation tables anew for every frame (~50 ms of CPU and garbage each on
 * this 2-core box, bench/README.md "Issue 25"), which made a zero-time fake render cost the service
 * hundreds of milliseconds that a real ComfyUI (its previews come from the GPU's latents) does not.
 */
export function previewJpegs(contentKey: string, width: number, height: number, steps: number): Promise<Buffer[]> {
  return Promise.all(Array.from({ length: steps }, (_, i) => previewJpeg(contentKey, width, height, i + 1, steps)));
}

export function previewJpeg(contentKey: string, width: number, height: number, step: number, steps: number): Promise<Buffer> {
  const w = Math.max(8, Math.round(width / 8));
  const h = Math.max(8, Math.round(height / 8));
  const seed = createHash('sha256').update(contentKey).digest();
  const level = steps > 0 ? step / steps : 1;
  const data = Buffer.alloc(w * h * 3);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const i = (y * w + x) * 3;
      for (let c = 0; c < 3; c++) {
        const base = (seed[c] as number) + x * ((seed[3 + c] as number) % 9) + y * ((seed[6 + c] as number) % 7);
        data[i + c] = Math.round((base & 255) * (0.25 + 0.75 * level));
      }
    }
  }
  return sharp(data, { raw: { width: w, height: h, channels: 3 } })
    .jpeg({ quality: 90 })
    .toBuffer()
    .then(withJfifHeader);
}

/**
 * JFIF APP0 (version 1.1, no density, no thumbnail) right after SOI, as PIL writes it and the recording shows
 * (`ffd8ffe0`); libvips writes none when it strips metadata.
 */
const JFIF_APP0 = Buffer.from('ffe000104a46494600010100000100010000', 'hex');

function withJfifHeader(jpeg: Buffer): Buffer {
  if (jpeg.readUInt16BE(2) === 0xffe0) return jpeg;
  return Buffer.concat([jpeg.subarray(0, 2), JFIF_APP0, jpeg.subarray(2)]);
}

export function legacyPreviewFrame(image: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(1, 0);
  head.writeUInt32BE(1, 4);
  return Buffer.concat([head, image]);
}

export interface PreviewMetadata {
  node_id: string;
  prompt_id: string;
  display_node_id: string;
  parent_node_id: string | null;
  real_node_id: string;
}

export function metadataPreviewFrame(image: Buffer, metadata: PreviewMetadata): Buffer {
  const json = Buffer.from(pyJsonDumps({ ...metadata, image_type: 'image/jpeg' }), 'utf8');
  const head = Buffer.alloc(8);
  head.writeUInt32BE(4, 0);
  head.writeUInt32BE(json.length, 4);
  return Buffer.concat([head, json, image]);
}
