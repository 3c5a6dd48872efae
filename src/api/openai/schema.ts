/**
 * zod schemas of the OpenAI image requests (`/v1/images/generations` JSON, `/v1/images/edits` form fields)
 * plus the extensions image users need (`seed`, `negative_prompt`, `steps`, `guidance`, `cfg_scale`,
 * `strength`, `sampler`, `scheduler`). Lenient the way OpenAI's own SDK callers need: `null` and (in forms)
 * empty strings are absent, numbers may arrive as strings (multipart fields are text), and fields OpenAI has
 * that this service does not apply are accepted and reported in `warnings`. Unknown fields are kept for the
 * same report, never refused: SDKs add fields faster than servers learn them.
 */
import { z } from 'zod';
import { parseNumericString } from '../../request/lax-number.ts';

/** Same cap as the A1111 prompt: copied into every item's graph and into workflow history. */
export const MAX_OPENAI_PROMPT_CHARS = 16 * 1024;

const absent = (v: unknown): unknown => (v === null || v === '' ? undefined : v);

const laxInt = () =>
  z.preprocess(
    (v) => {
      const a = absent(v);
      return typeof a === 'string' ? (parseNumericString(a, 'int') ?? a) : a;
    },
    z.number({ error: 'expected an integer' }).refine(Number.isInteger, { error: 'expected an integer' }).optional(),
  );

const laxFloat = () =>
  z.preprocess(
    (v) => {
      const a = absent(v);
      return typeof a === 'string' ? (parseNumericString(a, 'float') ?? a) : a;
    },
    z.number({ error: 'expected a number' }).optional(),
  );

const laxBool = () =>
  z.preprocess(
    (v) => {
      const a = absent(v);
      if (a === 'true' || a === '1') return true;
      if (a === 'false' || a === '0') return false;
      return a;
    },
    z.boolean({ error: 'expected a boolean' }).optional(),
  );

const str = (max = 256) =>
  z.preprocess(
    absent,
    z
      .string({ error: 'expected a string' })
      .max(max, { error: `must be at most ${max} characters` })
      .optional(),
  );

const fields = {
  model: str(),
  prompt: z.preprocess(
    (v) => (v === null ? undefined : v),
    z
      .string({ error: 'required: a text description of the image' })
      .max(MAX_OPENAI_PROMPT_CHARS, { error: `must be at most ${MAX_OPENAI_PROMPT_CHARS} characters` })
      .refine((s) => s.trim() !== '', { error: 'required: a text description of the image' }),
  ),
  n: laxInt(),
  /** `WIDTHxHEIGHT` or `auto`. */
  size: str(32),
  response_format: z.preprocess(absent, z.enum(['b64_json', 'url'], { error: 'must be b64_json or url' }).optional()),
  output_format: str(16),
  output_compression: laxInt(),
  stream: laxBool(),
  // Extensions (not in OpenAI's API; the OpenAI SDKs send them through `extra_body`).
  seed: laxInt(),
  negative_prompt: z.preprocess(absent, z.string({ error: 'expected a string' }).max(MAX_OPENAI_PROMPT_CHARS).optional()),
  steps: laxInt(),
  /** The model's guidance knob: Flux's distilled guidance where the model has one, else the CFG scale. */
  guidance: laxFloat(),
  cfg_scale: laxFloat(),
  sampler: str(),
  scheduler: str(),
  priority: z.unknown().optional(),
};

/** `POST /v1/images/generations` (JSON). */
export const imageGenerationSchema = z.looseObject(fields);

/** `POST /v1/images/edits`: the form's text fields (the files are `image`, `image[]` and `mask`). */
export const imageEditFieldsSchema = z.looseObject({
  ...fields,
  /** img2img denoising strength, 0..1 (default 0.75; 1 with a mask: the masked area is redrawn). */
  strength: laxFloat(),
});

export type ImageGenerationBody = z.output<typeof imageGenerationSchema>;
export type ImageEditFields = z.output<typeof imageEditFieldsSchema>;

/** Fields of OpenAI's API this service accepts without applying them; `auto`-like values need no word. */
export const ACCEPTED_NOT_APPLIED: Readonly<Record<string, readonly unknown[]>> = {
  quality: ['auto', 'standard'],
  style: [],
  background: ['auto', 'opaque'],
  moderation: ['auto'],
  partial_images: [0, '0'],
  input_fidelity: [],
  complexity: [],
  frame_count: [],
  frame_duration_ms: [],
  svg: [],
  markup: [],
};

/** They identify the end user to OpenAI's abuse monitoring: nothing to apply, nothing to say. */
export const SILENTLY_ACCEPTED = new Set(['user', 'safety_identifier']);

/** The fields the schemas know (everything else is reported as unknown). */
export const KNOWN_FIELDS = new Set([...Object.keys(fields), 'strength', 'image', 'image[]', 'images', 'mask']);

/** The message of the first issue, naming the field, and the field. */
export function firstIssue(error: z.ZodError): { field: string; message: string } {
  const issue = error.issues[0];
  const field = issue?.path.map(String).join('.') || 'body';
  return { field, message: `${field}: ${issue?.message ?? 'invalid'}` };
}
