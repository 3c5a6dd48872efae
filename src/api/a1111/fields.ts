/** Small checks shared by the A1111 normalisation steps (normalize.ts, sampling.ts, size.ts). */
import { RequestError } from './errors.ts';

/** A string field that was given and is not blank. */
export const present = (s: string | undefined): s is string => s !== undefined && s.trim() !== '';

export function inRange(v: number, min: number, max: number, field: string): number {
  if (!(v >= min && v <= max)) throw new RequestError(400, field, `${field}: ${v} is out of range ${min}..${max}`, { min, max });
  return v;
}
