/**
 * How many prompt attempts an item gets and how they are spaced: shared by the workflow (which paces the
 * attempts) and buildGraph (which records the limits in history), and checked against the profile defaults
 * by the fault suite (a hung prompt must be retried well before ten minutes).
 */

/** Attempts per output item: a stall, a lost prompt, an OOM and one more chance. */
export const MAX_PROMPT_ATTEMPTS = 4;

/** Delay before attempt `attempt + 1`: 1 s, 2 s, 4 s, ... capped at 30 s. */
export function attemptBackoffMs(attempt: number): number {
  return Math.min(30_000, 1_000 * 2 ** (attempt - 1));
}
