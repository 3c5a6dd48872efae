/** Video API fields → RenderRequest: defaults per model, grids, tasks and roles, and every bad input as a 4xx naming its field. */
import { describe, expect, it } from 'vitest';
import { RequestError } from '../../src/api/a1111/errors.ts';
import { normalizeVideoRequest } from '../../src/api/video/normalize.ts';
import type { UploadedFile } from '../../src/api/video/image-inputs.ts';
import { makePng } from '../golden/helpers.ts';

const ctx = { defaultModel: 'videogen-wan22-5b', random: () => 0.5, limits: { maxImageBytes: 1_000_000, maxImagePixels: 4096 * 4096 } };
const png = (w = 64, h = 48) => makePng(w, h, [10, 200, 30, 255]);
const b64 = (w?: number, h?: number) => png(w, h).toString('base64');
const norm = (fields: Record<string, unknown>, files: UploadedFile[] = []) => normalizeVideoRequest(fields, files, ctx);

function fails(fields: Record<string, unknown>, files: UploadedFile[] = []): RequestError {
  try {
    norm(fields, files);
  } catch (err) {
    if (err instanceof RequestError) return err;
    throw err;
  }
  throw new Error('expected a RequestError');
}

const WAN = 'videogen-wan22-5b';
const H3 = 'videogen-minimax-h3';

describe('defaults and grids', () => {
  it('Wan defaults: 1280×704, 121 frames, 24 fps, 20 steps, cfg 5, uni_pc/simple; random seed; t2v', () => {
    const { request: r } = norm({ prompt: 'a cat' });
    expect(r).toMatchObject({
      kind: 'video',
      model: WAN,
      width: 1280,
      height: 704,
      steps: 20,
      cfg: 5,
      sampler: 'uni_pc',
      scheduler: 'simple',
      seed: 2147483647,
    });
    expect(r.video).toMatchObject({ task: 't2v', frames: 121, fps: 24, references: [] });
    // The video member of the RenderRequest union: no image fields filled with placeholders in its history.
    expect(Object.keys(r).sort()).toEqual([
      'batchSize',
      'cfg',
      'height',
      'kind',
      'model',
      'nIter',
      'negativePrompt',
      'prompt',
      'sampler',
      'scheduler',
      'seed',
      'steps',
      'video',
      'width',
    ]);
  });

  it('H3 defaults: 1344×768, 124 frames (5.167 s), 24 fps, res_multistep/simple, cfg 1, no negative prompt', () => {
    const { request: r, warnings } = norm({ model: H3, prompt: 'rain', negative_prompt: 'blurry', guidance_scale: 7 });
    expect(r).toMatchObject({ width: 1344, height: 768, steps: 20, cfg: 1, sampler: 'res_multistep', negativePrompt: '' });
    expect(r.video).toMatchObject({ task: 't2va', frames: 124, fps: 24 });
    expect(warnings.join(' ')).toMatch(/negative_prompt ignored/);
    expect(warnings.join(' ')).toMatch(/guidance_scale ignored/);
  });

  it('seconds → frames on the grid (Wan 5 s → 121, H3 4 s → 107, 8.7 s → 209); num_frames wins over seconds; requested values kept', () => {
    expect(norm({ prompt: 'x', seconds: '5' }).request.video).toMatchObject({ frames: 121, requested: { seconds: '5', frames: 120 } });
    expect(norm({ prompt: 'x', seconds: 5, num_frames: 80 }).request.video.frames).toBe(81);
    expect(norm({ model: H3, prompt: 'x', seconds: 4 }).request.video.frames).toBe(107);
    expect(norm({ model: H3, prompt: 'x', extra_params: '{"duration": 8.7}' }).request.video.frames).toBe(209);
    expect(norm({ prompt: 'x', seconds: 2, fps: 16 }).request.video).toMatchObject({ frames: 33, fps: 16 });
  });

  it('size wins over width/height; sizes snap to the 32 px grid; form strings are numbers', () => {
    const r = norm({ prompt: 'x', size: '832x480', width: '640', height: '360' }).request;
    expect([r.width, r.height]).toEqual([832, 480]);
    const s = norm({ prompt: 'x', width: '650', height: '350' }).request;
    expect([s.width, s.height]).toEqual([640, 352]);
    expect(s.video.requested).toMatchObject({ width: 650, height: 350 });
  });

  it("the OpenAI SDK's sizes fit: the nearest grid size inside the budget (1280x720 → 1280x704), larger ones scaled down; said in warnings", () => {
    for (const [size, w, h] of [
      ['1280x720', 1280, 704],
      ['720x1280', 704, 1280],
      ['1920x1080', 1280, 704],
      ['1024x1792', 704, 1280],
    ] as const) {
      const r = norm({ prompt: 'x', size });
      expect([r.request.width, r.request.height], size).toEqual([w, h]);
      expect(r.request.width * r.request.height).toBeLessThanOrEqual(1280 * 720);
      expect(r.warnings.join('\n')).toMatch(new RegExp(`size: ${size} .*rendering ${w}x${h}`));
    }
    expect(norm({ prompt: 'x', size: '832x480' }).warnings).toEqual([]);
  });

  it('H3 counts steps in sigma points (vLLM-Omni): 9 → 8 sampler steps; flow_shift and audio_flow_shift set the sigma shift', () => {
    const r = norm({ model: H3, prompt: 'x', num_inference_steps: '9', flow_shift: '12', extra_params: { audio_flow_shift: 3 } }).request;
    expect(r.steps).toBe(8);
    expect(r.video).toMatchObject({ shift: 12, audioShift: 3 });
    // Only the audio shift: the video shift beside it is the model's default.
    expect(norm({ model: H3, prompt: 'x', extra_params: { audio_flow_shift: 2 } }).request.video).toMatchObject({ shift: 12, audioShift: 2 });
    expect(norm({ prompt: 'x', num_inference_steps: 30, flow_shift: 5 }).request).toMatchObject({ steps: 30, video: { shift: 5 } });
  });

  it('an image without a size decides it: Wan keeps its aspect (max 1280×704 area), H3 fl2va short edge 768', () => {
    const wan = norm({ prompt: 'x', input_reference: `data:image/png;base64,${b64(1920, 1080)}` }).request;
    expect(wan.video).toMatchObject({ task: 'i2v', firstFrame: { mime: 'image/png', width: 1920, height: 1080 } });
    expect([wan.width, wan.height]).toEqual([1248, 704]);
    const h3 = norm({ model: H3, prompt: 'x' }, [{ field: 'input_reference', bytes: png(600, 800), mimetype: 'image/png' }]).request;
    expect(h3.video.task).toBe('fl2va');
    expect([h3.width, h3.height]).toEqual([768, 1024]);
  });
});

describe('H3 tasks and roles', () => {
  it('fl2va: one image is the first frame, two are first + last; frame_indices [-1] makes one image the last frame', () => {
    const two = norm({ model: H3, prompt: 'x', size: '256x160', input_reference: b64(), input_references: [b64(32, 32)], extra_params: '{"task":"fl2va"}' })
      .request.video;
    expect(two.firstFrame?.width).toBe(64);
    expect(two.lastFrame?.width).toBe(32);
    const last = norm({ model: H3, prompt: 'x', input_reference: b64(), extra_params: { frame_indices: [-1] } }).request.video;
    expect(last).toMatchObject({ task: 'fl2va', lastFrame: { width: 64 } });
    expect(last.firstFrame).toBeUndefined();
  });

  it('ref2va: every image is a reference, in order', () => {
    const v = norm({ model: H3, prompt: '<Picture 1> meets <Picture 2>', input_references: [b64(10, 10), b64(20, 20)], extra_params: { task: 'ref2va' } })
      .request.video;
    expect(v.task).toBe('ref2va');
    expect(v.references.map((r) => r.width)).toEqual([10, 20]);
    expect(v.firstFrame).toBeUndefined();
  });

  it('Wan accepts its own task names: i2v with a start image is what the image alone selects', () => {
    const named = norm({ prompt: 'x', input_reference: b64(), extra_params: { task: 'i2v' } }).request.video;
    const implied = norm({ prompt: 'x', input_reference: b64() }).request.video;
    expect(named).toEqual(implied);
    expect(named).toMatchObject({ task: 'i2v', firstFrame: { width: 64 } });
  });
});

describe('bad input: 4xx naming the field', () => {
  it.each([
    ['unknown model', { model: 'sora-2', prompt: 'x' }, 'model', /unknown model "sora-2".*videogen-wan22-5b/],
    ['image model on the video route', { model: 'imagegen-flux-dev', prompt: 'x' }, 'model', /image model/],
    ['missing prompt', { model: H3 }, 'prompt', /required/],
    ['blank prompt', { prompt: '   ' }, 'prompt', /required/],
    ['frames out of range', { prompt: 'x', num_frames: 1000 }, 'num_frames', /5\.\.241 frames/],
    ['duration out of range', { model: H3, prompt: 'x', seconds: 20 }, 'seconds', /5\.\.362 frames/],
    ['H3 duration in extra_params out of range', { model: H3, prompt: 'x', extra_params: { duration: 30 } }, 'extra_params.duration', /out of range/],
    ['fps out of range', { prompt: 'x', fps: 120 }, 'fps', /1\.\.60/],
    ['H3 fps other than 24', { model: H3, prompt: 'x', fps: 30 }, 'fps', /24 fps/],
    ['size not WxH', { prompt: 'x', size: 'big' }, 'size', /WIDTHxHEIGHT/],
    ['width without height', { prompt: 'x', width: 640 }, 'height', /together/],
    ['steps out of range', { prompt: 'x', num_inference_steps: 500 }, 'num_inference_steps', /1\.\.200/],
    ['guidance out of range', { prompt: 'x', guidance_scale: 50 }, 'guidance_scale', /0\.\.20/],
    ['non-numeric seed', { prompt: 'x', seed: 'abc' }, 'seed', /integer/],
    ['extra_params not JSON', { model: H3, prompt: 'x', extra_params: '{task' }, 'extra_params', /not valid JSON/],
    ['unknown H3 task', { model: H3, prompt: 'x', extra_params: { task: 'v2v' } }, 'extra_params.task', /t2va, fl2va, ref2va/],
    ["another model's task on Wan", { prompt: 'x', extra_params: { task: 'fl2va' } }, 'extra_params.task', /one of t2v, i2v for videogen-wan22-5b/],
    [
      'Wan t2v with an image',
      { prompt: 'x', input_reference: b64(), extra_params: { task: 't2v' } },
      'input_reference',
      /t2v takes no images \(use extra_params.task "i2v"\)/,
    ],
    ['last frame on Wan', { prompt: 'x', input_reference: b64(), extra_params: { frame_indices: [-1] } }, 'extra_params.frame_indices', /first frame/],
    ['references on Wan', { prompt: 'x', input_references: [b64()] }, 'input_references.0', /minimax-h3 ref2va/],
    ['references without a task', { model: H3, prompt: 'x', input_references: [b64()] }, 'input_references.0', /extra_params.task/],
    ['t2va with an image', { model: H3, prompt: 'x', input_reference: b64(), extra_params: { task: 't2va' } }, 'input_reference', /t2va takes no images/],
    [
      'last frame without fl2va',
      { model: H3, prompt: 'x', input_references: [b64()], extra_params: { task: 'ref2va', frame_indices: [-1] } },
      'extra_params.frame_indices',
      /only fl2va/,
    ],
    ['fl2va without images', { model: H3, prompt: 'x', extra_params: { task: 'fl2va' } }, 'input_reference', /first or last frame/],
    [
      'fl2va with three images',
      { model: H3, prompt: 'x', input_references: [b64(), b64(), b64()], extra_params: { task: 'fl2va' } },
      'input_references.2',
      /at most two/,
    ],
    [
      'bad frame_indices',
      { model: H3, prompt: 'x', input_reference: b64(), extra_params: { frame_indices: [3] } },
      'extra_params.frame_indices',
      /\[0\], \[-1\] or \[0, -1\]/,
    ],
    [
      'a reference that is not an image',
      { prompt: 'x', input_reference: Buffer.from('not an image at all').toString('base64') },
      'input_reference',
      /not a PNG, JPEG or WebP/,
    ],
    ['an image URL', { prompt: 'x', input_reference: 'https://example.com/a.png' }, 'input_reference', /URLs are not accepted/],
  ])('%s', (_name, fields, field, message) => {
    const e = fails(fields);
    expect(e.status).toBeGreaterThanOrEqual(400);
    expect(e.status).toBeLessThan(500);
    expect(e.field).toBe(field);
    expect(e.message).toMatch(message);
  });

  it('a video file as a reference is refused as not an image', () => {
    const e = fails({ prompt: 'x' }, [{ field: 'input_reference', bytes: Buffer.from('....ftypisom'), mimetype: 'video/mp4', filename: 'clip.mp4' }]);
    expect(e).toMatchObject({ status: 400, field: 'input_reference' });
    expect(e.message).toMatch(/video\/mp4 is not an image/);
    const f = fails({ model: H3, prompt: 'x', extra_params: { task: 'ref2va' } }, [
      { field: 'input_references', bytes: Buffer.from('RIFF....WAVE'), filename: 'a.wav' },
    ]);
    expect(f).toMatchObject({ status: 400, field: 'input_references.0' });
  });
});
