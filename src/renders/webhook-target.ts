/**
 * A submission's webhook → the target the render's input records (contracts/webhooks.ts WebhookTarget), or a 400
 * naming the client's field. The neutral seam every protocol uses: it says where the client put the URL, whether
 * the work is async (then the configured WEBHOOK_URL applies when the client named none), the event family, and
 * its own fields for the event. The URL is checked here against the allow-list (no open relay), and again by the
 * delivering worker, which also checks the addresses it resolves to right before connecting.
 */
import type { Config } from '../config/config.ts';
import { RequestError } from '../errors/request-error.ts';
import { trimTrailingSlashes } from '../text/trim.ts';
import { checkTargetUrl } from '../webhooks/allow-list.ts';
import type { WebhookEventFamily, WebhookTarget } from '../contracts/webhooks.ts';

/** What a protocol asks for (Submission.webhook). */
export interface WebhookOption {
  /** The URL the client gave with this request; absent or empty: the configured default when `async`. */
  url?: string;
  /** The client's field that carries the URL, as a 400 names it: `webhook_url`, `extra_data.webhook`, … */
  field: string;
  /** Work the client does not wait on: WEBHOOK_URL applies when the request names no URL. */
  async: boolean;
  /** `video` → `video.completed` / `video.failed`; likewise `image`, `prompt`, `workflow`. */
  event: WebhookEventFamily;
  /** Where this client reaches the service, for absolute links in the event; default PUBLIC_URL (else paths only). */
  baseUrl?: string;
  /** The protocol's own fields for the event's `data` (its id of the work, say), given the render id. */
  data?: (renderId: string) => Record<string, string | number | boolean>;
  /** Where the client fetches the result, relative to the base URL, given the render id. */
  resultPath?: (renderId: string) => string;
}

export type WebhookConfig = Pick<
  Config,
  | 'WEBHOOK_URL'
  | 'WEBHOOK_ALLOWED_TARGETS'
  | 'WEBHOOK_SECRET'
  | 'WEBHOOK_TIMEOUT_MS'
  | 'WEBHOOK_MAX_ATTEMPTS'
  | 'WEBHOOK_RETRY_INITIAL_MS'
  | 'WEBHOOK_RETRY_MAX_MS'
  | 'PUBLIC_URL'
>;

const MAX_URL_CHARS = 2_048;

export function resolveWebhookTarget(option: WebhookOption | undefined, config: WebhookConfig, renderId: string): WebhookTarget | undefined {
  if (!option) return undefined;
  const given = option.url?.trim() ? option.url.trim() : undefined;
  const url = given ?? (option.async ? config.WEBHOOK_URL : undefined);
  if (!url) return undefined;
  if (given) {
    const field = option.field;
    if (given.length > MAX_URL_CHARS) throw new RequestError(400, field, `${field}: a webhook URL has at most ${MAX_URL_CHARS} characters`);
    if (config.WEBHOOK_SECRET.length === 0) throw new RequestError(400, field, `${field}: webhooks are not enabled on this server (no WEBHOOK_SECRET)`);
    const verdict = checkTargetUrl(given, config.WEBHOOK_ALLOWED_TARGETS);
    if (!verdict.ok) throw new RequestError(400, field, `${field}: ${verdict.reason}`);
  }
  const baseUrl = option.baseUrl ?? config.PUBLIC_URL;
  return {
    url,
    family: option.event,
    ...(baseUrl ? { baseUrl: trimTrailingSlashes(baseUrl) } : {}),
    ...(option.resultPath ? { resultPath: option.resultPath(renderId) } : {}),
    ...(option.data ? { data: option.data(renderId) } : {}),
    limits: {
      maxAttempts: config.WEBHOOK_MAX_ATTEMPTS,
      backoffInitialMs: config.WEBHOOK_RETRY_INITIAL_MS,
      backoffMaxMs: config.WEBHOOK_RETRY_MAX_MS,
      timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    },
  };
}
