/**
 * A1111 extras (`/sdapi/v1/extra-single-image`, `/extra-batch-images`) → an `upscale` RenderRequest: each image
 * enlarged through a ComfyUI graph (ImageScaleBy with a pixel method, or an UpscaleModelLoader model), as
 * durable as any render. Face restoration and the second upscaler are accepted and reported as not applied.
 */
import { z } from 'zod';
import { decodeImageInput, type DecodedImage } from '../../images/decode.ts';
import { decodeImagesOffLoop } from '../../bytes/off-loop.ts';
import { upscaleTarget } from '../../models/families/upscale.ts';
import type { BlobRef, ImagesRender, RenderRequest } from '../../contracts/render.ts';
import { RequestError, describeValue } from './errors.ts';
import { requestErrorFromIssues } from '../../errors/request-error.ts';
import type { ResolveLimits as NormalizeLimits } from '../../request/limits.ts';
import { resolveUpscaler, type CatalogLists } from '../../request/upscalers.ts';

const num = z.preprocess(
  (v) => (v === null ? undefined : typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v)) ? Number(v) : v),
  z.number().optional(),
);
const str = z.preprocess((v) => (v === null ? undefined : v), z.string().optional());
const bool = z.preprocess((v) => (v === null ? undefined : v === 0 || v === 1 ? v === 1 : v), z.boolean().optional());

/** A1111 `ExtrasBaseRequest` (unknown keys ignored, as pydantic does). */
const extrasShape = {
  resize_mode: num,
  show_extras_results: bool,
  gfpgan_visibility: num,
  codeformer_visibility: num,
  codeformer_weight: num,
  upscaling_resize: num,
  upscaling_resize_w: num,
  upscaling_resize_h: num,
  upscaling_crop: bool,
  upscaler_1: str,
  upscaler_2: str,
  extras_upscaler_2_visibility: num,
  upscale_first: bool,
};

export const extrasSingleSchema = z.object({ ...extrasShape, image: str });
export const extrasBatchSchema = z.object({
  ...extrasShape,
  imageList: z.preprocess((v) => (v === null ? undefined : v), z.array(z.object({ data: z.string(), name: z.string().optional() })).optional()),
});

export interface NormalizedExtras {
  request: RenderRequest;
  images: DecodedImage[];
  warnings: string[];
}

/** ImageScaleBy's own limit. */
const MAX_FACTOR = 8;
const MAX_SIDE = 16_384;

type ExtrasContext = { defaultModel: string; limits: NormalizeLimits; catalog: CatalogLists };

/** The body checked, then its images decoded on this thread (tests, tools). The service calls normalizeExtrasOffLoop. */
export function normalizeExtras(route: 'single' | 'batch', body: unknown, ctx: ExtrasContext): NormalizedExtras {
  const steps = extrasSteps(route, body, ctx);
  const inputs = steps.next();
  if (inputs.done) return inputs.value;
  const done = steps.next(inputs.value.map((i) => decodeImageInput(i.value, i.field, ctx.limits)));
  return done.value as NormalizedExtras;
}

/** normalizeExtras with the images decoded and checked in a byte worker (src/bytes/), off the event loop. */
export async function normalizeExtrasOffLoop(route: 'single' | 'batch', body: unknown, ctx: ExtrasContext): Promise<NormalizedExtras> {
  const steps = extrasSteps(route, body, ctx);
  const inputs = steps.next();
  if (inputs.done) return inputs.value;
  const done = steps.next(await decodeImagesOffLoop(inputs.value, ctx.limits));
  return done.value as NormalizedExtras;
}

/** Every check of the body; yields the images to decode, once the cheap checks have passed, and gets them back decoded. */
function* extrasSteps(
  route: 'single' | 'batch',
  body: unknown,
  ctx: ExtrasContext,
): Generator<Array<{ value: string; field: string }>, NormalizedExtras, DecodedImage[]> {
  const schema = route === 'single' ? extrasSingleSchema : extrasBatchSchema;
  const parsed = schema.safeParse(body ?? {});
  if (!parsed.success) {
    throw requestErrorFromIssues(parsed.error.issues, { status: 422 });
  }
  const b = parsed.data as z.output<typeof extrasBatchSchema> & { image?: string };
  const warnings: string[] = [];
  const inputs: { value: string; field: string }[] =
    route === 'single'
      ? [{ value: b.image ?? '', field: 'image' }]
      : (b.imageList ?? []).map((item, i) => ({ value: item.data, field: `imageList.${i}.data` }));
  if (inputs.length === 0 || inputs.some((i) => i.value.trim() === '')) {
    const field = route === 'single' ? 'image' : 'imageList';
    throw new RequestError(400, field, `${field}: an image to upscale is required, got ${describeValue(route === 'single' ? b.image : b.imageList)}`);
  }
  if (inputs.length > ctx.limits.maxBatch) {
    throw new RequestError(400, 'imageList', `imageList: ${inputs.length} images exceed the limit of ${ctx.limits.maxBatch} per request`);
  }

  const mode = b.resize_mode ?? 0;
  if (mode !== 0 && mode !== 1) throw new RequestError(400, 'resize_mode', `resize_mode: ${mode} is not 0 (scale by) or 1 (scale to)`);
  const { upscaler, label } = resolveUpscaler(b.upscaler_1, 'upscaler_1', ctx.catalog, { latent: false, dflt: 'None' });
  const factor = b.upscaling_resize ?? 2;
  if (mode === 0 && !(factor > 0 && factor <= MAX_FACTOR)) {
    throw new RequestError(400, 'upscaling_resize', `upscaling_resize: ${factor} is out of range 0..${MAX_FACTOR}`);
  }
  const tw = Math.trunc(b.upscaling_resize_w ?? 512);
  const th = Math.trunc(b.upscaling_resize_h ?? 512);
  if (mode === 1 && !(tw >= 1 && tw <= MAX_SIDE && th >= 1 && th <= MAX_SIDE)) {
    throw new RequestError(400, 'upscaling_resize_w', `upscaling_resize_w/h: ${tw}x${th} is out of range 1..${MAX_SIDE}`);
  }
  if ((b.gfpgan_visibility ?? 0) > 0) warnings.push('gfpgan_visibility: face restoration is not supported; not applied');
  if ((b.codeformer_visibility ?? 0) > 0) warnings.push('codeformer_visibility: face restoration is not supported; not applied');
  if (b.upscaler_2 && b.upscaler_2 !== 'None' && (b.extras_upscaler_2_visibility ?? 0) > 0) {
    warnings.push('upscaler_2: blending a second upscaler is not supported; not applied');
  }

  const spec =
    mode === 0
      ? { factor, crop: false, upscaler, upscalerName: label }
      : { width: tw, height: th, crop: b.upscaling_crop ?? true, upscaler, upscalerName: label };
  const decoded = yield inputs;
  const refs: BlobRef[] = decoded.map((d) => d.ref);
  refs.forEach((ref, i) => {
    const target = upscaleTarget(spec, ref);
    if (!target) throw new RequestError(400, inputs[i]!.field, `${inputs[i]!.field}: the image size could not be read`);
    if (target.width * target.height > ctx.limits.maxImagePixels) {
      throw new RequestError(
        400,
        mode === 0 ? 'upscaling_resize' : 'upscaling_resize_w',
        `${mode === 0 ? 'upscaling_resize' : 'upscaling_resize_w'}: ${target.width}x${target.height} exceeds the limit of ${ctx.limits.maxImagePixels} pixels`,
      );
    }
  });
  const first = upscaleTarget(spec, refs[0]!)!;
  const unique = new Map(decoded.map((d) => [d.ref.sha256, d]));
  const request: RenderRequest = { kind: 'upscale', ...imagesRenderBase(ctx.defaultModel, refs, first), upscale: spec };
  return { request, images: [...unique.values()], warnings };
}

/**
 * The common part of a render of images with no diffusion model (an upscale, a preprocessor, a segmentation):
 * one item per image at `size`, no sampling (seed 0); the default model's profile only lends its time limits.
 */
export function imagesRenderBase(model: string, refs: BlobRef[], size: { width: number; height: number }): ImagesRender {
  return { model, seed: 0, width: size.width, height: size.height, batchSize: refs.length, nIter: 1, extraImages: refs };
}
