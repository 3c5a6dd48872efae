/**
 * A1111's output settings: `samples_format` and its quality options, from `override_settings` or the
 * persisted options, and the overrides this service does not apply (named in warnings).
 */
import type { OutputFormat } from '../../contracts/render.ts';
import type { A1111Body } from './schema.ts';

/** A1111 option names the front applies from `override_settings` (and from `/sdapi/v1/options`). */
export const APPLIED_OVERRIDES = new Set(['sd_model_checkpoint', 'samples_format', 'jpeg_quality', 'webp_lossless']);
/** Overrides that change nothing for these models at their usual values, so they need no warning. */
const HARMLESS: Record<string, readonly unknown[]> = {
  CLIP_stop_at_last_layers: [1, '1'],
  sd_vae: ['Automatic', 'None', ''],
};

/** `samples_format` (png, jpg/jpeg, webp) with `jpeg_quality` and `webp_lossless`: override_settings win over options. */
export function chooseOutputFormat(b: A1111Body, options: Record<string, unknown>, warnings: string[]): OutputFormat | undefined {
  const o = b.override_settings ?? {};
  // Own keys only, and only primitives are read: an object value (`{"toString": 1}`) would throw on conversion.
  const pick = (k: string): string | number | boolean | undefined => {
    const v = Object.hasOwn(o, k) && o[k] !== undefined && o[k] !== null ? o[k] : Object.hasOwn(options, k) ? options[k] : undefined;
    return typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? v : undefined;
  };
  const raw = String(pick('samples_format') ?? 'png')
    .trim()
    .toLowerCase();
  const format = raw === 'jpg' || raw === 'jpeg' ? 'jpeg' : raw === 'webp' ? 'webp' : raw === 'png' ? 'png' : undefined;
  if (!format) {
    warnings.push(`samples_format: "${raw}" not supported (png, jpg, webp); answering PNG`);
    return undefined;
  }
  if (format === 'png') return undefined;
  const q = Number(pick('jpeg_quality') ?? 80);
  const quality = Number.isFinite(q) ? Math.min(100, Math.max(1, Math.round(q))) : 80;
  const lossless = pick('webp_lossless') === true || pick('webp_lossless') === 'true';
  return { format, quality, lossless };
}

export function overrideWarnings(b: A1111Body, options: Record<string, unknown>, warnings: string[]): void {
  for (const [k, v] of Object.entries(b.override_settings ?? {})) {
    if (APPLIED_OVERRIDES.has(k) || v === null || v === undefined) continue;
    if ((Object.hasOwn(HARMLESS, k) && HARMLESS[k]!.includes(v)) || (Object.hasOwn(options, k) && options[k] === v)) continue;
    warnings.push(`override_settings.${k}: not applied by this service`);
  }
}
