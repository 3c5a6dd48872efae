/**
 * The generated part of the fuzzer's traffic: every route of the front, every content type it reads, with
 * grammar-built images (PNG chunks, JPEG segments, WebP chunks, EXIF) inside A1111, video, OpenAI-image
 * and multipart bodies. Weighted so that most requests reach deep parsing rather than the first check.
 */
import fc from 'fast-check';
import { jpegArb, webpArb, type BaseImages } from './grammar/containers.ts';
import { A1111_FIELDS, OPENAI_IMAGE_FIELDS, OPTION_KEYS, VIDEO_FIELDS, bulkValue, mutated, weirdValue } from './grammar/json.ts';
import { field, file, multipartArb, type Part } from './grammar/multipart.ts';
import { pngArb, validPng } from './grammar/png.ts';
import { b64, json, raw, type FuzzRequest } from './requests.ts';
import { RENDERABLE } from './seeds.ts';

const VIDEO_BASE = { prompt: 'fuzz', model: 'videogen-wan22-5b', size: '64x64', num_frames: 5, num_inference_steps: 1 };
const OPENAI_BASE = { prompt: 'fuzz', model: 'imagegen-flux-schnell', size: '64x64', n: 1, steps: 1, seed: 1, response_format: 'b64_json' };

export function generators(images: BaseImages): fc.Arbitrary<FuzzRequest> {
  const good = validPng(16, 16);
  const imageBytes = fc.oneof(
    { weight: 4, arbitrary: pngArb },
    { weight: 2, arbitrary: jpegArb(images.jpeg) },
    { weight: 2, arbitrary: webpArb(images.webp) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 256 }).map((b) => Buffer.from(b)) },
    { weight: 1, arbitrary: fc.constant(good) },
  );
  const imageString = fc.oneof(
    { weight: 6, arbitrary: imageBytes.map(b64) },
    { weight: 2, arbitrary: imageBytes.map((b) => `data:image/png;base64,${b64(b)}`) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        '',
        '%%%',
        'data:',
        'data:image/png;base64,',
        'data:text/plain;base64,aGVsbG8=',
        'http://127.0.0.1:1/x.png',
        'file:///etc/passwd',
      ),
    },
    { weight: 1, arbitrary: fc.string({ maxLength: 60 }) },
  );
  const a1111Value = fc.oneof(
    { weight: 8, arbitrary: weirdValue },
    { weight: 1, arbitrary: bulkValue },
    { weight: 2, arbitrary: fc.array(imageString, { maxLength: 3 }) },
  );

  const txt2img = mutated(RENDERABLE, A1111_FIELDS, a1111Value).map((b) => json('txt2img fields', '/sdapi/v1/txt2img', b));
  const img2img = fc
    .record({
      init: fc.array(imageString, { minLength: 1, maxLength: 3 }),
      mask: fc.option(imageString, { freq: 3 }),
      patch: fc.option(mutated({}, A1111_FIELDS, weirdValue), { freq: 2 }),
    })
    .map(({ init, mask, patch }) =>
      json('img2img images', '/sdapi/v1/img2img', { ...RENDERABLE, init_images: init, ...(mask !== null ? { mask } : {}), ...(patch ?? {}) }),
    );
  const editRefs = fc
    .array(imageString, { minLength: 1, maxLength: 4 })
    .map((refs) => json('edit extra_images', '/sdapi/v1/txt2img', { ...RENDERABLE, model: 'imagegen-qwen-image-edit', extra_images: refs }));
  const pngInfo = imageString.map((image) => json('png-info image', '/sdapi/v1/png-info', { image }));
  const extras = fc.oneof(
    fc
      .record({ image: imageString, upscaling_resize: fc.oneof(fc.constant(2), weirdValue) })
      .map((b) => json('extras single', '/sdapi/v1/extra-single-image', b)),
    fc
      .array(fc.record({ data: imageString, name: fc.string({ maxLength: 10 }) }), { maxLength: 3 })
      .map((imageList) => json('extras batch', '/sdapi/v1/extra-batch-images', { imageList, upscaling_resize: 2 })),
  );
  const options = fc.dictionary(fc.constantFrom(...OPTION_KEYS), weirdValue, { minKeys: 1, maxKeys: 3 }).map((b) => json('options', '/sdapi/v1/options', b));
  const videoJson = mutated(VIDEO_BASE, VIDEO_FIELDS, fc.oneof(weirdValue, imageString, fc.array(imageString, { maxLength: 2 })))
    .filter((b) => b.size !== VIDEO_BASE.size || b.num_frames !== VIDEO_BASE.num_frames || typeof b.prompt !== 'string' || b.model !== VIDEO_BASE.model)
    .chain((b) => fc.constantFrom('/v1/videos', '/v1/videos/sync').map((path) => json('video json', path, b)));
  const videoParts: fc.Arbitrary<Part[]> = fc
    .tuple(
      fc.array(fc.tuple(fc.constantFrom(...VIDEO_FIELDS), fc.string({ maxLength: 30 })), { maxLength: 5 }),
      fc.array(imageBytes, { maxLength: 2 }),
      fc.constantFrom('input_reference', 'input_references', 'image', 'file', ''),
    )
    .map(([fields, files, name]) => [...fields.map(([k, v]) => field(k, v)), ...files.map((f) => file(name, f))]);
  const videoMultipart = multipartArb(videoParts).map((m) => raw('video multipart', '/v1/videos', m.contentType, m.body));
  const imagesGen = mutated(OPENAI_BASE, OPENAI_IMAGE_FIELDS, weirdValue).map((b) => json('openai generations', '/v1/images/generations', b));
  const editParts: fc.Arbitrary<Part[]> = fc
    .tuple(
      fc.array(fc.tuple(fc.constantFrom(...OPENAI_IMAGE_FIELDS), fc.string({ maxLength: 30 })), { maxLength: 5 }),
      fc.array(imageBytes, { minLength: 0, maxLength: 3 }),
      fc.constantFrom('image', 'image[]', 'mask', 'x'),
    )
    .map(([fields, files, name]) => [field('prompt', 'fuzz'), ...fields.map(([k, v]) => field(k, v)), ...files.map((f) => file(name, f))]);
  const imagesEdit = multipartArb(editParts).map((m) => raw('openai edits', '/v1/images/edits', m.contentType, m.body));
  const id = fc.oneof(
    fc.constantFrom('render-00000000000000000000000000', 'video_1', '..', '%2e%2e', 'x'.repeat(300)),
    fc.string({ maxLength: 20 }).map(encodeURIComponent),
  );
  const gets = fc
    .oneof(
      fc.constantFrom(
        '/sdapi/v1/progress',
        '/sdapi/v1/progress?skip_current_image=true',
        '/sdapi/v1/sd-models',
        '/sdapi/v1/samplers',
        '/sdapi/v1/schedulers',
        '/sdapi/v1/options',
        '/sdapi/v1/upscalers',
        '/v1/models',
        '/health',
        '/renders?limit=5',
        '/openapi.json',
      ),
      fc.string({ maxLength: 30 }).map((q) => `/sdapi/v1/loras?model=${encodeURIComponent(q)}`),
      id.map((i) => `/v1/videos/${i}`),
      fc.tuple(id, fc.constantFrom('video', 'thumbnail', 'spritesheet', '%00', '')).map(([i, v]) => `/v1/videos/${i}/content?variant=${v}`),
      fc.tuple(id, fc.integer({ min: -1, max: 99 })).map(([i, n]) => `/renders/${i}/outputs/${n}`),
      fc
        .tuple(fc.constantFrom('status', 'model', 'since', 'limit', 'q'), fc.string({ maxLength: 20 }))
        .map(([k, v]) => `/renders?${k}=${encodeURIComponent(v)}`),
    )
    .map((path): FuzzRequest => ({ label: 'get', method: 'GET', path }));
  const control = fc
    .tuple(
      fc.constantFrom('/sdapi/v1/interrupt', '/sdapi/v1/skip'),
      fc.oneof(
        fc.constant(''),
        fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v) ?? ''),
      ),
    )
    .map(([path, body]) => raw('control', path, 'application/json', body));
  const garbage = fc
    .record({
      path: fc.oneof(
        fc.constantFrom(
          '/sdapi/v1/txt2img',
          '/sdapi/v1/img2img',
          '/sdapi/v1/png-info',
          '/sdapi/v1/options',
          '/v1/videos',
          '/v1/images/generations',
          '/v1/images/edits',
          '/nope',
          '/sdapi/v1/nope',
          '/v1/nope',
        ),
        fc.string({ maxLength: 20 }).map((s) => `/${encodeURIComponent(s)}`),
      ),
      contentType: fc.constantFrom(
        undefined,
        '',
        'application/json',
        'text/plain',
        'application/x-www-form-urlencoded',
        'application/octet-stream',
        'multipart/form-data; boundary=x',
        'application/json; charset=latin1',
        'image/png',
      ),
      body: fc.oneof(
        fc.string({ maxLength: 200 }),
        fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b)),
        fc.constantFrom('{', '[', '{"prompt":', '{"prompt": "x",}', 'null', '""', '{}}', 'prompt=x&model=y', 'a=1&a=2&a[]=3'),
        fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v) ?? 'null'),
      ),
    })
    .map((g) => raw('garbage', g.path, g.contentType, g.body));
  const form = fc
    .dictionary(fc.constantFrom(...A1111_FIELDS, ...VIDEO_FIELDS), fc.string({ maxLength: 30 }), { maxKeys: 6 })
    .chain((d) =>
      fc
        .constantFrom('/sdapi/v1/txt2img', '/v1/videos', '/v1/images/generations')
        .map((path) => raw('urlencoded', path, 'application/x-www-form-urlencoded', new URLSearchParams(d).toString())),
    );

  return fc.oneof(
    { weight: 14, arbitrary: txt2img },
    { weight: 14, arbitrary: img2img },
    { weight: 3, arbitrary: editRefs },
    { weight: 14, arbitrary: pngInfo },
    { weight: 6, arbitrary: extras },
    { weight: 4, arbitrary: options },
    { weight: 6, arbitrary: videoJson },
    { weight: 6, arbitrary: videoMultipart },
    { weight: 6, arbitrary: imagesGen },
    { weight: 6, arbitrary: imagesEdit },
    { weight: 8, arbitrary: gets },
    { weight: 2, arbitrary: control },
    { weight: 8, arbitrary: garbage },
    { weight: 3, arbitrary: form },
  );
}
