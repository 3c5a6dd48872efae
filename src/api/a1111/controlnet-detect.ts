/**
 * The ControlNet extension's `POST /controlnet/detect` → a `preprocess` RenderRequest: each image through the
 * module's preprocessor in a ComfyUI graph (Canny, ImageInvert, or as it is), a durable render like any other.
 * Body fields as the extension names them (`controlnet_module`, `controlnet_input_images`, ...); webuiapi sends
 * the images as `controlnet_images` (the extension's older name), taken too.
 */
import { z } from 'zod';
import { decodeImageInput, type DecodedImage } from '../../images/decode.ts';
import { decodeImagesOffLoop } from '../../bytes/off-loop.ts';
import type { ControlPreprocessor, RenderRequest } from '../../contracts/render.ts';
import { requestErrorFromIssues } from '../../errors/request-error.ts';
import type { ResolveLimits } from '../../request/limits.ts';
import { RequestError, describeValue } from './errors.ts';
import { cannyThresholds, findPreprocessorNode, nodeUse, PREPROCESSOR_MODULES } from './controlnet.ts';
import type { PreprocessorNode } from '../../models/preprocessors.ts';
import type { PreprocessorNodeUse } from '../../contracts/render.ts';
import { laxBool, laxFloat, laxInt, laxStr } from './schema.ts';
import { imagesRenderBase } from './extras.ts';

const imageList = z.preprocess(
  (v) => (v === null ? undefined : v),
  z.array(z.string({ error: 'expected a base64 image' }), { error: 'expected a list of images' }).optional(),
);

export const detectBodySchema = z.object({
  controlnet_module: laxStr(),
  controlnet_input_images: imageList,
  /** webuiapi's name for the images (the extension's older one). */
  controlnet_images: imageList,
  controlnet_processor_res: laxInt(),
  controlnet_threshold_a: laxFloat(),
  controlnet_threshold_b: laxFloat(),
  controlnet_masks: imageList,
  low_vram: laxBool(),
});

export interface NormalizedDetect {
  request: RenderRequest;
  images: DecodedImage[];
  warnings: string[];
}

/** `live`: the preprocessor nodes the live ComfyUI has (src/models/preprocessors.ts), for modules beyond the core ones. */
type DetectContext = { defaultModel: string; limits: ResolveLimits; live?: readonly PreprocessorNode[] };

/** The body checked, then its images decoded on this thread (tests, tools). The service calls normalizeDetectOffLoop. */
export function normalizeDetect(body: unknown, ctx: DetectContext): NormalizedDetect {
  const plan = planDetect(body, ctx);
  return finishDetect(
    plan,
    plan.inputs.map((i) => decodeImageInput(i.value, i.field, ctx.limits)),
    ctx,
  );
}

/** normalizeDetect with the images decoded and checked in a byte worker (src/bytes/), off the event loop. */
export async function normalizeDetectOffLoop(body: unknown, ctx: DetectContext): Promise<NormalizedDetect> {
  const plan = planDetect(body, ctx);
  return finishDetect(plan, await decodeImagesOffLoop(plan.inputs, ctx.limits), ctx);
}

interface DetectPlan {
  preprocessor: ControlPreprocessor;
  node?: PreprocessorNodeUse;
  canny?: { low: number; high: number };
  inputs: Array<{ value: string; field: string }>;
  warnings: string[];
}

const MODULE_FIELD = 'controlnet_module';

/** Every check that needs no image bytes. */
function planDetect(body: unknown, ctx: DetectContext): DetectPlan {
  const parsed = detectBodySchema.safeParse(body ?? {});
  if (!parsed.success) throw requestErrorFromIssues(parsed.error.issues, { status: 422, value: body });
  const b = parsed.data;
  const chosen = chooseDetectModule(b.controlnet_module, ctx.live ?? []);
  const preprocessor = typeof chosen === 'string' ? chosen : 'node';
  const node = typeof chosen === 'string' ? undefined : nodeUse(chosen, b.controlnet_processor_res);
  const field = b.controlnet_input_images === undefined && b.controlnet_images !== undefined ? 'controlnet_images' : 'controlnet_input_images';
  const images = b.controlnet_input_images ?? b.controlnet_images ?? [];
  // The extension's wording: "No image selected".
  if (images.length === 0) throw new RequestError(422, field, `${field}: No image selected`);
  if (images.length > ctx.limits.maxBatch) {
    throw new RequestError(422, field, `${field}: ${images.length} images exceed the limit of ${ctx.limits.maxBatch} per request`, {
      limit: ctx.limits.maxBatch,
    });
  }
  const warnings: string[] = [];
  if ((b.controlnet_masks ?? []).length > 0) warnings.push(`controlnet_masks: module "${node?.module ?? preprocessor}" does not accept a mask; ignored`);
  if (preprocessor === 'canny' && b.controlnet_processor_res !== undefined && b.controlnet_processor_res > 0) {
    warnings.push("controlnet_processor_res: not applied; the preprocessor runs at the image's own size");
  }
  return {
    preprocessor,
    ...(node ? { node } : {}),
    ...(preprocessor === 'canny' ? { canny: cannyThresholds({ threshold_a: b.controlnet_threshold_a, threshold_b: b.controlnet_threshold_b }) } : {}),
    inputs: images.map((value, i) => ({ value, field: `${field}.${i}` })),
    warnings,
  };
}

function chooseDetectModule(asked: string | undefined, live: readonly PreprocessorNode[]): Exclude<ControlPreprocessor, 'node'> | PreprocessorNode {
  const m = (asked ?? 'none').trim().toLowerCase();
  if (m === '' || m === 'none') return 'none';
  if (m === 'canny') return 'canny';
  if (m === 'invert' || m === 'invert (from white bg & black line)') return 'invert';
  const node = m.startsWith('ip-adapter') ? undefined : findPreprocessorNode(m, live);
  if (node) return node;
  // The extension refuses its image-prompt modules here too ("Module not supported").
  const why = m.startsWith('ip-adapter') ? 'is an image-prompt module, which has no image to detect' : 'is not available';
  const available = [...PREPROCESSOR_MODULES, ...live.map((n) => n.module)];
  throw new RequestError(422, MODULE_FIELD, `${MODULE_FIELD}: module ${describeValue(asked)} ${why}; available modules: ${available.join(', ')}`, {
    available,
  });
}

/** The render: each image one item; the default model's profile only lends its time limits. */
function finishDetect(plan: DetectPlan, decoded: DecodedImage[], ctx: DetectContext): NormalizedDetect {
  const refs = decoded.map((d) => d.ref);
  const first = refs[0]!;
  const width = first.width ?? 0;
  const height = first.height ?? 0;
  const request: RenderRequest = {
    kind: 'preprocess',
    ...imagesRenderBase(ctx.defaultModel, refs, { width, height }),
    preprocess: { preprocessor: plan.preprocessor, ...(plan.node ? { node: plan.node } : {}), ...(plan.canny ? { canny: plan.canny } : {}) },
  };
  const unique = new Map(decoded.map((d) => [d.ref.sha256, d]));
  return { request, images: [...unique.values()], warnings: plan.warnings };
}
