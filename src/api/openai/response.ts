/**
 * The OpenAI images answer: `{created, data: [{b64_json | url, revised_prompt?, seed}], output_format, size}`,
 * plus `warnings` when something was accepted but not applied, or an image is partial (interrupted) or blank
 * (a black one: NaNs in the VAE), as the A1111 routes say in `info.warnings`. `revised_prompt` appears only when the
 * prompt rendered differs from the one sent (LoRA tags are taken out of it); `seed` (not OpenAI's, ignored by
 * its SDKs) is the seed each image rendered with, so a client can render it again.
 */
import { trimTrailingSlashes } from '../../text/trim.ts';
import type { FastifyRequest } from 'fastify';
import { outcomeWarnings } from '../../contracts/outcome.ts';
import { expectImageRender, type RenderResult } from '../../contracts/render.ts';

export interface OpenAiImage {
  b64_json?: string;
  url?: string;
  revised_prompt?: string;
  seed: number;
}

export interface OpenAiImagesResponse {
  created: number;
  data: OpenAiImage[];
  output_format: string;
  size: string;
  render_id: string;
  warnings?: string[];
}

const FORMAT_BY_MIME: Record<string, string> = { 'image/png': 'png', 'image/jpeg': 'jpeg', 'image/webp': 'webp' };

export function imagesResponse(opts: {
  result: RenderResult;
  renderId: string;
  sentPrompt: string;
  images: { b64?: string[]; baseUrl?: string };
  warnings: string[];
  now?: number;
}): OpenAiImagesResponse {
  const { result, renderId } = opts;
  // What was adjusted in the request, then what happened to the images (partial after an interrupt, black).
  const warnings = [...opts.warnings, ...outcomeWarnings(result.request, result)];
  const { prompt } = expectImageRender(result.request);
  const revised = prompt !== opts.sentPrompt ? prompt : undefined;
  const data = result.outputs.map((o, i): OpenAiImage => {
    const seed = result.seeds[i] ?? result.request.seed + i;
    const image: OpenAiImage = opts.images.b64
      ? { b64_json: opts.images.b64[i]!, seed }
      : { url: `${opts.images.baseUrl}/renders/${encodeURIComponent(renderId)}/outputs/${i}`, seed };
    if (revised !== undefined) image.revised_prompt = revised;
    return image;
  });
  return {
    created: Math.floor((opts.now ?? Date.now()) / 1000),
    data,
    output_format: FORMAT_BY_MIME[result.outputs[0]?.mime ?? 'image/png'] ?? 'png',
    size: `${result.request.width}x${result.request.height}`,
    render_id: renderId,
    ...(warnings.length > 0 ? { warnings } : {}),
  };
}

const first = (v: string | string[] | undefined): string | undefined => {
  const s = (Array.isArray(v) ? v[0] : v)?.split(',')[0]?.trim();
  return s ? s : undefined;
};
const SAFE_HOST = /^[A-Za-z0-9.\-:[\]]{1,300}$/;
const SAFE_PREFIX = /^\/[A-Za-z0-9._~\-/%]{0,500}$/;

/**
 * Where a client reaches this service, for `url` answers: PUBLIC_URL when configured (the only way behind a
 * proxy that strips a path prefix without saying so, such as llama-swap's `/upstream/<model>`), else, only
 * with TRUST_FORWARDED_HEADERS, what a reverse proxy says in X-Forwarded-Proto / -Host / -Prefix, else the
 * request's own Host. Forwarded headers are not believed by default: a page or a proxy in between could point
 * a client's links (and the key it sends with them) at another host.
 */
export function publicBaseUrl(req: FastifyRequest, configured: string | undefined, trustForwarded = false): string {
  if (configured) return trimTrailingSlashes(configured);
  const forwarded = (name: string): string | undefined => (trustForwarded ? first(req.headers[name]) : undefined);
  const proto = forwarded('x-forwarded-proto');
  const host = forwarded('x-forwarded-host') ?? first(req.headers.host) ?? '127.0.0.1';
  const prefix = forwarded('x-forwarded-prefix');
  const scheme = proto === 'https' || proto === 'http' ? proto : 'http';
  const safeHost = SAFE_HOST.test(host) ? host : '127.0.0.1';
  const safePrefix = prefix && SAFE_PREFIX.test(prefix) ? trimTrailingSlashes(prefix) : '';
  return `${scheme}://${safeHost}${safePrefix}`;
}
