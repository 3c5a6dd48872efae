/**
 * The `webhook` workflow: delivers one render's event, started by the render as an abandoned child when it
 * ends (so the render's result, the GPU lease and admission never wait for a receiver). Each try is its own
 * `deliverWebhook` activity on the webhook task queue (src/contracts/task-queues.ts), so history shows every try with its answer;
 * tries are paced here by durable timers (exponential back-off, survives restarts of any process), with the
 * same `webhook-id` and body on every one, until a 2xx, a refused target, or the limits run out.
 *
 * Not a render: listings, admission and the lease select `WorkflowType = 'render'`. Operators see it through
 * its render (operators/webhook.ts) or in the Temporal UI as the render's child.
 */
import { ApplicationFailure, proxyActivities, setHandler, sleep, workflowInfo } from '@temporalio/workflow';
import type { WebhookActivities } from '../contracts/activities.ts';
import { WebhookFailureType, type WebhookAttemptResult, type WebhookDelivery, type WebhookStatus } from '../contracts/webhooks.ts';
import { attemptBackoffMs } from '../contracts/attempts.ts';
import { describeFailure } from './failure-summary.ts';
import { webhookTaskQueue } from '../contracts/task-queues.ts';
import { webhookStatusQuery, type WebhookResult, type WebhookWorkflow } from '../contracts/workflows.ts';

/** Time a try may take beyond its own HTTP timeout (DNS, a slow worker) before Temporal counts it as failed. */
const ATTEMPT_MARGIN_MS = 10_000;

export async function webhook(d: WebhookDelivery): Promise<WebhookResult> {
  const status: WebhookStatus = { state: 'delivering', webhookId: d.webhookId, url: d.url, type: d.type, attempts: 0, maxAttempts: d.limits.maxAttempts };
  setHandler(webhookStatusQuery, () => status);
  const { deliverWebhook } = proxyActivities<WebhookActivities>({
    taskQueue: webhookTaskQueue(workflowInfo().taskQueue),
    startToCloseTimeout: d.limits.timeoutMs + ATTEMPT_MARGIN_MS,
    retry: { maximumAttempts: 1 },
  });
  for (let attempt = 1; ; attempt++) {
    status.attempts = attempt;
    delete status.nextAttemptAt;
    let ok: WebhookAttemptResult;
    try {
      ok = await deliverWebhook({ renderId: d.renderId, webhookId: d.webhookId, url: d.url, body: d.body, attempt, timeoutMs: d.limits.timeoutMs });
    } catch (err) {
      const f = describeFailure(err);
      status.state = 'failing';
      status.lastError = `${f.type}: ${f.message}`;
      const answered = statusOf(err);
      if (answered !== undefined) status.lastStatus = answered;
      else delete status.lastStatus;
      if (f.type === WebhookFailureType.Refused || attempt >= d.limits.maxAttempts) {
        status.state = 'gave-up';
        throw ApplicationFailure.create({
          type: WebhookFailureType.GaveUp,
          message: `webhook ${d.webhookId} to ${d.url} not delivered after ${attempt} ${attempt === 1 ? 'try' : 'tries'}; last: ${status.lastError}`,
          nonRetryable: true,
          details: [{ ...status }],
        });
      }
      const delay = attemptBackoffMs(attempt, d.limits.backoffInitialMs, d.limits.backoffMaxMs);
      status.nextAttemptAt = new Date(Date.now() + delay).toISOString();
      await sleep(delay);
      continue;
    }
    status.state = 'delivered';
    status.lastStatus = ok.status;
    delete status.lastError;
    status.deliveredAt = new Date(Date.now()).toISOString();
    return { webhookId: d.webhookId, attempts: attempt, status: ok.status, deliveredAt: status.deliveredAt };
  }
}

/** Held to the signature the front starts it by (src/contracts/workflows.ts): a change to either fails the type check. */
const _webhookHeldToItsContract: WebhookWorkflow = webhook;

/** The HTTP status a failed try got, from its failure's details (WebhookRejected carries it). */
function statusOf(err: unknown): number | undefined {
  for (let e: unknown = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof ApplicationFailure) {
      const s = (e.details?.[0] as { status?: unknown } | undefined)?.status;
      if (typeof s === 'number') return s;
    }
  }
  return undefined;
}
