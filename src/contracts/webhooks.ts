/**
 * What crosses the Temporal boundary for a webhook: the target the submitter resolved (in the render's input),
 * the delivery the render hands its `webhook` child workflow, and each try's input and result. Plain data.
 * The signing secret never appears here: only the delivering activity reads it, from its own configuration.
 */

/** Event names like OpenAI's: `video.completed`, `video.failed`, `image.…`, `prompt.…`, `workflow.…`. */
export type WebhookEventFamily = 'video' | 'image' | 'prompt' | 'workflow';

/** How a delivery is retried: the submitter's configuration (WEBHOOK_*), recorded in the render's input. */
export interface WebhookLimits {
  /** Tries in all, the first included. */
  maxAttempts: number;
  /** Delay before the second try, doubled for each further one up to `backoffMaxMs`. */
  backoffInitialMs: number;
  backoffMaxMs: number;
  /** One try: resolve, connect, send and read the answer's status within this. */
  timeoutMs: number;
}

/** A render's webhook as the submitter resolved it (renders/webhook-target.ts): part of `BuiltRender`. */
export interface WebhookTarget {
  url: string;
  family: WebhookEventFamily;
  /** Where clients reach this service (PUBLIC_URL, or the request's own base): links in the event are absolute. */
  baseUrl?: string;
  /** Where the client fetches the result, relative to `baseUrl` (the video API: `/v1/videos/<id>/content`). */
  resultPath?: string;
  /** The protocol's own fields, merged into the event's `data` (e.g. its `id` for the work, a ComfyUI `prompt_id`). */
  data?: Record<string, string | number | boolean>;
  limits: WebhookLimits;
}

/** The `webhook` workflow's input, built by the render when it ends: the exact bytes every try sends. */
export interface WebhookDelivery {
  renderId: string;
  /** `webhook-id`: one per render run, the same on every try. */
  webhookId: string;
  url: string;
  /** The event type, e.g. `video.completed`. */
  type: string;
  /** The JSON body, serialised once so every try signs and sends the same bytes. */
  body: string;
  limits: WebhookLimits;
}

export interface DeliverWebhookInput {
  renderId: string;
  webhookId: string;
  url: string;
  body: string;
  /** 1-based try number, counted by the workflow. */
  attempt: number;
  timeoutMs: number;
}

/** A try the receiver answered 2xx. (Any other outcome is the activity's failure: WebhookFailureType.) */
export interface WebhookAttemptResult {
  status: number;
  /** The address connected to (after the allow-list check). */
  address: string;
  durationMs: number;
}

export const WebhookFailureType = {
  /** The receiver answered, but not 2xx (redirects are not followed). Retried. */
  Rejected: 'WebhookRejected',
  /** DNS, connect, TLS or timeout. Retried. */
  Unreachable: 'WebhookUnreachable',
  /** The URL or an address it resolves to is not allowed (WEBHOOK_ALLOWED_TARGETS): never retried. */
  Refused: 'WebhookRefused',
  /** This worker has no WEBHOOK_SECRET. Retried (a fixed deployment delivers). */
  NotConfigured: 'WebhookNotConfigured',
  /** The workflow's verdict: tries or time exhausted. */
  GaveUp: 'WebhookGaveUp',
} as const;

/** What the `webhook` workflow's status query and operators report. */
export interface WebhookStatus {
  state: 'delivering' | 'failing' | 'delivered' | 'gave-up';
  webhookId: string;
  url: string;
  type: string;
  attempts: number;
  maxAttempts: number;
  /** HTTP status of the last answer, when the receiver answered. */
  lastStatus?: number;
  /** The last failed try: its failure type and message. */
  lastError?: string;
  nextAttemptAt?: string;
  deliveredAt?: string;
}
