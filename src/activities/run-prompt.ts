/**
 * `runPrompt`: submit one graph to ComfyUI and follow it to completion, heartbeating progress.
 *
 * Idempotency: the prompt id is derived from (workflow, run, item, attempt). A retried attempt first looks
 * for the prompts earlier attempts submitted — from its heartbeat details and by re-deriving their ids, which
 * also covers a crash between submit and the first heartbeat — and re-attaches to one that is still pending,
 * running or finished, instead of rendering again. Only when none is alive does it submit a new prompt.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { ComfyAbortError } from '../comfyui/errors.ts';
import { followPrompt, submitAndFollow, type FollowProgress, type FollowResult } from '../comfyui/follow.ts';
import { derivePromptId } from '../comfyui/prompt-id.ts';
import { validateGraph } from '../comfyui/validate.ts';
import type { ComfyClient } from '../comfyui/client.ts';
import type { PromptRun } from '../render/types.ts';
import { toFailure } from './failures.ts';
import { ObjectInfoCache } from './object-info-cache.ts';
import type { PromptHeartbeat, RenderActivities, RunPromptInput } from './types.ts';
import { clientFor, type ActivityDeps } from './index.ts';
import { FailureType } from '../workflows/failure-types.ts';

export function createRunPrompt(deps: ActivityDeps): RenderActivities['runPrompt'] {
  const objectInfo = new ObjectInfoCache();

  return async (input: RunPromptInput): Promise<PromptRun> => {
    const ctx = Context.current();
    const { attempt } = ctx.info;
    const workflowExecution = ctx.info.workflowExecution ?? { workflowId: input.renderId, runId: '' };
    const client = clientFor(deps, input.backend);
    const log = deps.logger.child({ renderId: input.renderId, item: input.item, attempt });
    const signal = ctx.cancellationSignal;
    const startedAt = Date.now();

    let beat: PromptHeartbeat = { backend: input.backend.id, promptId: '', lastEventAt: startedAt };
    const onProgress = (p: FollowProgress): void => {
      beat = { backend: input.backend.id, promptId: p.promptId, lastEventAt: p.lastEventAt ?? p.lastActivityAt };
      if (p.node !== undefined) beat.node = p.node;
      if (p.value !== undefined) beat.value = p.value;
      if (p.max !== undefined) beat.max = p.max;
      ctx.heartbeat(beat);
    };
    // Silent stretches (a model loading) still need heartbeats, or Temporal would think the worker died.
    // The SDK throttles heartbeats, so a short interval costs nothing.
    const ticker = setInterval(() => ctx.heartbeat(beat), Math.max(1_000, Math.floor(ctx.info.heartbeatTimeoutMs ? ctx.info.heartbeatTimeoutMs / 3 : 10_000)));
    const follow = { signal, stallTimeoutMs: input.stallTimeoutMs, pollIntervalMs: deps.config.POLL_INTERVAL_MS, onProgress, logger: log };

    try {
      const previous = await findLivePrompt(client, previousPromptIds(ctx.info.heartbeatDetails, workflowExecution, input, attempt));
      let result: FollowResult;
      let promptId: string;
      if (previous) {
        promptId = previous;
        log.info({ promptId }, 're-attaching to the prompt an earlier attempt submitted');
        beat = { ...beat, promptId };
        ctx.heartbeat(beat);
        result = await followPrompt(client, { ...follow, promptId });
      } else {
        promptId = derivePromptId([workflowExecution.workflowId, workflowExecution.runId, input.item, attempt]);
        await validateBeforeSubmit(client, input, objectInfo);
        result = await submitAndFollow(client, {
          ...follow,
          graph: input.graph,
          promptId,
          extraData: { comfy_durable: { render_id: input.renderId, item: input.item, attempt } },
          onSubmitted: ({ reattached }) => {
            beat = { ...beat, promptId };
            ctx.heartbeat(beat);
            log.info({ promptId, reattached }, 'prompt submitted');
          },
        });
      }
      return {
        promptId,
        attempt,
        files: result.files.map(({ filename, subfolder, type }) => ({ filename, subfolder, type })),
        startedAt: result.startedAt ?? startedAt,
        finishedAt: result.finishedAt ?? Date.now(),
      };
    } catch (err) {
      if (err instanceof ComfyAbortError && signal.aborted) {
        // Cancelled by Temporal: submitAndFollow already interrupted the prompt; report the cancellation itself.
        throw signal.reason ?? err;
      }
      if (err instanceof Error && 'isOutOfMemory' in err && (err as { isOutOfMemory?: boolean }).isOutOfMemory) {
        // CUDA OOM: free VRAM and caches before the retry, or it fails the same way.
        await client.free({ unloadModels: true, freeMemory: true }).catch(() => undefined);
      }
      log.warn({ err: (err as Error).message }, 'runPrompt attempt failed');
      throw toFailure(err);
    } finally {
      clearInterval(ticker);
    }
  };
}

/** Ids earlier attempts of this activity may have submitted, newest first. */
function previousPromptIds(
  details: unknown,
  exec: { workflowId: string; runId: string },
  input: RunPromptInput,
  attempt: number,
): string[] {
  const ids: string[] = [];
  const hb = details as Partial<PromptHeartbeat> | undefined;
  if (hb && typeof hb.promptId === 'string' && hb.promptId !== '') ids.push(hb.promptId);
  for (let a = attempt - 1; a >= 1; a--) {
    const id = derivePromptId([exec.workflowId, exec.runId, input.item, a]);
    if (!ids.includes(id)) ids.push(id);
  }
  return ids;
}

/** The first candidate ComfyUI still has pending, running or finished successfully. */
async function findLivePrompt(client: ComfyClient, ids: string[]): Promise<string | undefined> {
  for (const id of ids) {
    const status = await client.promptStatus(id);
    if (status.state === 'pending' || status.state === 'running' || status.state === 'success') return id;
  }
  return undefined;
}

async function validateBeforeSubmit(client: ComfyClient, input: RunPromptInput, cache: ObjectInfoCache): Promise<void> {
  const info = await cache.get(input.backend.id, client);
  const v = validateGraph(input.graph, info);
  if (v.ok && Object.keys(v.nodeErrors).length === 0) return;
  cache.invalidate(input.backend.id);
  const lines = Object.entries(v.nodeErrors).flatMap(([id, ne]) =>
    ne.errors.map((e) => `node ${id} (${ne.class_type}): ${e.message}${e.details ? `: ${e.details}` : ''}`),
  );
  const head = v.ok ? 'graph has invalid outputs' : `${v.error.message}${v.error.details ? `: ${v.error.details}` : ''}`;
  throw ApplicationFailure.create({
    message: [`ComfyUI at ${input.backend.url} cannot run this graph: ${head}`, ...lines].join('\n'),
    type: FailureType.ComfyValidation,
    nonRetryable: true,
    details: [{ nodeErrors: v.nodeErrors, ...(v.ok ? {} : { error: v.error }) }],
  });
}
