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
