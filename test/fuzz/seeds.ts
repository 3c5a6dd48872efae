/**
 * Every reproduction of the hostile-input report, as requests the fuzzer sends before its generated ones.
 * Each must get a fast 4xx or the correct answer, with no event-loop stall and no lasting memory growth.
 */
import { deflateSync } from 'node:zlib';
import { tiff, userComment } from './grammar/exif.ts';
import { jpegWithExif, webpWithExif } from './grammar/containers.ts';
import type { BaseImages } from './grammar/containers.ts';
import { field, file, multipart } from './grammar/multipart.ts';
import { PNG_SIGNATURE, deflatedRepeat, ihdr, iTxtChunk, pngChunk, textChunk, validPng, zTxtChunk } from './grammar/png.ts';
import { b64, json, raw, type FuzzRequest } from './requests.ts';
import { WEIRD_KEYS } from './grammar/json.ts';

export const RENDERABLE = { prompt: 'fuzz', model: 'imagegen-flux-schnell', width: 64, height: 64, steps: 1, seed: 1 };

/** A PNG whose first IHDR says 64×64 and a second says `w`×`h`, with IDAT inflating to the second's size. */
function doubleIhdrPng(w: number, h: number): Buffer {
  const raw = (1 + w * 4) * h;
  return Buffer.concat([PNG_SIGNATURE, ihdr(64, 64), ihdr(w, h), pngChunk('IDAT', deflatedRepeat(raw)), pngChunk('IEND', Buffer.alloc(0))]);
}

/** 16-bit RGBA of zeros: tiny compressed, ~8 bytes a pixel inflated. */
function deepPng(w: number, h: number): Buffer {
  return Buffer.concat([PNG_SIGNATURE, ihdr(w, h, 16, 6), pngChunk('IDAT', deflatedRepeat((1 + w * 8) * h)), pngChunk('IEND', Buffer.alloc(0))]);
}

/** A large grey mask that compresses to a few KB. */
function bigMask(side: number): Buffer {
  return Buffer.concat([PNG_SIGNATURE, ihdr(side, side, 8, 0), pngChunk('IDAT', deflatedRepeat((1 + side) * side, 0)), pngChunk('IEND', Buffer.alloc(0))]);
}

async function* zeros(total: number, chunk = 1 << 20): AsyncIterable<Uint8Array> {
  const block = Buffer.alloc(chunk, 0x41);
  for (let sent = 0; sent < total; sent += chunk) yield block.subarray(0, Math.min(chunk, total - sent));
}

export function reproductions(images: BaseImages, loraNames: string[]): FuzzRequest[] {
  const small = validPng(64, 64);
  const lora = loraNames[0] ?? 'detail-tweaker';
  const out: FuzzRequest[] = [
    // H1: infotext whose last line is 2 000 (and 3 500) spaces.
    json('H1 png-info 2000 spaces', '/sdapi/v1/png-info', {
      image: b64(validPng(8, 8, 8, 6, [textChunk('parameters', `a cat\nSteps: 20,${' '.repeat(2_000)}`)])),
    }),
    json('H1 png-info 3500 spaces', '/sdapi/v1/png-info', { image: b64(validPng(8, 8, 8, 6, [textChunk('parameters', `a cat\n${' '.repeat(3_500)}`)])) }),
    // H2: a WebP (and a JPEG) whose EXIF UserComment is 100 KB of NULs.
    json('H2 webp exif NUL flood', '/sdapi/v1/png-info', { image: b64(webpWithExif(images.webp, tiff([], [userComment('ASCII', Buffer.alloc(100_000))]))) }),
    json('H2 jpeg exif NUL flood', '/sdapi/v1/png-info', { image: b64(jpegWithExif(images.jpeg, tiff([], [userComment('UNICODE', Buffer.alloc(60_000))]))) }),
    // H3: zTXt / iTXt inflating to 256 MiB.
    {
      ...json('H3 zTXt 256 MiB', '/sdapi/v1/png-info', null),
      body: () => JSON.stringify({ image: b64(validPng(8, 8, 8, 6, [zTxtChunk('parameters', deflatedRepeat(256 << 20, 0x20))])) }),
    },
    {
      ...json('H3 iTXt 256 MiB', '/sdapi/v1/png-info', null),
      body: () => JSON.stringify({ image: b64(validPng(8, 8, 8, 6, [iTxtChunk('parameters', deflatedRepeat(256 << 20, 0x41))])) }),
    },
    // H4: a second IHDR claiming 8192² (67 Mpx) with an IDAT inflating to match.
    {
      ...json('H4 second IHDR 67 Mpx img2img', '/sdapi/v1/img2img', null),
      body: () => JSON.stringify({ ...RENDERABLE, init_images: [b64(doubleIhdrPng(8192, 8192))] }),
    },
    { ...json('H4 second IHDR png-info', '/sdapi/v1/png-info', null), body: () => JSON.stringify({ image: b64(doubleIhdrPng(8192, 8192)) }) },
    // H5: 10 MB and 40 MB JSON bodies of small array elements, on a render route and elsewhere.
    { ...json('H5 10 MB array txt2img', '/sdapi/v1/txt2img', null), body: () => `{"prompt":"x","styles":[${'0,'.repeat(5_000_000)}0]}` },
    { ...json('H5 10 MB array options', '/sdapi/v1/options', null), body: () => `{"x":[${'0,'.repeat(5_000_000)}0]}` },
    { ...json('H5 40 MB array videos', '/v1/videos', null), body: () => `{"prompt":"x","input_references":[${'0,'.repeat(20_000_000)}0]}` },
    // H6: a graph past Temporal's payload limit from a 16 KB body: hundreds of LoRA tags times n_iter 16.
    json('H6 LoRA flood n_iter 16', '/sdapi/v1/txt2img', {
      ...RENDERABLE,
      n_iter: 16,
      prompt: Array.from({ length: 761 }, (_, i) => `<lora:${lora}:${(i % 9) / 10 + 0.1}>`).join(''),
    }),
    // M1: persisted override_settings junk and a poisoned jpeg_quality; the next render must still work.
    json('M1 override junk persisted', '/sdapi/v1/txt2img', {
      ...RENDERABLE,
      override_settings: Object.fromEntries(Array.from({ length: 2_000 }, (_, i) => [`junk_${i}`, 'v'.repeat(200)])),
      override_settings_restore_afterwards: false,
    }),
    json('M1 poisoned jpeg_quality', '/sdapi/v1/txt2img', {
      ...RENDERABLE,
      override_settings: { jpeg_quality: 'abc', samples_format: 'jpg' },
      override_settings_restore_afterwards: false,
    }),
    json('M1 render after poisoning', '/sdapi/v1/txt2img', RENDERABLE),
    // M2: a multipart video body past every body limit, streamed.
    {
      label: 'M2 120 MB multipart video',
      method: 'POST',
      path: '/v1/videos',
      headers: { 'content-type': 'multipart/form-data; boundary=m2boundary' },
      body: () =>
        (async function* () {
          yield Buffer.from(
            '--m2boundary\r\nContent-Disposition: form-data; name="prompt"\r\n\r\nx\r\n--m2boundary\r\nContent-Disposition: form-data; name="input_reference"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n',
          );
          yield* zeros(120 << 20);
          yield Buffer.from('\r\n--m2boundary--\r\n');
        })(),
    },
    // L1: override_settings keys named after Object.prototype members.
    ...WEIRD_KEYS.map((k) =>
      raw(
        `L1 override key ${k}`,
        '/sdapi/v1/txt2img',
        'application/json',
        `{"prompt":"x","model":"imagegen-flux-schnell","width":64,"height":64,"steps":1,"override_settings":{${JSON.stringify(k)}:1}}`,
      ),
    ),
    raw('L1 options key constructor', '/sdapi/v1/options', 'application/json', '{"constructor":{"prototype":{"x":1}},"toString":1}'),
    // L2: a 22 KB mask of 4096² that must be resized to the init image.
    { ...json('L2 4096² mask', '/sdapi/v1/img2img', null), body: () => JSON.stringify({ ...RENDERABLE, init_images: [b64(small)], mask: b64(bigMask(4096)) }) },
    // L3: a 16 Mpx 16-bit PNG that compresses under the large-body threshold.
    {
      ...json('L3 16 Mpx 16-bit init image', '/sdapi/v1/img2img', null),
      body: () => JSON.stringify({ ...RENDERABLE, init_images: [b64(deepPng(4096, 4096))] }),
    },
    // L4: malformed multipart bodies.
    raw('L4 multipart no close', '/v1/videos', 'multipart/form-data; boundary=abc', '--abc\r\nContent-Disposition: form-data; name="prompt"\r\n\r\nx'),
    raw('L4 multipart no headers', '/v1/videos', 'multipart/form-data; boundary=abc', '--abc\r\n\r\n\r\n--abc--'),
    raw('L4 multipart no boundary', '/v1/videos', 'multipart/form-data', '--abc\r\n\r\n'),
    raw('L4 multipart garbage', '/v1/videos/sync', 'multipart/form-data; boundary=abc', Buffer.from([0x2d, 0x2d, 0x61, 0x62, 0x63, 0xff, 0xfe, 0x00])),
    raw(
      'L4 multipart image edit',
      '/v1/images/edits',
      'multipart/form-data; boundary=abc',
      '--abc\r\nContent-Disposition: form-data; name="image"; filename="a.png"\r\n\r\n',
    ),
    // L5: a JPEG EXIF UNICODE comment of odd length.
    json('L5 jpeg UNICODE odd', '/sdapi/v1/png-info', { image: b64(jpegWithExif(images.jpeg, tiff([], [userComment('UNICODE', Buffer.from('abc'))]))) }),
    json('L5 webp UNICODE odd', '/sdapi/v1/png-info', { image: b64(webpWithExif(images.webp, tiff([], [userComment('UNICODE', Buffer.from('abcde'))]))) }),
    // The old fuzzer's classes: inflate bombs as image and mask, long numbers, deep nesting.
    json('bomb init image', '/sdapi/v1/img2img', {
      ...RENDERABLE,
      init_images: [b64(Buffer.concat([PNG_SIGNATURE, ihdr(2, 2), pngChunk('IDAT', deflatedRepeat(48 << 20)), pngChunk('IEND', Buffer.alloc(0))]))],
    }),
    json('bomb mask', '/sdapi/v1/img2img', {
      ...RENDERABLE,
      init_images: [b64(small)],
      mask: b64(Buffer.concat([PNG_SIGNATURE, ihdr(2, 2, 8, 6, 1), pngChunk('IDAT', deflatedRepeat(48 << 20)), pngChunk('IEND', Buffer.alloc(0))])),
    }),
    raw('64k-digit number', '/sdapi/v1/txt2img', 'application/json', `{"prompt":"x","steps":${'1'.repeat(64_000)}}`),
    raw('deep nesting', '/sdapi/v1/txt2img', 'application/json', `{"prompt":"x","styles":${'{"a":['.repeat(20_000)}1${']}'.repeat(20_000)}}`),
    // Multipart video with a real reference image (must be a clean answer, rendered or refused).
    {
      label: 'multipart video with reference',
      method: 'POST',
      path: '/v1/videos',
      headers: { 'content-type': 'multipart/form-data; boundary=vb' },
      body: () => multipart([field('prompt', 'x'), field('size', '64x64'), field('num_frames', '5'), file('input_reference', small)], 'vb'),
    },
  ];
  // Compressed text the old parser inflated without a limit, sized so the inflate alone would show.
  out.push(
    json('zTXt 16 MiB deflated text', '/sdapi/v1/png-info', {
      image: b64(validPng(8, 8, 8, 6, [zTxtChunk('parameters', deflateSync(Buffer.alloc(16 << 20, 0x20)))])),
    }),
  );
  return out;
}
