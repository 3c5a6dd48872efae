/**
 * The A1111 protocol's half of resolving a render: an A1111 body (`/sdapi/v1/txt2img`, `/img2img`) is
 * validated by its schema and mapped ONCE into the neutral request (src/request/neutral.ts), each neutral
 * field beside the A1111 field it came from; the one resolver (src/request/resolve.ts) decides the render.
 * What only A1111 has stays here: its sampler field variants, `override_settings`, scripts, the inpaint
 * options, ControlNet's units (controlnet.ts), the fields accepted but not applied, and the `parameters` its answer echoes.
 */
import type { ImageRender } from '../../contracts/render.ts';
import type { SizeFieldNames } from '../../contracts/history-size.ts';
import type { DecodedImage } from '../../images/decode.ts';
import type { ImageSource } from '../../images/image-set.ts';
import { RequestError, describeValue } from './errors.ts';
import { requestErrorFromIssues } from '../../errors/request-error.ts';
import type { FieldNames } from '../../request/fields.ts';
import { present } from '../../request/fields.ts';
import type { ResolveLimits } from '../../request/limits.ts';
import type { HiresAsk, NeutralImageRequest } from '../../request/neutral.ts';
import { resolveImageRequest, resolveImageRequestOffLoop, type ResolvedRequest } from '../../request/resolve.ts';
import type { CatalogLists } from '../../request/upscalers.ts';
import { buildParameters } from './response.ts';
import { schemaFor, type A1111Body, type A1111Route } from './schema.ts';
import { chooseInpaint } from './inpaint.ts';
import { chooseSdUpscale, isSdUpscale } from './sd-upscale.ts';
import { unappliedFieldWarnings } from './unapplied.ts';
import { chooseControls } from './controlnet.ts';
import { chooseOutputFormat, overrideWarnings } from './tweaks.ts';

export type { DecodedImage } from '../../images/decode.ts';

export interface NormalizeContext {
  /** Profile id (or any accepted name) used when the request names no model. */
  defaultModel: string;
  /** Uniform in [0, 1); injected so tests get fixed "random" seeds. */
  random: () => number;
  limits: ResolveLimits;
  /** ComfyUI's LoRA and upscale-model files, fetched by the route (LoRA tags and upscalers resolve against them). */
  catalog?: CatalogLists;
  /** Current `/sdapi/v1/options` values (samples_format, jpeg_quality, ...). */
  options?: Record<string, unknown>;
  log?: (msg: string, obj: Record<string, unknown>) => void;
}

export interface NormalizedRequest {
  request: ImageRender;
  /** Distinct input images to store under `ref.sha256` once normalisation has fully succeeded. */
  images: DecodedImage[];
  /** Ignored or adjusted inputs, for logs and `info.warnings`. */
  warnings: string[];
  /** A1111 `parameters` for the response, computed now so the body (with its base64) can be dropped. */
  parameters: Record<string, unknown>;
  /** The A1111 names of the fields the submission service may refuse. */
  fields: SizeFieldNames;
}

/** The A1111 field of each neutral field; the sampler, model and iteration fields vary per body (a1111Names). */
const A1111_NAMES: FieldNames = {
  model: 'model',
  prompt: 'prompt',
  negativePrompt: 'negative_prompt',
  seed: 'seed',
  steps: 'steps',
  cfg: 'cfg_scale',
  guidance: 'distilled_cfg_scale',
  sampler: 'sampler_name',
  scheduler: 'scheduler',
  width: 'width',
  height: 'height',
  batchSize: 'batch_size',
  nIter: 'n_iter',
  denoise: 'denoising_strength',
  init: 'init_images',
  mask: 'mask',
  refs: 'extra_images',
};

const HIRES_NAMES: HiresAsk['names'] = {
  resizeX: 'hr_resize_x',
  resizeY: 'hr_resize_y',
  scale: 'hr_scale',
  upscaler: 'hr_upscaler',
  steps: 'hr_second_pass_steps',
  denoise: 'denoising_strength',
  sampler: 'hr_sampler_name',
  scheduler: 'hr_scheduler',
};

/** Everything but the images, then the images decoded on this thread (tests, tools). The service calls normalizeRequestOffLoop. */
export function normalizeRequest(route: A1111Route, body: unknown, ctx: NormalizeContext): NormalizedRequest {
  const { b, neutral } = toNeutral(route, body, ctx);
  return finish(route, b, resolveImageRequest(neutral, ctx), ctx);
}

/** normalizeRequest with the images decoded and checked in a byte worker (src/bytes/), off the event loop. */
export async function normalizeRequestOffLoop(route: A1111Route, body: unknown, ctx: NormalizeContext): Promise<NormalizedRequest> {
  const { b, neutral } = toNeutral(route, body, ctx);
  return finish(route, b, await resolveImageRequestOffLoop(neutral, ctx), ctx);
}

function finish(route: A1111Route, b: A1111Body, resolved: ResolvedRequest, ctx: NormalizeContext): NormalizedRequest {
  const { request, images, warnings, fields } = resolved;
  unappliedFieldWarnings(b, { sampler: request.sampler }, warnings);
  if (warnings.length > 0) ctx.log?.('a1111 request: ignored or adjusted inputs', { model: request.model, warnings });
  return { request, images, warnings, fields, parameters: buildParameters(route, b, request) };
}

/** The A1111 body, checked, in the neutral request's words. */
function toNeutral(route: A1111Route, body: unknown, ctx: NormalizeContext): { b: A1111Body; neutral: NeutralImageRequest } {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new RequestError(422, '', `request body must be a JSON object, got ${describeValue(body)}`);
  }
  const b = parseBody(route, body as Record<string, unknown>);
  const warnings: string[] = [];
  rejectUnsupportedScripts(b);
  const sdUpscale = isSdUpscale(b) ? chooseSdUpscale(route, b, ctx.catalog ?? {}, warnings) : undefined;
  const model = chooseModelName(b);
  const sampler = chooseSamplerName(b, warnings);
  const images = chooseImages(route, b);
  const controls = chooseControls(b.alwayson_scripts, images.init, warnings, ctx.catalog?.preprocessors ?? []);
  const names: FieldNames = {
    ...A1111_NAMES,
    model: model.field,
    sampler: sampler.field,
    nIter: b.n_iter === undefined && b.batch_count !== undefined ? 'batch_count' : 'n_iter',
  };
  if (b.disable_extra_networks === true && /<lora:/i.test(b.prompt ?? '')) {
    warnings.push('disable_extra_networks: LoRA tags removed from the prompt and not applied');
  }
  const output = chooseOutputFormat(b, ctx.options ?? {}, warnings);
  overrideWarnings(b, ctx.options ?? {}, warnings);
  const neutral: NeutralImageRequest = {
    kind: 'image',
    names,
    route,
    ...(model.name !== undefined ? { model: model.name } : {}),
    prompt: b.prompt ?? '',
    ...defined({
      negativePrompt: b.negative_prompt,
      seed: b.seed,
      steps: b.steps,
      cfg: b.cfg_scale,
      guidance: b.distilled_cfg_scale,
      sampler: sampler.name,
      scheduler: b.scheduler,
      width: b.width,
      height: b.height,
      batchSize: b.batch_size,
      nIter: b.n_iter ?? b.batch_count ?? 1,
      denoise: b.denoising_strength,
      init: images.init,
      resizeMode: route === 'img2img' ? chooseResizeMode(b) : undefined,
      hires: route === 'txt2img' ? chooseHiresAsk(b, warnings) : undefined,
      sdUpscale: sdUpscale && { spec: sdUpscale, names: { script: 'script_name', scale: 'script_args.3', upscaler: 'script_args.2' } },
      output,
    }),
    ...(images.mask
      ? {
          mask: { source: images.mask, invert: (b.inpainting_mask_invert ?? 0) !== 0, round: b.mask_round ?? true },
          inpaint: chooseInpaint(b, warnings),
        }
      : {}),
    refs: images.refs,
    loraTags: b.disable_extra_networks === true ? 'strip' : 'apply',
    ...(controls.length > 0 ? { controls } : {}),
    warnings,
  };
  return { b, neutral };
}

/** An object of the given entries without those that are undefined (exactOptionalPropertyTypes). */
function defined<T extends Record<string, unknown>>(o: T): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as { [K in keyof T]?: Exclude<T[K], undefined> };
}

function parseBody(route: A1111Route, body: Record<string, unknown>): A1111Body {
  const parsed = schemaFor(route).safeParse(body);
  if (parsed.success) return parsed.data;
  throw requestErrorFromIssues(parsed.error.issues, { status: 422, value: body });
}

function rejectUnsupportedScripts(b: A1111Body): void {
  // A1111 answers an unknown script with 422; SD upscale is the one script here (GET /sdapi/v1/scripts).
  if (!present(b.script_name) || isSdUpscale(b)) return;
  throw new RequestError(422, 'script_name', `script_name: Script '${b.script_name}' not found (the only script is 'sd upscale', on img2img)`);
}

/** `model`, else `override_settings.sd_model_checkpoint`, else none (the default model). */
function chooseModelName(b: A1111Body): { name?: string; field: string } {
  if (present(b.model)) return { name: b.model, field: 'model' };
  const fromOverride = b.override_settings?.sd_model_checkpoint;
  const field = 'override_settings.sd_model_checkpoint';
  if (fromOverride === undefined || fromOverride === null || fromOverride === '') return { field: 'model' };
  if (typeof fromOverride !== 'string') throw new RequestError(422, field, `${field}: expected a string, got ${describeValue(fromOverride)}`);
  return { name: fromOverride, field };
}

/** `sampler_name`, else sd.cpp's `sample_method`, else a `sampler_index` name (A1111's old field). */
function chooseSamplerName(b: A1111Body, warnings: string[]): { name?: string; field: string } {
  if (present(b.sampler_name)) return { name: b.sampler_name, field: 'sampler_name' };
  if (present(b.sample_method)) return { name: b.sample_method, field: 'sample_method' };
  if (typeof b.sampler_index === 'string' && present(b.sampler_index)) return { name: b.sampler_index, field: 'sampler_index' };
  if (typeof b.sampler_index === 'number') warnings.push('sampler_index: a numeric sampler index is not supported; using the model default sampler');
  return { field: 'sampler_name' };
}

/** The init image (img2img: exactly one), the mask and the reference images, each under its A1111 field. */
function chooseImages(route: A1111Route, b: A1111Body): { init?: ImageSource; mask?: ImageSource; refs: ImageSource[] } {
  const refs = (b.extra_images ?? []).map((value, i) => ({ value, field: `extra_images.${i}` }));
  if (route !== 'img2img') return { refs };
  const inits = b.init_images ?? [];
  if (inits.length === 0) {
    // 404 and this wording are A1111's; kept for client compatibility.
    throw new RequestError(404, 'init_images', 'Init image not found: init_images is required for img2img');
  }
  if (inits.length > 1) {
    throw new RequestError(400, 'init_images', `init_images: ${inits.length} images sent; one init image per request is supported`);
  }
  const init = { value: inits[0]!, field: 'init_images.0' };
  return { init, ...(present(b.mask) ? { mask: { value: b.mask, field: 'mask' } } : {}), refs };
}

function chooseResizeMode(b: A1111Body): 0 | 1 | 2 | 3 {
  const m = b.resize_mode ?? 0;
  if (m !== 0 && m !== 1 && m !== 2 && m !== 3) {
    throw new RequestError(400, 'resize_mode', `resize_mode: ${m} is not one of 0 (just resize), 1 (crop and resize), 2 (resize and fill), 3 (latent upscale)`);
  }
  return m;
}

/** `enable_hr` and its `hr_*` fields ("Use same sampler" / "Use same scheduler" = the first pass's). */
function chooseHiresAsk(b: A1111Body, warnings: string[]): HiresAsk | undefined {
  if (b.enable_hr !== true) return undefined;
  for (const f of ['hr_checkpoint_name', 'hr_prompt', 'hr_negative_prompt'] as const) {
    const v = b[f];
    if (present(v) && v !== 'Use same checkpoint') {
      warnings.push(`${f}: not applied; the second pass uses the first pass's ${f.replace('hr_', '').replace('_name', '')}`);
    }
  }
  const named = (v: string | undefined, same: string): string | undefined => (present(v) && v !== same ? v : undefined);
  return {
    names: HIRES_NAMES,
    ...defined({
      resizeX: b.hr_resize_x,
      resizeY: b.hr_resize_y,
      scale: b.hr_scale,
      upscaler: b.hr_upscaler,
      steps: b.hr_second_pass_steps,
      denoise: b.denoising_strength,
      sampler: named(b.hr_sampler_name, 'Use same sampler'),
      scheduler: named(b.hr_scheduler, 'Use same scheduler'),
    }),
  };
}
