/**
 * ComfyUI API-format graph types (`POST /prompt` body field `prompt`).
 * A link is `[sourceNodeId, outputIndex]`; literal lists must be wrapped as `{__value__: [...]}`.
 */
export type NodeLink = [string, number];
export type InputValue = string | number | boolean | NodeLink | { __value__: unknown[] } | null;

export interface GraphNode {
  class_type: string;
  inputs: Record<string, InputValue>;
  /** Always present: ComfyUI's node replacement copies `_meta` unconditionally. */
  _meta: { title: string };
}

export type ComfyGraph = Record<string, GraphNode>;

export function isLink(v: unknown): v is NodeLink {
  return Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && typeof v[1] === 'number';
}

/** One file reported in `/history` outputs or an `executed` event. */
export interface ComfyFileRef {
  filename: string;
  subfolder: string;
  type: 'output' | 'temp' | 'input';
}
