/**
 * ComfyUI's `ExecutionList` (comfy_execution/graph.py) re-done for the fake: a topological dissolve of the
 * nodes the output nodes need, skipping cached ones, that picks the next node the way the real server does
 * (`ux_friendly_pick_node`: an output node first, then a node feeding an output, then one two steps from an
 * output, else the first ready node in discovery order). This is why the real server runs a Wan graph as
 * `39 VAELoader, 55, 38, 7, 6, 37, ...` and not in the graph's key order, and the fake must too.
 * Lazy inputs are not linked up front; `linkInput` adds one when the node asks for it (`check_lazy_status`),
 * and the node is staged again once that input has run.
 */

type Link = [from: string, socket: number, to: string];

export interface ExecutionGraph {
  /** The node's inputs as in the prompt. */
  inputs(id: string): Record<string, unknown>;
  isCached(id: string): boolean;
  isOutput(id: string): boolean;
  /** Whether the node declares this input `lazy`. */
  isLazy(id: string, input: string): boolean;
}

export function isLink(v: unknown): v is [string, number] {
  return Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && typeof v[1] === 'number';
}

export class ExecutionList {
  /** Insertion-ordered like the Python dict, which decides ties. */
  private readonly pending = new Set<string>();
  private readonly blockCount = new Map<string, number>();
  /** from → nodes it blocks. */
  private readonly blocking = new Map<string, Set<string>>();
  private staged: string | undefined;

  constructor(private readonly graph: ExecutionGraph) {}

  /** `add_node`: the node and, depth first, every uncached node it needs. */
  addNode(start: string): void {
    const stack = [start];
    const links: Link[] = [];
    while (stack.length > 0) {
      const id = stack.pop() as string;
      if (this.pending.has(id)) continue;
      this.pending.add(id);
      this.blockCount.set(id, 0);
      this.blocking.set(id, new Set());
      for (const [input, value] of Object.entries(this.graph.inputs(id))) {
        if (!isLink(value) || this.graph.isLazy(id, input)) continue;
        if (!this.graph.isCached(value[0])) stack.push(value[0]);
        links.push([value[0], value[1], id]);
      }
    }
    for (const [from, , to] of links) this.addStrongLink(from, to);
  }

  /** `make_input_strong_link`: a lazy input the node now needs. */
  linkInput(to: string, input: string): void {
    const value = this.graph.inputs(to)[input];
    if (isLink(value)) this.addStrongLink(value[0], to);
  }

  /** `unstage_node_execution`: the staged node waits for inputs it just asked for. */
  unstage(): void {
    this.staged = undefined;
  }

  private addStrongLink(from: string, to: string): void {
    if (this.graph.isCached(from)) return;
    this.addNode(from);
    const blocked = this.blocking.get(from) as Set<string>;
    if (!blocked.has(to)) {
      blocked.add(to);
      this.blockCount.set(to, (this.blockCount.get(to) ?? 0) + 1);
    }
  }

  isEmpty(): boolean {
    return this.pending.size === 0;
  }

  /** The next node to run, or undefined when nothing is ready (only possible with a cycle). */
  stage(): string | undefined {
    const ready = [...this.pending].filter((id) => this.blockCount.get(id) === 0);
    if (ready.length === 0) return undefined;
    this.staged = this.pick(ready);
    return this.staged;
  }

  /** `complete_node_execution`: the staged node is done and unblocks its dependents. */
  complete(): void {
    const id = this.staged;
    if (id === undefined) return;
    this.pending.delete(id);
    for (const to of this.blocking.get(id) ?? []) this.blockCount.set(to, (this.blockCount.get(to) ?? 0) - 1);
    this.blocking.delete(id);
    this.staged = undefined;
  }

  private pick(ready: string[]): string {
    const out = (id: string) => this.graph.isOutput(id);
    const feeds = (id: string) => [...(this.blocking.get(id) ?? [])];
    return ready.find(out) ?? ready.find((id) => feeds(id).some(out)) ?? ready.find((id) => feeds(id).some((b) => feeds(b).some(out))) ?? (ready[0] as string);
  }
}
