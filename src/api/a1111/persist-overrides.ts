/**
 * `override_settings_restore_afterwards: false`: A1111 keeps the overrides as its settings afterwards. What is
 * kept goes through the very check `POST /sdapi/v1/options` applies (options-schema.ts): unknown keys are
 * dropped, a known key with a wrong value is a 422 naming `override_settings.<key>`. Without it, a request could
 * store megabytes of junk, or a `jpeg_quality` that every later render trips over.
 */
import { resolveModel } from '../../models/registry.ts';
import { RequestError } from './errors.ts';
import { checkOptions } from '../options-schema.ts';

/** The options patch to store, or undefined when the request keeps nothing. Throws before anything is stored. */
export function overridesToPersist(body: unknown): Record<string, unknown> | undefined {
  const b = body && typeof body === 'object' ? (body as Record<string, unknown>) : {};
  const restore = b.override_settings_restore_afterwards;
  if (restore !== false && restore !== 'false' && restore !== 0) return undefined;
  const o = b.override_settings;
  if (!o || typeof o !== 'object' || Array.isArray(o)) return undefined;
  const checked = checkOptions(o as Record<string, unknown>);
  const bad = checked.errors[0];
  if (bad) throw new RequestError(422, `override_settings.${bad.field}`, `override_settings.${bad.field}: ${bad.message}`);
  const patch: Record<string, unknown> = { ...checked.values };
  if (typeof patch.sd_model_checkpoint === 'string') {
    const profile = resolveModel(patch.sd_model_checkpoint);
    if (profile) patch.sd_model_checkpoint = profile.title;
    else delete patch.sd_model_checkpoint;
  }
  return Object.keys(patch).length > 0 ? patch : undefined;
}
