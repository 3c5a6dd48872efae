/**
 * The way back from the neutral request to the client's own words. Each protocol maps its fields into the
 * neutral request once and, beside them, names the field each came from (`batchSize` is `batch_size` for an
 * A1111 client and `n` for an OpenAI one); every check that refuses or adjusts a value names the client's
 * field through this map, where it throws: nothing renames messages afterwards.
 */
import { RequestError } from '../errors/request-error.ts';

/** The neutral request's fields that a check may name. */
export type NeutralField =
  | 'model'
  | 'prompt'
  | 'negativePrompt'
  | 'seed'
  | 'steps'
  | 'cfg'
  | 'guidance'
  | 'sampler'
  | 'scheduler'
  | 'width'
  | 'height'
  | 'batchSize'
  | 'nIter'
  | 'denoise'
  | 'init'
  | 'mask'
  | 'refs';

/** The client's name (a dot path, e.g. `override_settings.sd_model_checkpoint`) for every neutral field. */
export type FieldNames = Readonly<Record<NeutralField, string>>;

/** A string field that was given and is not blank. */
export const present = (s: string | undefined): s is string => s !== undefined && s.trim() !== '';

export function inRange(v: number, min: number, max: number, field: string): number {
  if (!(v >= min && v <= max)) throw new RequestError(400, field, `${field}: ${v} is out of range ${min}..${max}`, { min, max });
  return v;
}

/** `width/height`, or one name when both sides come from one client field (OpenAI's `size`). */
export function sizeFieldLabel(fields: { width: string; height: string }): string {
  return fields.width === fields.height ? fields.width : `${fields.width}/${fields.height}`;
}
