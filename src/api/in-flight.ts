/**
 * Renders this front is currently waiting on, oldest first: what `/sdapi/v1/progress` counts and what
 * `/sdapi/v1/interrupt` cancels (the render currently on the GPU is the oldest one still waiting).
 */
export interface InFlightRender {
  renderId: string;
  startedAt: number;
  cancel(): Promise<void>;
}

export class InFlight {
  private readonly renders = new Map<string, InFlightRender>();

  add(r: InFlightRender): () => void {
    this.renders.set(r.renderId, r);
    return () => this.renders.delete(r.renderId);
  }

  list(): InFlightRender[] {
    return [...this.renders.values()].sort((a, b) => a.startedAt - b.startedAt);
  }

  get size(): number {
    return this.renders.size;
  }
}
