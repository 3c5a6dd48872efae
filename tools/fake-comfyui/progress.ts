/**
 * Progress as the real server reports it: the per-prompt registry behind `progress_state` (every non-pending
 * node, `running` 0/1 when a node starts, `finished` keeping the last max when it ends, so a sampler stays
 * at 20/20), and the sampler hook (`comfy.utils.ProgressBar` + `main.hijack_progress`): interrupt check,
 * `progress_state`, a type-4 preview for clients with `supports_preview_metadata`, `progress`, then a type-1
 * preview for the others. Updates without a preview are throttled like ComfyUI's: the first and last step
 * always, others only >= 100 ms and >= 0.5 % after the last one sent.
 */
import { legacyPreviewFrame, metadataPreviewFrame } from './preview.ts';
import type { RunControl } from './run-control.ts';
import type { WsHub } from './ws-hub.ts';

type NodeState = 'running' | 'finished' | 'error';

export class ProgressRegistry {
  private readonly nodes = new Map<string, { value: number; max: number; state: NodeState }>();

  constructor(
    private readonly hub: WsHub,
    readonly promptId: string,
    readonly sid: string | null,
  ) {}

  start(id: string): void {
    this.nodes.set(id, { value: 0, max: 1, state: 'running' });
    this.send();
  }

  update(id: string, value: number, max: number): void {
    this.nodes.set(id, { value, max, state: 'running' });
    this.send();
  }

  finish(id: string): void {
    const e = this.nodes.get(id) ?? { value: 0, max: 1, state: 'running' as NodeState };
    this.nodes.set(id, { value: e.max, max: e.max, state: 'finished' });
    this.send();
  }

  /** Subgraph ids (`"105:13"`) are plain ids to the server: display id = id, no parent. */
  nodeMeta(id: string): { node_id: string; prompt_id: string; display_node_id: string; parent_node_id: null; real_node_id: string } {
    return { node_id: id, prompt_id: this.promptId, display_node_id: id, parent_node_id: null, real_node_id: id };
  }

  private send(): void {
    const nodes: Record<string, unknown> = {};
    for (const [id, p] of this.nodes) nodes[id] = { ...p, ...this.nodeMeta(id) };
    this.hub.send('progress_state', { prompt_id: this.promptId, nodes }, this.sid);
  }
}

const THROTTLE_MS = 100;
const THROTTLE_PERCENT = 0.5;

/** One sampler node's progress bar. `preview(step)` returns the JPEG for a step, or undefined for none. */
export class SamplerProgress {
  private lastSent = -1;
  private lastTime = 0;

  constructor(
    private readonly registry: ProgressRegistry,
    private readonly hub: WsHub,
    private readonly control: RunControl,
    private readonly nodeId: string,
    private readonly total: number,
    private readonly preview: (step: number) => Buffer | undefined,
  ) {}

  /** `update_absolute(value)`. */
  step(value: number): void {
    // Checked on every step, not only on the ones the throttle lets through: a little more responsive than
    // the real hook, never less.
    this.control.check();
    const image = this.preview(value);
    const now = performance.now();
    const first = this.lastSent < 0;
    const final = value >= this.total;
    if (!(image || first || final)) {
      const percent = this.total > 0 ? ((value - Math.max(0, this.lastSent)) / this.total) * 100 : 100;
      if (now - this.lastTime < THROTTLE_MS || percent < THROTTLE_PERCENT) return;
    }
    this.lastTime = now;
    this.lastSent = value;
    this.hook(value, image);
  }

  private hook(value: number, image: Buffer | undefined): void {
    this.control.check();
    const { hub, registry, nodeId } = this;
    const sid = registry.sid;
    const withMetadata = hub.supportsFeature(sid, 'supports_preview_metadata');
    registry.update(nodeId, value, this.total);
    if (image && withMetadata) {
      const { prompt_id, display_node_id, parent_node_id, real_node_id } = registry.nodeMeta(nodeId);
      hub.sendBinary(metadataPreviewFrame(image, { node_id: nodeId, prompt_id, display_node_id, parent_node_id, real_node_id }), sid);
    }
    hub.send('progress', { value, max: this.total, prompt_id: registry.promptId, node: nodeId }, sid);
    if (image && !withMetadata) hub.sendBinary(legacyPreviewFrame(image), sid);
  }
}
