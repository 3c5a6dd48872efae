/**
 * Render priority: the workflow's Temporal priority key, which its activities inherit. Among prompts waiting
 * in the shared GPU queue a lower key starts first, first-in-first-out within a key. No preemption: a running
 * prompt keeps its GPU. Each entry point reads it its own way (api/priority.ts for HTTP).
 */
export const MIN_PRIORITY = 1;
export const MAX_PRIORITY = 5;
export const DEFAULT_PRIORITY = 3;
