/**
 * `deliverWebhook`: one try of a render's event, on the webhook task queue (never a GPU slot). Signs the body
 * the workflow built with this worker's WEBHOOK_SECRET and a fresh timestamp (receivers refuse old ones), the
 * same `webhook-id` as every other try, and posts it (webhooks/post.ts: allow-list, pinned address, no
 * redirects, one deadline). A 2xx is the result; anything else fails this try with a type the workflow reads:
 * WebhookRejected (answered, with the status), WebhookUnreachable, WebhookRefused (never retried).
 */
import { ApplicationFailure } from '@temporalio/activity';
import type { WebhookActivities } from '../contracts/activities.ts';
import type { ActivityDeps } from './deps.ts';
import { postWebhook, WebhookRefusedError, type PostRequest } from '../webhooks/post.ts';
import { parseSecret, signedHeaders } from '../webhooks/signature.ts';
import { WebhookFailureType, type DeliverWebhookInput, type WebhookAttemptResult } from '../contracts/webhooks.ts';

/** Test seam: the resolver the tries use. */
export interface DeliverWebhookOptions {
  resolve?: PostRequest['resolve'];
  now?: () => number;
}

export function createDeliverWebhook(deps: Pick<ActivityDeps, 'config' | 'logger'>, opts: DeliverWebhookOptions = {}): WebhookActivities['deliverWebhook'] {
  const keys = deps.config.WEBHOOK_SECRET.map(parseSecret);
  const now = opts.now ?? Date.now;
  return async (input: DeliverWebhookInput): Promise<WebhookAttemptResult> => {
    const log = deps.logger.child({ renderId: input.renderId, webhookId: input.webhookId, attempt: input.attempt });
    if (keys.length === 0) {
      throw ApplicationFailure.create({ type: WebhookFailureType.NotConfigured, message: 'this worker has no WEBHOOK_SECRET to sign the webhook with' });
    }
    const headers = signedHeaders(keys, input.webhookId, Math.floor(now() / 1000), input.body);
    let answer;
    try {
      answer = await postWebhook({
        url: input.url,
        headers: { ...headers },
        body: input.body,
        timeoutMs: input.timeoutMs,
        allow: deps.config.WEBHOOK_ALLOWED_TARGETS,
        ...(opts.resolve ? { resolve: opts.resolve } : {}),
      });
    } catch (err) {
      const refused = err instanceof WebhookRefusedError;
      log.warn({ err: (err as Error).message }, refused ? 'webhook refused by the allow-list' : 'webhook receiver unreachable');
      throw ApplicationFailure.create({
        type: refused ? WebhookFailureType.Refused : WebhookFailureType.Unreachable,
        message: (err as Error).message,
        nonRetryable: refused,
      });
    }
    if (answer.status < 200 || answer.status > 299) {
      log.warn({ status: answer.status, address: answer.address }, 'webhook receiver did not accept the event');
      throw ApplicationFailure.create({
        type: WebhookFailureType.Rejected,
        message: `${input.url} answered ${answer.status}${answer.status >= 300 && answer.status < 400 ? ' (redirects are not followed)' : ''}`,
        details: [{ status: answer.status, address: answer.address, response: answer.excerpt.slice(0, 500) }],
      });
    }
    log.info({ status: answer.status, address: answer.address, ms: answer.durationMs }, 'webhook delivered');
    return { status: answer.status, address: answer.address, durationMs: answer.durationMs };
  };
}
