/**
 * Failure types that no retry can fix. Shared by activities (which throw them) and the workflow (which
 * lists them as non-retryable), so the two can never drift apart.
 */
export const FailureType = {
  /** ComfyUI rejected the graph (`node_errors`, also on HTTP 200): node, input and message in details. */
  ComfyValidation: 'ComfyValidation',
  /** A node raised during execution (not out-of-memory). */
  ComfyExecution: 'ComfyExecution',
  /** The request cannot be rendered as resolved (unknown model, missing blob). */
  InvalidRender: 'InvalidRender',
  NoOutputs: 'NoOutputs',
} as const;

export const NON_RETRYABLE_TYPES: string[] = Object.values(FailureType);

/** Failure types that a later attempt may fix; named here so the workflow and the front agree. */
export const RetryableFailureType = {
  /** No event and no queue movement for the stall timeout (the prompt was interrupted, see details.stop). */
  ComfyStall: 'ComfyStall',
  /** The backend is marked unhealthy: a stalled prompt survived interrupt and /free. Retried after a delay. */
  BackendUnhealthy: 'ComfyBackendUnhealthy',
  /** ComfyUI restarted and lost the prompt. */
  ComfyPromptLost: 'ComfyPromptLost',
  ComfyOutOfMemory: 'ComfyOutOfMemory',
  ComfyUnavailable: 'ComfyUnavailable',
} as const;

/** The workflow gave up on an item: attempts or the item's deadline exhausted (details list every attempt). */
export const GaveUpFailureType = 'RenderAttemptsExhausted';

/**
 * An attempt that waited in a worker for a free ComfyUI and was handed back before it got one (the worker
 * stopped, or its backends turned unhealthy): no prompt was sent, so the workflow does not count it.
 */
export const NotDispatchedFailureType = 'NotDispatched';
