/**
 * `/object_info` shapes. Combo specs come in two shapes and both must be accepted:
 * V1 nodes `[["a","b"], {opts}]` and V3 nodes `["COMBO", {"options": [...], "default"?: ...}]`.
 */
import { z } from 'zod';

export const inputSpecSchema = z.array(z.unknown()).min(1);
export type InputSpec = z.infer<typeof inputSpecSchema>;

export const nodeInfoSchema = z
  .object({
    input: z
      .object({
        required: z.record(z.string(), inputSpecSchema).optional(),
        optional: z.record(z.string(), inputSpecSchema).optional(),
        hidden: z.record(z.string(), z.unknown()).optional(),
      })
      .loose(),
    input_order: z.record(z.string(), z.array(z.string())).optional(),
    output: z.array(z.string()),
    output_is_list: z.array(z.boolean()).optional(),
    output_name: z.array(z.string()).optional(),
    name: z.string(),
    display_name: z.string().optional(),
    description: z.string().optional(),
    python_module: z.string().optional(),
    category: z.string().optional(),
    output_node: z.boolean(),
  })
  .loose();
export type NodeInfo = z.infer<typeof nodeInfoSchema>;

export const objectInfoSchema = z.record(z.string(), nodeInfoSchema);
export type ObjectInfo = z.infer<typeof objectInfoSchema>;

/** The allowed values of a combo input, or undefined when the spec is not a combo. */
export function comboOptions(spec: InputSpec): unknown[] | undefined {
  const [head, opts] = spec;
  if (Array.isArray(head)) return head;
  if (head === 'COMBO' && opts && typeof opts === 'object' && Array.isArray((opts as { options?: unknown }).options)) {
    return (opts as { options: unknown[] }).options;
  }
  return undefined;
}

/** The declared type of an input (`INT`, `FLOAT`, `STRING`, `BOOLEAN`, `COMBO`, `MODEL`, ...). */
export function inputType(spec: InputSpec): string {
  const [head] = spec;
  if (Array.isArray(head)) return 'COMBO';
  return String(head);
}

/** Options object of a spec (`{default, min, max, step, ...}`), empty when absent. */
export function inputOptions(spec: InputSpec): Record<string, unknown> {
  const opts = spec[1];
  return opts && typeof opts === 'object' && !Array.isArray(opts) ? (opts as Record<string, unknown>) : {};
}
