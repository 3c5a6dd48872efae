/**
 * Re-attach: where a prompt an earlier attempt of the same item submitted may still live, and whether it
 * does. Prompt ids derive from (workflow, run, item, attempt), so nothing needs recording.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Backend } from '../contracts/render.ts';
import type { ComfyClient } from '../comfyui/client.ts';
import { attemptPromptId, type RenderExecution } from './prompt-ids.ts';
import type { RunPromptInput } from '../contracts/activities.ts';
import { clientFor, type ActivityDeps } from './deps.ts';

/**
 * Prompts earlier attempts may have submitted, newest first, with the backend each is looked for on.
 * Re-derived rather than read from heartbeat details: each attempt is a new activity, so no details carry
 * over, and a crash before the first heartbeat is covered. The workflow names each earlier attempt's backend
 * when it learnt it ('' or missing: look on every backend).
 */
export function previousPrompts(exec: RenderExecution, input: RunPromptInput): Array<{ promptId: string; backendId?: string }> {
  const out: Array<{ promptId: string; backendId?: string }> = [];
  for (let a = input.attempt - 1; a >= 1; a--) {
    const promptId = attemptPromptId(exec, input.item, a);
    const backendId = input.previousBackends?.[a - 1];
    out.push(backendId ? { promptId, backendId } : { promptId });
  }
  return out;
}

/** `client_id` of a pending or running prompt, from `/queue` (undefined when finished or unknown). */
export async function queuedClientId(client: ComfyClient, promptId: string, signal: AbortSignal): Promise<string | undefined> {
  const q = await client.getQueue({ signal });
  return [...q.running, ...q.pending].find((e) => e.promptId === promptId)?.clientId;
}

/**
 * Resolves `true` once ComfyUI has the prompt neither pending nor running: the backend an ended attempt left it
 * on is free again. Unreachable, it is asked again: a ComfyUI that restarted answers with an empty queue.
 * Resolves `false` when `signal` aborts first (the wait is bounded by its caller).
 */
export async function promptLeftQueue(client: ComfyClient, promptId: string, pollMs: number, signal: AbortSignal): Promise<boolean> {
  while (!signal.aborted) {
    try {
      const q = await client.getQueue({ timeoutMs: 10_000 });
      if (![...q.running, ...q.pending].some((e) => e.promptId === promptId)) return true;
    } catch {
      // Not answering now: keep the backend busy until it says the prompt is gone.
    }
    await sleep(pollMs, undefined, { ref: false, signal }).catch(() => undefined);
  }
  return false;
}

/**
 * The newest earlier prompt ComfyUI still has pending, running or finished successfully, and where. The
 * leased backend is asked first; a backend that does not answer has lost nothing we could follow.
 */
export async function findLivePrompt(
  deps: ActivityDeps,
  leased: Backend,
  candidates: Array<{ promptId: string; backendId?: string }>,
  signal: AbortSignal,
): Promise<{ promptId: string; backend: Backend } | undefined> {
  for (const c of candidates) {
    const where = c.backendId !== undefined ? deps.backends.filter((b) => b.id === c.backendId) : [leased, ...deps.backends.filter((b) => b.id !== leased.id)];
    for (const backend of where) {
      // Given up on when its backend refused connections: the item moved; that copy is cancelled, not followed.
      if (deps.health.get(backend)?.abandonedPromptId === c.promptId) continue;
      let state: string;
      try {
        state = (await clientFor(deps, backend).promptStatus(c.promptId, { signal, ...(backend.id === leased.id ? {} : { timeoutMs: 3_000 }) })).state;
      } catch (err) {
        if (backend.id === leased.id) throw err;
        continue;
      }
      if (state === 'pending' || state === 'running' || state === 'success') return { promptId: c.promptId, backend };
    }
  }
  return undefined;
}
