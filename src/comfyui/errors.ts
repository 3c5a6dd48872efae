/**
 * Errors raised by the ComfyUI client. Each carries a stable `type` (used as the Temporal
 * ApplicationFailure type) and `retryable`, so activities classify failures without string matching.
 * Type strings match `src/contracts/failures.ts` where they overlap (ComfyValidation, ComfyExecution).
 */
import { inspect } from 'node:util';
import { executionHint, missingNodeExplanation, packageOfNode } from './plugins.ts';
import type { ComfyErrorBody, NodeErrors } from './schemas.ts';

export type ComfyErrorType =
  | 'ComfyValidation'
  | 'ComfyExecution'
  | 'ComfyOutOfMemory'
  | 'ComfyUnavailable'
  | 'ComfyRequest'
  | 'ComfyProtocol'
  | 'ComfyUnsupported'
  | 'ComfyStall'
  | 'ComfyInterrupted'
  | 'ComfyPromptLost'
  | 'ComfyAborted';

export abstract class ComfyError extends Error {
  abstract readonly type: ComfyErrorType;
  abstract readonly retryable: boolean;
  /** Plain-data view for ApplicationFailure details and logs (no stack, no circular refs). */
  details(): Record<string, unknown> {
    return { type: this.type, retryable: this.retryable, message: this.message };
  }
}

/**
 * ComfyUI rejected the graph: HTTP 400 from `POST /prompt`, or HTTP 200 with a non-empty `node_errors`
 * (ComfyUI then silently drops the invalid outputs and queues the rest). Never retryable: the
 * same graph fails the same way.
 */
export class ComfyValidationError extends ComfyError {
  readonly type = 'ComfyValidation' as const;
  readonly retryable = false;
  readonly status: number;
  /** ComfyUI's `error.type`, e.g. `prompt_outputs_failed_validation`, `invalid_prompt_id`. */
  readonly errorType: string;
  readonly error: ComfyErrorBody;
  readonly nodeErrors: NodeErrors;
  /** Set when ComfyUI queued a partial prompt despite the errors (HTTP 200 case). */
  readonly queuedPromptId: string | undefined;

  constructor(init: { status: number; error: ComfyErrorBody; nodeErrors: NodeErrors; queuedPromptId?: string }) {
    super(formatValidationMessage(init.error, init.nodeErrors));
    this.name = 'ComfyValidationError';
    this.status = init.status;
    this.errorType = init.error.type;
    this.error = init.error;
    this.nodeErrors = init.nodeErrors;
    this.queuedPromptId = init.queuedPromptId;
  }

  override details(): Record<string, unknown> {
    const pkg = this.errorType === 'missing_node_type' ? packageOfNode(missingClass(this.error)) : undefined;
    return { ...super.details(), status: this.status, errorType: this.errorType, nodeErrors: this.nodeErrors, ...(pkg ? { customNodes: pkg.name } : {}) };
  }

  /** True when a LoadImage-style node reports a missing input file: the caller may re-upload and retry once. */
  get missingInputFile(): boolean {
    for (const node of Object.values(this.nodeErrors)) {
      for (const e of node.errors) {
        if (e.type === 'custom_validation_failed' && /Invalid image file/i.test(`${e.message} ${e.details}`)) return true;
      }
    }
    return false;
  }
}

/** Whether `err` (or an error it wraps: `cause`, AggregateError `errors`) is a refused TCP connection. */
export function isConnectionRefused(err: unknown, depth = 0): boolean {
  if (!err || typeof err !== 'object' || depth > 5) return false;
  const e = err as { code?: unknown; cause?: unknown; errors?: unknown };
  if (e.code === 'ECONNREFUSED') return true;
  if (e.cause !== undefined && isConnectionRefused(e.cause, depth + 1)) return true;
  return Array.isArray(e.errors) && e.errors.some((x) => isConnectionRefused(x, depth + 1));
}

/** Connection faults, timeouts, 5xx, and any status ComfyUI should not answer for a well-formed call. */
export class ComfyUnavailableError extends ComfyError {
  readonly type = 'ComfyUnavailable' as const;
  readonly retryable = true;
  readonly status: number | undefined;
  readonly url: string;
  readonly body: string | undefined;

  /**
   * Set when ComfyUI refused every connection for this long: nothing listens on its port, so its process is
   * gone, and its in-memory queue with it (unlike a timeout, where it may still be rendering out of reach).
   */
  readonly refusedForMs: number | undefined;

  constructor(init: { url: string; status?: number; body?: string; message?: string; cause?: unknown; refusedForMs?: number }) {
    super(
      init.message ??
        (init.status !== undefined
          ? `ComfyUI answered HTTP ${init.status} for ${init.url}${init.body ? `: ${truncate(init.body, 300)}` : ''}`
          : `ComfyUI unreachable at ${init.url}`),
      init.cause !== undefined ? { cause: init.cause } : undefined,
    );
    this.name = 'ComfyUnavailableError';
    this.status = init.status;
    this.url = init.url;
    this.body = init.body;
    this.refusedForMs = init.refusedForMs;
  }

  /** The connection was refused (ECONNREFUSED): the OS says nothing listens there. */
  get refused(): boolean {
    return isConnectionRefused(this.cause);
  }

  override details(): Record<string, unknown> {
    return { ...super.details(), status: this.status, url: this.url, ...(this.refusedForMs !== undefined ? { refusedForMs: this.refusedForMs } : {}) };
  }
}

/** A 4xx for a call other than prompt validation (bad upload path, missing file on `/view`). */
export class ComfyRequestError extends ComfyError {
  readonly type = 'ComfyRequest' as const;
  readonly retryable = false;
  readonly status: number;
  readonly url: string;
  readonly body: string | undefined;

  constructor(init: { url: string; status: number; body?: string }) {
    super(`ComfyUI rejected ${init.url} with HTTP ${init.status}${init.body ? `: ${truncate(init.body, 300)}` : ''}`);
    this.name = 'ComfyRequestError';
    this.status = init.status;
    this.url = init.url;
    this.body = init.body;
  }

  override details(): Record<string, unknown> {
    return { ...super.details(), status: this.status, url: this.url };
  }
}

/**
 * A response did not match the documented shape. Retryable: a proxy in front of ComfyUI can answer with an
 * HTML page while it swaps engines; attempts are bounded anyway.
 */
export class ComfyProtocolError extends ComfyError {
  readonly type = 'ComfyProtocol' as const;
  readonly retryable = true;
  readonly url: string;
  constructor(url: string, problem: string) {
    super(`unexpected response from ComfyUI ${url}: ${problem}`);
    this.name = 'ComfyProtocolError';
    this.url = url;
  }
}

/** The ComfyUI version lacks a route this call needs (e.g. the jobs API before v0.6.0). */
export class ComfyUnsupportedError extends ComfyError {
  readonly type = 'ComfyUnsupported' as const;
  readonly retryable = false;
  constructor(feature: string) {
    super(`this ComfyUI does not support ${feature}`);
    this.name = 'ComfyUnsupportedError';
  }
}

/** Data of ComfyUI's `execution_error` (WebSocket event or history message), normalised. */
export interface ExecutionErrorInfo {
  promptId: string;
  nodeId: string | undefined;
  nodeType: string | undefined;
  /** Full module-qualified class name, e.g. `torch.OutOfMemoryError`. */
  exceptionType: string;
  exceptionMessage: string;
  traceback: string[];
  executed: string[];
  isOutOfMemory: boolean;
  timestamp: number | undefined;
}

/**
 * OOM per `comfy.model_management.is_oom`: the exception type string depends on the torch version
 * (`torch.OutOfMemoryError`, `torch.cuda.OutOfMemoryError`, an AcceleratorError "out of memory"), so we
 * also recognise ComfyUI's own OOM tip appended to the message.
 */
export function isOutOfMemory(exceptionType: string, exceptionMessage: string): boolean {
  if (/OutOfMemory/i.test(exceptionType)) return true;
  if (/ran out of memory on your GPU/i.test(exceptionMessage)) return true;
  return /\bout of memory\b/i.test(exceptionMessage) && /(Accelerator|Runtime|Cuda|torch)/i.test(exceptionType);
}

/**
 * A node raised while executing. Out-of-memory is retryable (after `/free`); any other node
 * exception is deterministic for the same graph and is not.
 */
export class ComfyExecutionError extends ComfyError {
  readonly type: 'ComfyExecution' | 'ComfyOutOfMemory';
  readonly retryable: boolean;
  readonly info: ExecutionErrorInfo;
  /** What to change, for a known failure of a registered custom-node package's node (plugins.ts). */
  readonly hint: string | undefined;

  constructor(info: ExecutionErrorInfo) {
    const firstLine = info.exceptionMessage.split('\n')[0] ?? '';
    const hint = executionHint(info.nodeType, info.exceptionMessage);
    super(`ComfyUI node ${info.nodeId ?? '?'} (${info.nodeType ?? 'unknown type'}) failed: ${info.exceptionType}: ${firstLine}${hint ? `\n${hint}` : ''}`);
    this.name = 'ComfyExecutionError';
    this.info = info;
    this.hint = hint;
    this.type = info.isOutOfMemory ? 'ComfyOutOfMemory' : 'ComfyExecution';
    this.retryable = info.isOutOfMemory;
  }

  get promptId(): string {
    return this.info.promptId;
  }
  get nodeId(): string | undefined {
    return this.info.nodeId;
  }
  get nodeType(): string | undefined {
    return this.info.nodeType;
  }
  get exceptionType(): string {
    return this.info.exceptionType;
  }
  get exceptionMessage(): string {
    return this.info.exceptionMessage;
  }
  get isOutOfMemory(): boolean {
    return this.info.isOutOfMemory;
  }

  override details(): Record<string, unknown> {
    const { traceback: _traceback, ...rest } = this.info;
    return { ...super.details(), ...rest, ...(this.hint ? { hint: this.hint } : {}) };
  }
}

/**
 * The prompt was interrupted. Retryable: our own cancellations surface as ComfyAbortError (the signal fires
 * first), so an interrupt we see here came from someone else, e.g. another client's global `/interrupt`
 * and re-running is the right answer.
 */
export class ComfyInterruptedError extends ComfyError {
  readonly type = 'ComfyInterrupted' as const;
  readonly retryable = true;
  readonly promptId: string;
  readonly nodeId: string | undefined;
  constructor(promptId: string, nodeId?: string) {
    super(`ComfyUI prompt ${promptId} was interrupted${nodeId ? ` at node ${nodeId}` : ''}`);
    this.name = 'ComfyInterruptedError';
    this.promptId = promptId;
    this.nodeId = nodeId;
  }
}

/** No event for the prompt and no queue movement for `stallTimeoutMs`: ComfyUI has no watchdog. */
export class ComfyStallError extends ComfyError {
  readonly type = 'ComfyStall' as const;
  readonly retryable = true;
  readonly promptId: string;
  readonly silentForMs: number;
  readonly lastEventAt: number | undefined;
  readonly state: 'pending' | 'running' | 'unreachable';

  constructor(init: { promptId: string; silentForMs: number; lastEventAt?: number; state: 'pending' | 'running' | 'unreachable' }) {
    super(`ComfyUI prompt ${init.promptId} stalled (${init.state}): no progress for ${Math.round(init.silentForMs)} ms`);
    this.name = 'ComfyStallError';
    this.promptId = init.promptId;
    this.silentForMs = init.silentForMs;
    this.lastEventAt = init.lastEventAt;
    this.state = init.state;
  }

  override details(): Record<string, unknown> {
    return { ...super.details(), promptId: this.promptId, silentForMs: this.silentForMs, lastEventAt: this.lastEventAt, state: this.state };
  }
}

/** ComfyUI does not know the prompt anywhere (jobs, history, queue): it restarted and lost it (its queue and history live in memory). */
export class ComfyPromptLostError extends ComfyError {
  readonly type = 'ComfyPromptLost' as const;
  readonly retryable = true;
  readonly promptId: string;
  constructor(promptId: string) {
    super(`ComfyUI does not know prompt ${promptId} (restarted or never received it)`);
    this.name = 'ComfyPromptLostError';
    this.promptId = promptId;
  }
}

/** Following was cancelled through an AbortSignal. `name` is `AbortError` like DOM aborts. */
export class ComfyAbortError extends ComfyError {
  readonly type = 'ComfyAborted' as const;
  readonly retryable = false;
  constructor(reason?: unknown) {
    super(
      reason instanceof Error
        ? `aborted: ${reason.message}`
        : reason !== undefined
          ? `aborted: ${typeof reason === 'string' ? reason : inspect(reason)}`
          : 'aborted',
      reason !== undefined ? { cause: reason } : undefined,
    );
    this.name = 'AbortError';
  }
}

export function isComfyError(e: unknown): e is ComfyError {
  return e instanceof ComfyError;
}

/**
 * One line per failing input, naming node id, class_type, input and ComfyUI's message, e.g.
 * `node 3 (KSampler) input "steps": Value bigger than max: 10000 > 1000`.
 */
export function formatNodeErrors(nodeErrors: NodeErrors): string[] {
  const lines: string[] = [];
  for (const [nodeId, node] of Object.entries(nodeErrors)) {
    for (const e of node.errors) {
      const input = typeof e.extra_info?.['input_name'] === 'string' ? ` input "${e.extra_info['input_name']}"` : '';
      const detail = e.details && e.details !== e.message ? `: ${e.details}` : '';
      lines.push(`node ${nodeId} (${node.class_type ?? 'unknown'})${input}: ${e.message}${detail}`);
    }
  }
  return lines;
}

/** `extra_info.class_type` of a `missing_node_type` answer. */
function missingClass(error: ComfyErrorBody): string | undefined {
  const cls = error.extra_info?.['class_type'];
  return typeof cls === 'string' ? cls : undefined;
}

function formatValidationMessage(error: ComfyErrorBody, nodeErrors: NodeErrors): string {
  const head = `ComfyUI rejected the prompt (${error.type}): ${error.message}`;
  // A node of a known custom-node package: name the package and the likely cause, not ComfyUI's dump.
  const why = error.type === 'missing_node_type' ? missingNodeExplanation(missingClass(error)) : undefined;
  if (why) return `${head} (${missingClass(error)}: ${why})`;
  const lines = formatNodeErrors(nodeErrors);
  if (lines.length > 0) return `${head}\n${lines.join('\n')}`;
  return error.details && error.details !== error.message ? `${head}: ${error.details}` : head;
}

function truncate(s: string, n: number): string {
  return s.length > n ? `${s.slice(0, n)}…` : s;
}
