/**
 * What `POST /sdapi/v1/options` may store: the A1111 options clients actually set, each with its type. A1111
 * itself ignores keys it does not know (`opts.set` returns False), and so do we: unknown keys are neither
 * stored nor echoed, so the store stays a few hundred bytes however much a client posts (the red team stored
 * 20 MB of junk keys that could never be removed). A known key with a wrong value is a 422 naming it.
 */
import { z } from 'zod';

const name = z.string({ error: 'expected a string' }).max(256, { error: 'must be at most 256 characters' });

export const KNOWN_OPTIONS = {
  /** The current model (a profile title, id or alias; stored as the title). */
  sd_model_checkpoint: name,
  sd_vae: name,
  /** CLIP skip; rendered models ignore it, clients read it back. */
  CLIP_stop_at_last_layers: z.number({ error: 'expected an integer' }).int({ error: 'expected an integer' }).min(1).max(12),
  samples_format: z.enum(['png', 'jpg', 'jpeg', 'webp'], { error: 'expected png, jpg, jpeg or webp' }),
  /** JPEG and WebP quality of answered images (A1111's option; 1-100). */
  jpeg_quality: z
    .number({ error: 'expected an integer from 1 to 100' })
    .int({ error: 'expected an integer from 1 to 100' })
    .min(1, { error: 'expected an integer from 1 to 100' })
    .max(100, { error: 'expected an integer from 1 to 100' }),
  webp_lossless: z.boolean({ error: 'expected a boolean' }),
  send_seed: z.boolean({ error: 'expected a boolean' }),
  eta_noise_seed_delta: z
    .number({ error: 'expected an integer' })
    .int({ error: 'expected an integer' })
    .min(0)
    .max(2 ** 32),
} as const;

export type OptionKey = keyof typeof KNOWN_OPTIONS;

export interface CheckedOptions {
  /** Known keys with valid values. */
  values: Partial<Record<OptionKey, unknown>>;
  /** Keys that were not stored because A1111 options we do not keep. */
  ignored: string[];
  /** Known keys whose value is wrong: field and message. */
  errors: { field: string; message: string }[];
}

export function checkOptions(patch: Record<string, unknown>): CheckedOptions {
  const out: CheckedOptions = { values: {}, ignored: [], errors: [] };
  for (const [key, value] of Object.entries(patch)) {
    if (!Object.hasOwn(KNOWN_OPTIONS, key)) {
      out.ignored.push(key);
      continue;
    }
    // Read-only echoes a client sends back with the whole dict (A1111 sends null for unset ones).
    if (value === null) continue;
    const r = KNOWN_OPTIONS[key as OptionKey].safeParse(value);
    if (r.success) out.values[key as OptionKey] = r.data;
    else out.errors.push({ field: key, message: r.error.issues[0]?.message ?? 'invalid value' });
  }
  return out;
}

/** Stored options as read back from disk: only known keys with valid values survive (older files may hold junk). */
export function knownOptionsOnly(stored: Record<string, unknown>): Record<string, unknown> {
  return checkOptions(stored).values;
}
