/**
 * Renders this front is currently waiting on, oldest first: what `/sdapi/v1/progress` counts and what
 * `/sdapi/v1/interrupt` and `/skip` act on (the render currently on the GPU is the oldest one still waiting).
 */
export interface InFlightRender {
  renderId: string;
  startedAt: number;
  /** A1111 interrupt: the render ends with the images finished so far (the waiting request answers 200). */
  interrupt(): Promise<void>;
  /** A1111 skip: the current image of the batch ends, the next one starts. */
  skip(): Promise<void>;
}

export class InFlight {
  private readonly renders = new Map<string, InFlightRender>();

  private readonly listeners: ((renderId: string) => void)[] = [];

  /** The returned function ends the entry: the render has returned to its client (or failed). */
  add(r: InFlightRender): () => void {
    this.renders.set(r.renderId, r);
    return () => {
      this.renders.delete(r.renderId);
      for (const l of this.listeners) l(r.renderId);
    };
  }

  /** Called with each render id as its waiting request ends (progress goes idle at that moment). */
  onFinished(listener: (renderId: string) => void): void {
    this.listeners.push(listener);
  }

  list(): InFlightRender[] {
    return [...this.renders.values()].sort((a, b) => a.startedAt - b.startedAt);
  }

  get size(): number {
    return this.renders.size;
  }
}
