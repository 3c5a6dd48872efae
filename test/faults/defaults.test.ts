/**
 * Fault suite, the default settings (no process needed): with nothing configured, a hung prompt is
 * interrupted and its retry starts well before the ten minutes after which the old shim's clients gave up,
 * yet no profile's stall timeout is shorter than a silent 20 GB model load from a slow disk. The numbers
 * come from the code the service runs (profiles, config defaults, escalation grace, attempt backoff), so
 * changing a default that breaks either promise fails here.
 */
import { describe, expect } from 'vitest';
import { stopGraceMs } from '../../src/activities/run-prompt.ts';
import { loadConfig } from '../../src/config/config.ts';
import { listProfiles } from '../../src/models/registry.ts';
import { attemptBackoffMs, MAX_PROMPT_ATTEMPTS } from '../../src/contracts/attempts.ts';
import { scenario } from './helpers.ts';

const TEN_MINUTES = 600_000;
/** A ~20 GB model file (Qwen-Image Q8 unet) read at 120 MB/s: a slow HDD or network share, cold cache. */
const SILENT_LOAD_MS = (20e9 / 120e6) * 1000;

describe('defaults', () => {
  scenario('defaults: a hang is interrupted and retried well before 10 minutes; a silent 20 GB load is not a stall', async () => {
    const config = loadConfig({});
    expect(config.STALL_TIMEOUT_MS).toBeUndefined(); // the profiles decide
    for (const p of listProfiles()) {
      const stall = config.STALL_TIMEOUT_MS ?? p.stallTimeoutMs;
      expect(stall, `${p.id}: stall timeout vs a silent 20 GB load`).toBeGreaterThan(SILENT_LOAD_MS);
      // Worst case from the last event of the hung prompt to the retry's start: the stall check (plus one
      // poll of slack), an interrupt that does not take and /free (two grace periods), the first backoff.
      const retryStartsAfter = stall + config.POLL_INTERVAL_MS + 2 * stopGraceMs(stall) + attemptBackoffMs(1);
      // The 10-minute mark is when image clients of the old shim gave up. Video clients wait for minutes-long
      // renders (sync timeouts of 30 min and more): a video hang is retried within a quarter of its deadline.
      const budget = p.kinds.includes('video') ? p.deadlineMs / 4 : TEN_MINUTES / 2;
      expect(retryStartsAfter, `${p.id}: retry starts after ${retryStartsAfter} ms`).toBeLessThanOrEqual(budget);
      // And the item's deadline leaves the retry a whole stall window plus time to render.
      expect(p.deadlineMs, `${p.id}: deadline`).toBeGreaterThanOrEqual(retryStartsAfter + stall);
    }
    // A killed worker is noticed within the heartbeat timeout, far below the stall timeout.
    expect(config.HEARTBEAT_TIMEOUT_MS).toBeLessThanOrEqual(60_000);
    expect(MAX_PROMPT_ATTEMPTS).toBeGreaterThanOrEqual(3);
  });
});
