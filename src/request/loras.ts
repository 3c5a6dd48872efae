/**
 * `<lora:name:weight>` prompt tags (A1111's extra-network syntax, which every protocol's prompt may carry),
 * resolved against ComfyUI's LoRA files. Bad tags throw a RequestError naming the prompt field.
 */
import type { LoraUse } from '../contracts/render.ts';
import { RequestError, describeValue } from '../errors/request-error.ts';
import { tidyPromptCommas } from '../text/trim.ts';
import { fileStem, matchFile, type CatalogLists } from './upscalers.ts';

export interface LoraTag {
  name: string;
  te: number;
  unet: number;
}

const LORA_TAG = /<lora:([^>]*)>/gi;
/** Other extra-network tags A1111 knows; they have no ComfyUI meaning here and are stripped with a warning. */
const OTHER_TAG = /<(hypernet|lyco):([^>]*)>/gi;

/**
 * `<lora:name>`, `<lora:name:w>` (both weights), `<lora:name:te:unet>` and named `te=`/`unet=` arguments, as
 * A1111's extra networks parse them. The tags are removed from the prompt (the text encoder never sees them).
 */
export function parseLoraTags(prompt: string, field: string, warnings: string[]): { prompt: string; tags: LoraTag[] } {
  const tags: LoraTag[] = [];
  let text = prompt.replace(LORA_TAG, (_m, body: string) => {
    const parts = body.split(':').map((p) => p.trim());
    const name = parts.shift() ?? '';
    const positional: number[] = [];
    const named: Record<string, number> = {};
    for (const p of parts) {
      const eq = p.indexOf('=');
      const v = Number(eq >= 0 ? p.slice(eq + 1) : p);
      if (p === '' || !Number.isFinite(v)) {
        throw new RequestError(400, field, `${field}: LoRA tag <lora:${body}> has a weight that is not a number (${describeValue(p)})`);
      }
      if (eq >= 0) named[p.slice(0, eq).trim().toLowerCase()] = v;
      else positional.push(v);
    }
    const te = named.te ?? positional[0] ?? 1;
    const unet = named.unet ?? positional[1] ?? te;
    if (name !== '') tags.push({ name, te, unet });
    return '';
  });
  text = text.replace(OTHER_TAG, (m) => {
    warnings.push(`${field}: ${m} removed; only LoRA extra networks are supported`);
    return '';
  });
  return { prompt: tags.length > 0 || text !== prompt ? tidyPromptCommas(text.replace(/[ \t]{2,}/g, ' ')) : prompt, tags };
}

export function resolveLoras(tags: LoraTag[], field: string, lists: CatalogLists): LoraUse[] {
  if (tags.length === 0) return [];
  const files = lists.loras;
  if (!files) throw new RequestError(503, field, `${field}: LoRA tags need the LoRA list from ComfyUI, which did not answer; try again`);
  return tags.map((t) => {
    const file = matchFile(files, t.name);
    if (!file) {
      const known = files.map(fileStem);
      throw new RequestError(400, field, `${field}: unknown LoRA "${t.name}"; ComfyUI has: ${known.length > 0 ? known.join(', ') : '(no LoRA files)'}`, {
        known,
      });
    }
    return { file, name: t.name, model: t.unet, clip: t.te };
  });
}
