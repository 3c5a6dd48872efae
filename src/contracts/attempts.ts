/**
 * How many prompt attempts an item gets and how they are spaced: the defaults the submitter records in the
 * render's limits (renders/build-render.ts), which the workflow then follows, and which the fault suite
 * checks against the profile defaults (a hung prompt must be retried well before ten minutes). Tests of the
 * workflow pass shorter limits.
 */

/** Attempts per output item: a stall, a lost prompt, an OOM and one more chance. */
export const MAX_PROMPT_ATTEMPTS = 4;

/** Delay before the second attempt; doubled for each further one, up to the maximum. */
export const ATTEMPT_BACKOFF_INITIAL_MS = 1_000;
export const ATTEMPT_BACKOFF_MAX_MS = 30_000;

/** An attempt needs at least this much of the item's deadline left to be worth starting. */
export const MIN_ATTEMPT_MS = 1_000;

/** Delay before attempt `attempt + 1`: 1 s, 2 s, 4 s, ... capped at 30 s (by default). */
export function attemptBackoffMs(attempt: number, initialMs = ATTEMPT_BACKOFF_INITIAL_MS, maxMs = ATTEMPT_BACKOFF_MAX_MS): number {
  return Math.min(maxMs, initialMs * 2 ** (attempt - 1));
}
