/**
 * "No backend sits idle while renders wait", decided from the ComfyUIs' own execution records by the order of
 * events, not by a time bound: a backend counts as having idled while work waited when, during one of its idle
 * stretches (before its first run, between two runs, after its last), another backend ran a WHOLE prompt from
 * start to end while some render was waiting throughout it (queued before that prompt started, its own
 * prompt started only after that one ended). The hand-over between two prompts on one backend (outputs
 * collected, next attempt dispatched) is far shorter than a render, so it never contains one; a backend left
 * out of dispatch, or freed late, does.
 */

export interface BackendRun {
  backend: number;
  promptId: string;
  start: number;
  end: number;
}

export interface QueuedRender {
  /** The render's prompt (the run that rendered it). */
  promptId: string;
  /** When the render was queued (its workflow start): from then until its prompt starts, it waits. */
  queuedAt: number;
}

export function idleWhileWaiting(backends: number, runs: BackendRun[], renders: QueuedRender[]): string[] {
  const problems: string[] = [];
  const startOf = new Map(runs.map((r) => [r.promptId, r.start]));
  const firstQueued = Math.min(...renders.map((r) => r.queuedAt));
  for (let b = 0; b < backends; b++) {
    const own = runs.filter((r) => r.backend === b).sort((x, y) => x.start - y.start);
    for (let i = 1; i < own.length; i++) {
      if (own[i]!.start < own[i - 1]!.end) problems.push(`backend ${b} ran ${own[i - 1]!.promptId} and ${own[i]!.promptId} at once`);
    }
    const idle: Array<[number, number]> = [];
    idle.push([firstQueued, own[0]?.start ?? Infinity]);
    for (let i = 1; i < own.length; i++) idle.push([own[i - 1]!.end, own[i]!.start]);
    if (own.length > 0) idle.push([own.at(-1)!.end, Infinity]);
    for (const [from, to] of idle) {
      for (const other of runs) {
        if (other.backend === b || other.start < from || other.end > to) continue;
        const waiter = renders.find((r) => r.queuedAt <= other.start && (startOf.get(r.promptId) ?? Infinity) >= other.end);
        if (waiter) {
          problems.push(
            `backend ${b} idle from ${from} to ${to} while backend ${other.backend} ran ${other.promptId} (${other.start}–${other.end}) ` +
              `and render ${waiter.promptId} waited throughout`,
          );
        }
      }
    }
  }
  return problems;
}
