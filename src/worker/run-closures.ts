/**
 * Tells, as soon as this worker knows it, that a workflow run it completed is closed on the server, with the
 * run's result: a front in the same process then answers without waiting on Temporal's history long poll
 * (bench/README.md, issue 25, ninth pass). It also tells when that completion is sent, with the same result,
 * so the front can prepare its answer while the server records it (it sends it only once told the close).
 *
 * How the worker knows, from what passes between the SDK and Core (the native worker's completions and
 * activations):
 * - a workflow task completion with a CompleteWorkflowExecution command carries the run's result, encoded as
 *   the worker's data converter encodes it;
 * - Core reports it to the server and waits for the answer; then it evicts the run from its cache, with the
 *   reason WORKFLOW_EXECUTION_ENDING only when the server accepted the completion. A completion the server
 *   refused (a signal came in meanwhile: UnhandledCommand; the task is gone: NotFound; any other error) is
 *   evicted with that reason, and the run's next workflow task decides again
 *   (test/worker/run-closures.test.ts shows both on a real server).
 * So a result is told only at that eviction, and dropped at any other.
 *
 * The SDK has no hook for this: it reaches into the Worker's `nativeWorker` (the pinned version's
 * `lib/worker.js`), as workflow-stack-traces.ts does. Not found (an SDK upgrade changed it), nothing is told and
 * fronts wait on the long poll as before; the caller logs it.
 */
// @temporalio/proto is CommonJS: its namespace is only reachable through the default export under ESM.
import proto from '@temporalio/proto';
import type { Worker } from '@temporalio/worker';
import type { ClosedRun, PlainPayload, RunClosureListener } from '../contracts/closed-run.ts';

const { WorkflowActivation } = proto.coresdk.workflow_activation;
const { WorkflowActivationCompletion } = proto.coresdk.workflow_completion;
const WORKFLOW_EXECUTION_ENDING = proto.coresdk.workflow_activation.RemoveFromCache.EvictionReason.WORKFLOW_EXECUTION_ENDING;

/** The two calls of the SDK's native worker this watches (instance fields of its NativeWorker). */
interface NativeWorkflowCalls {
  pollWorkflowActivation: () => Promise<Buffer>;
  completeWorkflowActivation: (completion: Buffer) => Promise<void>;
}

/**
 * Runs whose closing completion is on its way to the server. An entry lives from that completion to the run's
 * eviction, which Core always sends next; the bound only guards against an SDK that stopped sending it.
 */
const MAX_CLOSING = 1_000;

/** Watches `worker`'s workflow tasks and tells `listener` of each run closing and closed as above; false when the SDK's shape was not found. */
export function watchRunClosures(worker: Worker, listener: RunClosureListener): boolean {
  const native = (worker as unknown as { nativeWorker?: Partial<NativeWorkflowCalls> }).nativeWorker;
  const poll = native?.pollWorkflowActivation;
  const complete = native?.completeWorkflowActivation;
  if (!native || typeof poll !== 'function' || typeof complete !== 'function') return false;
  const closing = new Map<string, PlainPayload>();
  native.completeWorkflowActivation = (completion) => {
    // Handed to Core first: the completion is not held up by telling it. Its eviction can only come from a later
    // poll's callback, after this returns.
    const sent = complete.call(native, completion);
    outOfTheWay(() => {
      const ending = closingResult(completion);
      if (!ending) return;
      if (closing.size >= MAX_CLOSING) closing.delete(closing.keys().next().value!);
      closing.set(ending.runId, ending.result);
      listener.closing?.(ending);
    });
    return sent;
  };
  native.pollWorkflowActivation = async () => {
    const activation = await poll.call(native);
    // Only an eviction can settle a run, and there is none to settle most of the time: no decoding then.
    if (closing.size > 0) outOfTheWay(() => settleEvictions(activation, closing, listener.closed));
    return activation;
  };
  return true;
}

/**
 * Runs `fn` so that nothing it fails at reaches the SDK: an error in a workflow task's completion or poll would
 * shut the worker down. What is not told here is answered by the front's long poll.
 */
function outOfTheWay(fn: () => void): void {
  try {
    fn();
  } catch {
    // Nothing told for this task.
  }
}

/** The run and its result when `completion` completes the workflow. */
function closingResult(completion: Buffer): ClosedRun | undefined {
  const decoded = WorkflowActivationCompletion.decodeDelimited(completion);
  const command = decoded.successful?.commands?.find((c) => c.completeWorkflowExecution)?.completeWorkflowExecution;
  // A workflow that returns nothing has no result payload: its front waits on the long poll, as any other.
  if (!command?.result || !decoded.runId) return undefined;
  return { runId: decoded.runId, result: plainPayload(command.result) };
}

function settleEvictions(activation: Buffer, closing: Map<string, PlainPayload>, onClosed: (run: ClosedRun) => void): void {
  const decoded = WorkflowActivation.decode(activation);
  const eviction = decoded.jobs.find((j) => j.removeFromCache)?.removeFromCache;
  const result = closing.get(decoded.runId);
  if (!eviction || !result) return;
  closing.delete(decoded.runId);
  if (eviction.reason === WORKFLOW_EXECUTION_ENDING) onClosed({ runId: decoded.runId, result });
}

/** Copies of the bytes: the decoded fields are views into the whole completion buffer, which a port would copy whole. */
function plainPayload(payload: proto.temporal.api.common.v1.IPayload): PlainPayload {
  const metadata: Record<string, Uint8Array> = {};
  for (const [k, v] of Object.entries(payload.metadata ?? {})) metadata[k] = Uint8Array.from(v);
  return { metadata, data: Uint8Array.from(payload.data ?? []) };
}
