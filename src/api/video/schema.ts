/**
 * The request fields of the vLLM-Omni video API (`POST /v1/videos`, `/v1/videos/sync`), docs/video-api.md.
 * The same schema reads JSON bodies (numbers are numbers) and form bodies (multipart or urlencoded: every
 * value is a string), so numeric fields accept numeric strings. Unknown fields are ignored, as vLLM-Omni's
 * pydantic model does.
 */
import { z } from 'zod';
import { MAX_PROMPT_CHARS } from '../../request/limits.ts';

/** A number, or a form field holding one. */
const num = z.preprocess(
  (v) => (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v)) ? Number(v) : v),
  z.number({ error: 'must be a number' }),
);
const int = z.preprocess(
  (v) => (typeof v === 'string' && /^\s*-?\d+\s*$/.test(v) ? Number(v) : v),
  z.number({ error: 'must be an integer' }).int({ error: 'must be an integer' }),
);
const text = (max = MAX_PROMPT_CHARS) => z.string({ error: 'must be a string' }).max(max, { error: `must be at most ${max} characters` });

/** An image given inline: raw base64, a data URL, or the newer OpenAI SDK's `{image_url}` object. */
export const inlineImageSchema = z.union([
  z.string(),
  z.object({ image_url: z.string({ error: 'image_url must be a string' }) }).transform((o) => o.image_url),
]);

/**
 * `extra_params` (a JSON object, or its JSON text in a form): task and keyframe roles, shifts, duration. The
 * task names are the model's (its family declares them): the normaliser checks them against the model.
 */
export const extraParamsSchema = z.looseObject({
  task: text(64).optional(),
  /** Seconds (H3: 4-15 in vLLM-Omni's recipe); `seconds` and `num_frames` take precedence. */
  duration: num.optional(),
  audio_flow_shift: num.optional(),
  /** Where each `fl2va` image goes: 0 = first frame, -1 = last frame; `[0]`, `[-1]` or `[0, -1]`. */
  frame_indices: z.array(int, { error: 'must be a list of frame indices' }).optional(),
});
export type ExtraParams = z.infer<typeof extraParamsSchema>;

export const videoFieldsSchema = z.looseObject({
  model: text(256).optional(),
  prompt: text().optional(),
  negative_prompt: text().optional(),
  seed: int.optional(),
  size: text(32).optional(),
  width: int.optional(),
  height: int.optional(),
  /** OpenAI sends a string (`"4"`); vLLM-Omni clients may send a number. */
  seconds: num.optional(),
  num_frames: int.optional(),
  fps: num.optional(),
  num_inference_steps: int.optional(),
  guidance_scale: num.optional(),
  flow_shift: num.optional(),
  input_reference: inlineImageSchema.optional(),
  input_references: z.array(inlineImageSchema).optional(),
  extra_params: z.union([z.string(), z.record(z.string(), z.unknown())]).optional(),
  user: z.string().optional(),
  /** Render priority 1 (most urgent) .. 5, as X-Priority (read by api/priority.ts). */
  priority: z.unknown().optional(),
  /**
   * Where to POST the signed `video.completed` / `video.failed` event (docs/webhooks.md); must be allowed by
   * WEBHOOK_ALLOWED_TARGETS. Absent on POST /v1/videos: WEBHOOK_URL, when configured.
   */
  webhook_url: text(2048).optional(),
});
export type VideoFields = z.infer<typeof videoFieldsSchema>;
