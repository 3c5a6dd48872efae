/** Submit a prompt once and follow it, re-attaching to the prompt an earlier attempt already submitted. */
import type { ComfyClient } from './client.ts';
import type { ComfyGraph } from './graph.ts';
import { ComfyAbortError, ComfyStallError } from './errors.ts';
import { followPrompt } from './follow.ts';
import type { FollowOptions, FollowResult } from './follow-types.ts';

export interface SubmitAndFollowOptions extends Omit<FollowOptions, 'session' | 'clientId'> {
  graph: ComfyGraph;
  /** Deterministic id (derivePromptId) so a retried attempt finds the prompt it already submitted. */
  promptId: string;
  extraData?: Record<string, unknown>;
  /**
   * The caller knows no request with this prompt id was ever sent (a new attempt's first submit: the id is
   * derived from the attempt): ComfyUI is not asked for it first. Default false: looked up, so that a retried
   * submit follows the prompt it finds instead of queueing it twice.
   */
  neverSubmitted?: boolean;
  /** Called once the prompt is known to ComfyUI (submitted now, or found from an earlier attempt). */
  onSubmitted?: (info: { promptId: string; reattached: boolean }) => void;
  /**
   * On abort or stall, best-effort cancel the prompt in ComfyUI (jobs cancel, else dequeue + targeted
   * interrupt) before rejecting, so the GPU is free for the next attempt. Default true.
   */
  cancelOnAbortOrStall?: boolean;
}

/**
 * Idempotent submit-and-follow: if ComfyUI already knows `promptId` (a retried attempt after a worker
 * crash), re-attach instead of submitting twice; otherwise open a socket, submit with its client id and
 * follow. The status check and the socket open run in parallel to keep the happy path short.
 */
export async function submitAndFollow(client: ComfyClient, opts: SubmitAndFollowOptions): Promise<FollowResult & { reattached: boolean }> {
  const { graph, extraData, onSubmitted, cancelOnAbortOrStall, neverSubmitted, ...follow } = opts;
  const call = opts.signal ? { signal: opts.signal } : {};
  const lookup = neverSubmitted ? Promise.resolve({ state: 'unknown' as const }) : client.promptStatus(opts.promptId, call);
  const [statusR, sessionR] = await Promise.allSettled([lookup, client.takeEventStream(call)]);
  const session = sessionR.status === 'fulfilled' ? sessionR.value : undefined;
  // Set before the POST goes out: an abort while it is in flight may still leave the prompt queued.
  let mayExist = false;
  try {
    if (statusR.status === 'rejected') throw statusR.reason;
    const reattached = statusR.value.state !== 'unknown';
    mayExist = true;
    if (!reattached) {
      const input: Parameters<ComfyClient['submitPrompt']>[0] = { graph, promptId: opts.promptId };
      if (session) input.clientId = session.clientId;
      if (extraData) input.extraData = extraData;
      await client.submitPrompt(input, call);
    }
    onSubmitted?.({ promptId: opts.promptId, reattached });
    const fo: FollowOptions = { ...follow };
    if (session) {
      fo.session = session;
      // A socket opened after an earlier attempt submitted does not own the prompt (any other clientId
      // says so): followPrompt then relies on status broadcasts and polls.
      if (reattached) fo.clientId = '';
    }
    return { ...(await followPrompt(client, fo)), reattached };
  } catch (e) {
    if (mayExist && (cancelOnAbortOrStall ?? true) && (e instanceof ComfyAbortError || e instanceof ComfyStallError)) {
      await client
        .cancelJob(opts.promptId, { timeoutMs: 5000 })
        .catch((ce: unknown) => opts.logger?.warn({ promptId: opts.promptId, err: ce }, 'cancel after abort/stall failed'));
    }
    throw e;
  } finally {
    await session?.close();
  }
}
