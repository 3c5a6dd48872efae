/**
 * Renders this front is currently waiting on, oldest first: what `/sdapi/v1/progress` counts and what
 * `/sdapi/v1/interrupt` and `/skip` act on (the render currently on the GPU is the oldest one still waiting). Several
 * clients may wait on one render (Idempotency-Key retries attach to it): each `add` is one client, and the
 * render stays listed until the last of them is done.
 */
import { currentClient } from '../fair/client-context.ts';
import { canSee, EVERYONE, type Viewer } from '../renders/owner.ts';

export interface InFlightRender {
  renderId: string;
  startedAt: number;
  /** A1111 interrupt: the render ends with the images finished so far (the waiting request answers 200). */
  interrupt(): Promise<void>;
  /** A1111 skip: the current image of the batch ends, the next one starts. */
  skip(): Promise<void>;
  /** The API key that started it: default, the client of the request being served (fair/client-context.ts). */
  owner?: string;
}

export class InFlight {
  /** `waits`: requests still awaiting the render; `attached`: those whose client is still connected. */
  private readonly renders = new Map<string, { render: InFlightRender; waits: number; attached: number }>();

  private readonly listeners: ((renderId: string) => void)[] = [];

  /**
   * One request waits on the render. `done` ends its wait (the render returned or failed); `detach` says its
   * client went away while the render goes on. The render stays listed until every wait has ended: a
   * client that disconnected does not take the render off the GPU list, so `/sdapi/v1/interrupt` (which
   * SillyTavern sends right after aborting its request) still reaches it, as in A1111.
   */
  add(r: InFlightRender): { done(): void; detach(): void } {
    const owner = r.owner ?? currentClient().owner;
    const entry = this.renders.get(r.renderId) ?? { render: owner !== undefined ? { ...r, owner } : r, waits: 0, attached: 0 };
    entry.waits++;
    entry.attached++;
    this.renders.set(r.renderId, entry);
    let attached = true;
    let waiting = true;
    const detach = (): void => {
      if (!attached) return;
      attached = false;
      entry.attached--;
    };
    return {
      detach,
      done: () => {
        if (!waiting) return;
        waiting = false;
        detach();
        if (--entry.waits > 0 || this.renders.get(r.renderId) !== entry) return;
        this.renders.delete(r.renderId);
        for (const l of this.listeners) l(r.renderId);
      },
    };
  }

  /** How many connected clients of this front wait on the render (0 when none). */
  clients(renderId: string): number {
    return this.renders.get(renderId)?.attached ?? 0;
  }

  /** Called with each render id as the last request waiting on it is done (progress goes idle at that moment). */
  onFinished(listener: (renderId: string) => void): void {
    this.listeners.push(listener);
  }

  /** Oldest first; a client key sees (and interrupts, skips) only its own renders. */
  list(viewer: Viewer = EVERYONE): InFlightRender[] {
    return [...this.renders.values()]
      .map((e) => e.render)
      .filter((r) => canSee(viewer, r.owner))
      .sort((a, b) => a.startedAt - b.startedAt);
  }

  get size(): number {
    return this.renders.size;
  }
}
