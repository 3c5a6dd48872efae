/**
 * Which kind of render a neutral request is, by the model's capabilities. Reference images make it an
 * instruction edit. On an instruction-edit model, which has no denoise-from-init img2img, an img2img's init
 * image is the edit source (reference conditioning, the prompt is the instruction) and a txt2img renders
 * text-to-image through the same model: what standard clients send works.
 */
import type { ImageKind, RenderKind } from '../contracts/render.ts';
import type { ImageSource } from '../images/image-set.ts';
import type { ModelProfile } from '../models/profile.ts';
import { listProfiles } from '../models/registry.ts';
import { RequestError } from '../errors/request-error.ts';
import { DEFAULT_DENOISE, type ResolveLimits } from './limits.ts';
import type { NeutralImageRequest, NeutralMask } from './neutral.ts';

export interface Routing {
  kind: ImageKind;
  init?: ImageSource;
  mask?: NeutralMask;
  refs: ImageSource[];
}

export function chooseRouting(r: NeutralImageRequest, profile: ModelProfile, limits: Pick<ResolveLimits, 'maxExtraImages'>, warnings: string[]): Routing {
  const { names } = r;
  const can = (k: RenderKind) => profile.kinds.includes(k);
  const editModels = () =>
    listProfiles()
      .filter((p) => p.kinds.includes('edit'))
      .map((p) => p.id)
      .join(', ');

  if (r.refs.length > 0 && !can('edit')) {
    throw new RequestError(
      400,
      names.refs,
      `${names.refs}: ${profile.id} cannot use reference images (it is not an instruction-edit model); edit models: ${editModels()}`,
    );
  }
  const init = r.route === 'img2img' ? r.init : undefined;
  const editFromInit = r.route === 'img2img' && !can('img2img') && can('edit');
  if (r.refs.length === 0 && !editFromInit) {
    const kind: ImageKind = r.route;
    if (!can(kind)) {
      throw new RequestError(
        400,
        names.refs,
        `${names.refs}: ${profile.id} is an instruction-edit model and needs the image(s) to edit in ${names.refs} (the prompt is the instruction); a plain ${r.route} is not supported on it`,
      );
    }
    const mask = r.route === 'img2img' ? r.mask : undefined;
    return { kind, ...(init ? { init } : {}), ...(mask ? { mask } : {}), refs: [] };
  }
  if (editFromInit) {
    warnings.push(`${names.init}: used as the edit source of ${profile.id} (reference conditioning; the prompt is the instruction)`);
    if (r.denoise !== undefined && r.denoise !== DEFAULT_DENOISE && r.denoise !== 1) {
      warnings.push(`${names.denoise}: ${r.denoise} not applied; ${profile.id} edits from a reference, not from a partly noised init image`);
    }
  }
  if (r.route === 'img2img' && r.mask) {
    throw new RequestError(400, names.mask, `${names.mask}: instruction edits take no mask (${profile.id} edits what the prompt says)`);
  }
  const refs = init ? [init, ...r.refs] : r.refs;
  const max = Math.min(profile.maxExtraImages, limits.maxExtraImages);
  if (refs.length > max) {
    throw new RequestError(
      400,
      names.refs,
      `${names.refs}: ${refs.length} reference images${init ? ` (counting ${init.field})` : ''} exceed the limit of ${max} for ${profile.id}`,
      { limit: max },
    );
  }
  return { kind: 'edit', refs };
}
