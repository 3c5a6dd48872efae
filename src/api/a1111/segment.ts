/**
 * The A1111 extensions' background-removal and segmentation bodies → `segment` RenderRequests:
 * - stable-diffusion-webui-rembg's `POST /rembg` (scripts/api.py): `input_image`, `model`, `return_mask`,
 *   `alpha_matting*`. rembg's model names (u2net, isnet-*, birefnet-*, ...) all run the background-removal model
 *   ComfyUI has (src/models/segmentation.ts), said in the warnings; alpha matting is not applied (warned).
 * - sd-webui-segment-anything's `POST /sam/sam-predict` (scripts/api.py `SamPredictRequest`): the text prompt
 *   (`dino_enabled` + `dino_text_prompt`, `dino_box_threshold`) runs SAM3, which finds what a text names itself
 *   (no GroundingDINO); point prompts are refused without a text and not applied with one.
 * Field names and defaults are the extensions'; every problem is a 422 naming the client's field.
 */
import { z } from 'zod';
import { decodeImageInput, type DecodedImage } from '../../images/decode.ts';
import { decodeImagesOffLoop } from '../../bytes/off-loop.ts';
import { requestErrorFromIssues } from '../../errors/request-error.ts';
import type { ResolveLimits } from '../../request/limits.ts';
import { fileStem } from '../../request/upscalers.ts';
import { SEGMENTATION_FILES } from '../../models/segmentation.ts';
import type { RenderRequest, SegmentSpec } from '../../contracts/render.ts';
import { RequestError, describeValue } from './errors.ts';
import { imagesRenderBase } from './extras.ts';
import { laxBool, laxFloat, laxInt, laxStr } from './schema.ts';

/** rembg's session names (rembg 2.0.x `sessions`), which clients send as `model`. */
export const REMBG_MODELS = [
  'u2net',
  'u2netp',
  'u2net_human_seg',
  'u2net_cloth_seg',
  'silueta',
  'isnet-general-use',
  'isnet-anime',
  'sam',
  'birefnet-general',
  'birefnet-general-lite',
  'birefnet-portrait',
  'birefnet-dis',
  'birefnet-hrsod',
  'birefnet-cod',
  'birefnet-massive',
  'bria-rmbg',
] as const;

export const rembgBodySchema = z.object({
  input_image: laxStr(),
  model: laxStr(),
  return_mask: laxBool(),
  alpha_matting: laxBool(),
  alpha_matting_foreground_threshold: laxInt(),
  alpha_matting_background_threshold: laxInt(),
  alpha_matting_erode_size: laxInt(),
});

const points = z.preprocess(
  (v) => (v === null ? undefined : v),
  z.array(z.array(z.number(), { error: 'expected [x, y]' }), { error: 'expected a list of [x, y] points' }).optional(),
);

export const samPredictBodySchema = z.object({
  sam_model_name: laxStr(),
  input_image: laxStr(),
  sam_positive_points: points,
  sam_negative_points: points,
  dino_enabled: laxBool(),
  dino_model_name: laxStr(),
  dino_text_prompt: laxStr(),
  dino_box_threshold: laxFloat(),
  dino_preview_checkbox: laxBool(),
  dino_preview_boxes_selection: z.unknown().optional(),
});

export interface NormalizedSegment {
  request: RenderRequest;
  images: DecodedImage[];
  warnings: string[];
  /** The field a missing model file is reported on (the client's name of the model). */
  modelField: string;
}

/** What needs no segmentation: the extension answers 200 with this and runs nothing. */
export interface NothingToDo {
  nothing: true;
  /** The extension's message (sam-predict), or undefined (rembg answers `null`). */
  msg?: string;
}

type SegmentContext = { defaultModel: string; limits: ResolveLimits };

interface SegmentPlan {
  spec: SegmentSpec;
  input: { value: string; field: string };
  warnings: string[];
  modelField: string;
}

function parse<T extends z.ZodType>(schema: T, body: unknown): z.output<T> {
  const parsed = schema.safeParse(body ?? {});
  if (!parsed.success) throw requestErrorFromIssues(parsed.error.issues, { status: 422, value: body });
  return parsed.data;
}

function requireImage(value: string | undefined, field: string): { value: string; field: string } {
  if (value === undefined || value.trim() === '') throw new RequestError(422, field, `${field}: an image is required, got ${describeValue(value)}`);
  return { value, field };
}

/** `POST /rembg`: the cut-out (RGBA), or with `return_mask` the mask (white = foreground). */
export function planRembg(body: unknown): SegmentPlan | NothingToDo {
  const b = parse(rembgBodySchema, body);
  const asked = b.model ?? 'u2net';
  // The extension returns nothing for "None" or an empty model.
  if (asked.trim() === '' || asked === 'None') return { nothing: true };
  const file = SEGMENTATION_FILES.backgroundRemoval;
  const known = [...REMBG_MODELS, fileStem(file), file];
  if (!known.includes(asked.trim())) {
    throw new RequestError(422, 'model', `model: ${describeValue(asked)} is not a background-removal model; available: ${known.join(', ')}`, {
      available: known,
    });
  }
  const warnings: string[] = [];
  if (asked.trim() !== file && asked.trim() !== fileStem(file))
    warnings.push(`model: "${asked.trim()}" runs as ${file}, the background-removal model ComfyUI has`);
  if (b.alpha_matting === true) warnings.push("alpha_matting: not applied; the mask is the model's own");
  return {
    spec: { method: { kind: 'remove-background', model: file }, outputs: [b.return_mask === true ? 'mask' : 'cutout'] },
    input: requireImage(b.input_image, 'input_image'),
    warnings,
    modelField: 'model',
  };
}

/** The extension's message when neither points nor a text prompt were sent. */
export const NO_PROMPT_MSG = 'You neither added point prompts nor enabled GroundingDINO. Segmentation cannot be generated.';

const DEFAULT_BOX_THRESHOLD = 0.3;

/** `POST /sam/sam-predict`: blended image, mask and masked image of what `dino_text_prompt` names. */
export function planSamPredict(body: unknown): SegmentPlan | NothingToDo {
  const b = parse(samPredictBodySchema, body);
  const input = requireImage(b.input_image, 'input_image');
  const text = b.dino_enabled === true ? b.dino_text_prompt?.trim() : undefined;
  const pointCount = (b.sam_positive_points?.length ?? 0) + (b.sam_negative_points?.length ?? 0);
  if (!text) {
    if (pointCount === 0) return { nothing: true, msg: NO_PROMPT_MSG };
    const field = (b.sam_positive_points?.length ?? 0) > 0 ? 'sam_positive_points' : 'sam_negative_points';
    throw new RequestError(
      422,
      field,
      `${field}: point prompts are not supported here; send dino_enabled: true with a dino_text_prompt (SAM3 finds what the text names)`,
    );
  }
  const threshold = b.dino_box_threshold ?? DEFAULT_BOX_THRESHOLD;
  if (!(threshold >= 0 && threshold <= 1)) throw new RequestError(422, 'dino_box_threshold', `dino_box_threshold: ${threshold} is out of range 0..1`);
  const file = SEGMENTATION_FILES.sam3;
  const warnings: string[] = [];
  if (b.sam_model_name !== undefined && b.sam_model_name !== file) warnings.push(`sam_model_name: "${b.sam_model_name}" runs as ${file} (SAM3)`);
  if (pointCount > 0) warnings.push('sam_positive_points/sam_negative_points: not applied with a text prompt');
  if (b.dino_preview_checkbox === true) warnings.push('dino_preview_boxes_selection: not applied; every object found is in the mask');
  return {
    spec: { method: { kind: 'text', checkpoint: file, text, threshold }, outputs: ['blended', 'mask', 'cutout'] },
    input,
    warnings,
    modelField: 'sam_model_name',
  };
}

/** The plan with its image decoded on this thread (tests, tools). */
export function finishSegmentSync(plan: SegmentPlan, ctx: SegmentContext): NormalizedSegment {
  return finishSegment(plan, decodeImageInput(plan.input.value, plan.input.field, ctx.limits), ctx);
}

/** The plan with its image decoded and checked in a byte worker (src/bytes/), off the event loop. */
export async function finishSegmentOffLoop(plan: SegmentPlan, ctx: SegmentContext): Promise<NormalizedSegment> {
  const [decoded] = await decodeImagesOffLoop([plan.input], ctx.limits);
  return finishSegment(plan, decoded!, ctx);
}

/** One image; one item per output. The default model's profile only lends its time limits. */
function finishSegment(plan: SegmentPlan, decoded: DecodedImage, ctx: SegmentContext): NormalizedSegment {
  const { ref } = decoded;
  const size = { width: ref.width ?? 0, height: ref.height ?? 0 };
  const request: RenderRequest = {
    kind: 'segment',
    ...imagesRenderBase(ctx.defaultModel, [ref], size),
    batchSize: plan.spec.outputs.length,
    segment: plan.spec,
  };
  return { request, images: [decoded], warnings: plan.warnings, modelField: plan.modelField };
}

export const isNothing = (p: SegmentPlan | NothingToDo): p is NothingToDo => 'nothing' in p;
export type { SegmentPlan };
