/**
 * Render priority: the workflow's Temporal priority key, which its activities inherit. Among prompts waiting
 * in the shared GPU queue a lower key starts first; within a key clients take turns (the render's client is
 * its fairness key: Temporal dispatches keys round-robin, equal weights), first-in-first-out within a client.
 * No preemption: a running prompt keeps its GPU. Each entry point reads it its own way (api/priority.ts for HTTP).
 */
import type { Priority } from '@temporalio/common';

export const MIN_PRIORITY = 1;
export const MAX_PRIORITY = 5;
export const DEFAULT_PRIORITY = 3;

/** Temporal limits a fairness key to 64 bytes; a longer client name is cut there (keys share a prefix rarely). */
const MAX_FAIRNESS_KEY_BYTES = 64;

/** The `priority` of a render's start options: its key (when given) and its client as the fairness key. */
export function renderPriority(priorityKey: number | undefined, client: string | undefined): { priority?: Priority } {
  const fairnessKey =
    client === undefined
      ? undefined
      : Buffer.from(client)
          .subarray(0, MAX_FAIRNESS_KEY_BYTES)
          .toString('utf8')
          .replace(/\uFFFD$/, '');
  if (priorityKey === undefined && !fairnessKey) return {};
  return { priority: { ...(priorityKey !== undefined ? { priorityKey } : {}), ...(fairnessKey ? { fairnessKey } : {}) } };
}
