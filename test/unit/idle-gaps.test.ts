/** The work-conserving check of test/integration/work-conserving.test.ts can fail, and only when it should. */
import { describe, expect, it } from 'vitest';
import { idleWhileWaiting, type BackendRun, type QueuedRender } from '../support/idle-gaps.ts';

const queued = (ids: string[], at = 0): QueuedRender[] => ids.map((promptId) => ({ promptId, queuedAt: at }));

describe('idleWhileWaiting', () => {
  it('accepts two backends that each take the next prompt right after a short hand-over', () => {
    const runs: BackendRun[] = [
      { backend: 0, promptId: 'a', start: 10, end: 110 },
      { backend: 1, promptId: 'b', start: 12, end: 112 },
      { backend: 0, promptId: 'c', start: 130, end: 230 },
      { backend: 1, promptId: 'd', start: 125, end: 225 },
    ];
    expect(idleWhileWaiting(2, runs, queued(['a', 'b', 'c', 'd']))).toEqual([]);
  });

  it('flags a backend idle through a whole prompt of another while a render waited', () => {
    // Backend 1 ran nothing until 'c' although 'c' waited from 0 and backend 0 ran 'b' from start to end meanwhile.
    const runs: BackendRun[] = [
      { backend: 0, promptId: 'a', start: 10, end: 110 },
      { backend: 0, promptId: 'b', start: 120, end: 220 },
      { backend: 1, promptId: 'c', start: 230, end: 330 },
    ];
    const problems = idleWhileWaiting(2, runs, queued(['a', 'b', 'c']));
    expect(problems.length).toBeGreaterThan(0);
    expect(problems[0]).toMatch(/backend 1 idle from 0 to 230 while backend 0 ran a/);
  });

  it('flags a backend that stops taking work while renders still wait (idle after its last run)', () => {
    const runs: BackendRun[] = [
      { backend: 0, promptId: 'a', start: 10, end: 110 },
      { backend: 1, promptId: 'b', start: 10, end: 110 },
      { backend: 0, promptId: 'c', start: 120, end: 220 },
      { backend: 0, promptId: 'd', start: 230, end: 330 },
    ];
    expect(idleWhileWaiting(2, runs, queued(['a', 'b', 'c', 'd'])).join('\n')).toMatch(
      /backend 1 idle from 110 to Infinity while backend 0 ran c .* render d waited/,
    );
  });

  it('does not count idling while nothing waited (renders queued later)', () => {
    const runs: BackendRun[] = [
      { backend: 0, promptId: 'a', start: 10, end: 110 },
      { backend: 0, promptId: 'b', start: 500, end: 600 },
    ];
    expect(
      idleWhileWaiting(2, runs, [
        { promptId: 'a', queuedAt: 0 },
        { promptId: 'b', queuedAt: 490 },
      ]),
    ).toEqual([]);
  });

  it('flags a backend running two prompts at once', () => {
    const runs: BackendRun[] = [
      { backend: 0, promptId: 'a', start: 10, end: 110 },
      { backend: 0, promptId: 'b', start: 50, end: 150 },
    ];
    expect(idleWhileWaiting(1, runs, queued(['a', 'b']))).toContain('backend 0 ran a and b at once');
  });
});
