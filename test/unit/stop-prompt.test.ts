/**
 * Stopping a prompt whose `POST /prompt` never got its answer: ComfyUI validates before it queues, so the cancel
 * can arrive first and find nothing. The GPU entry's shutdown must not take that "unknown" for "stopped".
 */
import { describe, expect, it } from 'vitest';
import { cancelAndWait } from '../../src/activities/stop-prompt.ts';
import type { ComfyClient } from '../../src/comfyui/client.ts';
import { createLogger } from '../../src/log.ts';

type State = 'unknown' | 'pending' | 'running' | 'done';

/** A ComfyUI that answers the given states in turn (the last one repeats) and counts the cancels. */
function comfy(states: State[]): { client: ComfyClient; cancels: () => number; polls: () => number } {
  let cancels = 0;
  let polls = 0;
  const client = {
    cancelJob: () => {
      cancels++;
      return Promise.resolve();
    },
    promptStatus: () => {
      const state = states[Math.min(polls, states.length - 1)]!;
      polls++;
      return Promise.resolve({ state });
    },
  } as unknown as ComfyClient;
  return { client, cancels: () => cancels, polls: () => polls };
}

const log = createLogger('silent');

describe('cancelAndWait', () => {
  it('a submission whose answer never came: "unknown" is waited out, and the prompt is cancelled again once it is queued', async () => {
    const c = comfy(['unknown', 'unknown', 'pending', 'pending', 'done']);
    expect(await cancelAndWait(c.client, 'p1', 30_000, log, { mayStillArrive: true })).toBe(true);
    expect(c.cancels()).toBe(2);
    expect(c.polls()).toBe(5);
  });

  it('a submission ComfyUI answered: "unknown" means gone at once', async () => {
    const c = comfy(['unknown']);
    expect(await cancelAndWait(c.client, 'p1', 30_000, log)).toBe(true);
    expect(c.cancels()).toBe(1);
    expect(c.polls()).toBe(1);
  });

  it('a submission that never reaches the queue within the grace: reported not stopped, not stopped forever', async () => {
    const c = comfy(['unknown']);
    expect(await cancelAndWait(c.client, 'p1', 600, log, { mayStillArrive: true })).toBe(false);
    expect(c.cancels()).toBe(1);
  });
});
