/**
 * ComfyUI's `execution.PromptQueue`: a min-heap of pending items (Python `heapq`, so `queue_pending` is the
 * raw heap array, not sorted), the running items keyed by a task counter, and an in-memory history dict.
 * Nothing is persisted: a restart loses all of it, which is the behaviour clients must survive.
 */
export type Graph = Record<string, unknown>;

export interface QueueItem {
  number: number;
  promptId: string;
  prompt: Graph;
  extraData: Record<string, unknown>;
  outputs: string[];
  /** Sensitive extra_data keys, kept out of `/queue` and `/history` (the tuple's 6th element). */
  sensitive: Record<string, unknown>;
}

/** `[number, prompt_id, prompt, extra_data, outputs_to_execute]` as `/queue` and `/history` show it. */
export type WireItem = [number, string, Graph, Record<string, unknown>, string[]];

export function toWire(item: QueueItem): WireItem {
  return [item.number, item.promptId, item.prompt, item.extraData, item.outputs];
}

export type StatusMessage = [string, Record<string, unknown>];

export interface HistoryItem {
  prompt: WireItem;
  outputs: Record<string, Record<string, unknown>>;
  status: { status_str: 'success' | 'error'; completed: boolean; messages: StatusMessage[] };
  meta: Record<string, { node_id: string; display_node: string; parent_node: string | null; real_node_id: string }>;
}

export const MAXIMUM_HISTORY_SIZE = 10000;

/** Python tuple ordering on (number, prompt_id); a full tie keeps insertion order instead of raising. */
function lt(a: QueueItem, b: QueueItem): boolean {
  if (a.number !== b.number) return a.number < b.number;
  return a.promptId < b.promptId;
}

// ---- heapq port: same algorithm, so the array order matches CPython's for the same operations ----
function siftdown(heap: QueueItem[], startpos: number, pos: number): void {
  const newitem = heap[pos] as QueueItem;
  while (pos > startpos) {
    const parentpos = (pos - 1) >> 1;
    const parent = heap[parentpos] as QueueItem;
    if (lt(newitem, parent)) {
      heap[pos] = parent;
      pos = parentpos;
      continue;
    }
    break;
  }
  heap[pos] = newitem;
}

function siftup(heap: QueueItem[], pos: number): void {
  const endpos = heap.length;
  const startpos = pos;
  const newitem = heap[pos] as QueueItem;
  let childpos = 2 * pos + 1;
  while (childpos < endpos) {
    const rightpos = childpos + 1;
    if (rightpos < endpos && !lt(heap[childpos] as QueueItem, heap[rightpos] as QueueItem)) childpos = rightpos;
    heap[pos] = heap[childpos] as QueueItem;
    pos = childpos;
    childpos = 2 * pos + 1;
  }
  heap[pos] = newitem;
  siftdown(heap, startpos, pos);
}

function heappush(heap: QueueItem[], item: QueueItem): void {
  heap.push(item);
  siftdown(heap, 0, heap.length - 1);
}

function heappop(heap: QueueItem[]): QueueItem | undefined {
  const last = heap.pop();
  if (last === undefined || heap.length === 0) return last;
  const ret = heap[0] as QueueItem;
  heap[0] = last;
  siftup(heap, 0);
  return ret;
}

function heapify(heap: QueueItem[]): void {
  for (let i = (heap.length >> 1) - 1; i >= 0; i--) siftup(heap, i);
}

export interface FreeFlags {
  unload_models?: boolean;
  free_memory?: boolean;
}

export class PromptQueue {
  queue: QueueItem[] = [];
  readonly running = new Map<number, QueueItem>();
  readonly history = new Map<string, HistoryItem>();
  flags: FreeFlags = {};
  private taskCounter = 0;
  private wakers: Array<() => void> = [];

  /** `onUpdate` is `PromptServer.queue_updated`: the `status` broadcast. */
  constructor(private readonly onUpdate: () => void) {}

  put(item: QueueItem): void {
    heappush(this.queue, item);
    this.onUpdate();
    this.wake();
  }

  /** Pops the next item into `running` (or undefined when there is none). */
  take(): [QueueItem, number] | undefined {
    const item = heappop(this.queue);
    if (!item) return undefined;
    const id = this.taskCounter++;
    this.running.set(id, structuredClone(item));
    this.onUpdate();
    return [item, id];
  }

  /** Resolves when an item or a flag arrives (`not_empty.wait`), or when `wake()` is called. */
  waitForWork(): Promise<void> {
    if (this.queue.length > 0 || Object.keys(this.flags).length > 0) return Promise.resolve();
    return new Promise((resolve) => this.wakers.push(resolve));
  }

  wake(): void {
    const w = this.wakers;
    this.wakers = [];
    for (const f of w) f();
  }

  taskDone(itemId: number, result: Pick<HistoryItem, 'outputs' | 'meta'>, status: HistoryItem['status']): void {
    const item = this.running.get(itemId);
    if (!item) return;
    this.running.delete(itemId);
    if (this.history.size > MAXIMUM_HISTORY_SIZE) {
      const first = this.history.keys().next();
      if (!first.done) this.history.delete(first.value);
    }
    // Re-assigning an existing key keeps its position, as a Python dict does (duplicate prompt ids).
    this.history.set(item.promptId, { prompt: toWire(item), outputs: result.outputs, status, meta: result.meta });
    this.onUpdate();
  }

  remaining(): number {
    return this.queue.length + this.running.size;
  }

  currentQueue(): { running: WireItem[]; pending: WireItem[] } {
    return {
      running: [...this.running.values()].map((i) => structuredClone(toWire(i))),
      pending: this.queue.map((i) => structuredClone(toWire(i))),
    };
  }

  runningIds(): string[] {
    return [...this.running.values()].map((i) => i.promptId);
  }

  wipeQueue(): void {
    this.queue = [];
    this.onUpdate();
  }

  /** Removes the first pending item matching; running items are untouchable here. */
  deleteQueueItem(match: (item: QueueItem) => boolean): boolean {
    const idx = this.queue.findIndex(match);
    if (idx < 0) return false;
    if (this.queue.length === 1) this.wipeQueue();
    else {
      this.queue.splice(idx, 1);
      heapify(this.queue);
    }
    this.onUpdate();
    return true;
  }

  /** `get_history(prompt_id=None, max_items, offset)`. */
  getHistory(maxItems?: number, offset = -1): Record<string, HistoryItem> {
    const out: Record<string, HistoryItem> = {};
    if (offset < 0 && maxItems !== undefined) offset = this.history.size - maxItems;
    let i = 0;
    for (const [k, v] of this.history) {
      if (i >= offset) {
        out[k] = structuredClone(v);
        if (maxItems !== undefined && Object.keys(out).length >= maxItems) break;
      }
      i++;
    }
    return out;
  }

  getHistoryItem(promptId: string): Record<string, HistoryItem> {
    const h = this.history.get(promptId);
    return h ? { [promptId]: structuredClone(h) } : {};
  }

  wipeHistory(): void {
    this.history.clear();
  }

  deleteHistoryItem(promptId: string): void {
    this.history.delete(promptId);
  }

  setFlag(name: keyof FreeFlags, value: boolean): void {
    this.flags[name] = value;
    this.wake();
  }

  takeFlags(): FreeFlags {
    const f = this.flags;
    this.flags = {};
    return f;
  }

  clearAll(): void {
    this.queue = [];
    this.running.clear();
    this.history.clear();
    this.flags = {};
    this.taskCounter = 0;
  }
}

/** The `execution_error` payload shape (also stored in history and returned by the jobs API). */
export interface ExecutionErrorData {
  prompt_id: string;
  node_id: string;
  node_type: string;
  executed: string[];
  exception_message: string;
  exception_type: string;
  traceback: string[];
  current_inputs: Record<string, unknown[]>;
  current_outputs: string[];
  timestamp: number;
}
