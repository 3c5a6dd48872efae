/**
 * The client's pre-submit verdict held against a real ComfyUI's verdict on the same graphs, as recorded in
 * test/fixtures/real-comfyui/ (recorded on a real ComfyUI 0.33.0, some with scripts/record-verdicts.ts):
 * - golden-real.json: the real server accepted every golden graph (`node_errors: {}`);
 * - capture-real.json: every `POST /prompt` of the scripted exchange, bad graphs of every kind included;
 * - verdicts-model-files.json: graphs whose faults are missing model files or node classes.
 *
 * The project must never refuse what the real server accepted; where it refuses, the real server must have
 * refused for the same definite reason (same node, same input); and where the real server refused only for
 * such a reason, the project must catch it before submitting.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { objectInfoSchema } from '../../src/comfyui/object-info.ts';
import { preflightGraph } from '../../src/comfyui/preflight.ts';
import { OBJECT_INFO_FIXTURE_URL } from '../../tools/fake-comfyui/fixture.ts';

const fixture = (name: string): unknown => JSON.parse(readFileSync(new URL(`../fixtures/${name}`, import.meta.url), 'utf8'));
const info = objectInfoSchema.parse(JSON.parse(readFileSync(OBJECT_INFO_FIXTURE_URL, 'utf8')));

interface RealError {
  type: string;
  extra_info?: { node_id?: string; input_name?: string; received_value?: unknown };
}
interface RealAnswer {
  error?: RealError | string;
  node_errors?: Record<string, { errors: RealError[] }>;
}
interface Step {
  name: string;
  method?: string;
  path?: string;
  status: number | string;
  request_json?: { prompt?: unknown } | null;
  json?: RealAnswer | null;
}

const MODEL_FILE = /\.(safetensors|sft|gguf|ckpt|pt|pt2|pth|bin|pkl|onnx)$/i;

/** Whether the real server refused only for reasons the client is meant to catch (absent class, missing model file). */
function refusedForDefiniteReasons(answer: RealAnswer): boolean {
  if (typeof answer.error === 'object' && answer.error.type === 'missing_node_type') return true;
  const errors = Object.values(answer.node_errors ?? {}).flatMap((n) => n.errors);
  return (
    errors.length > 0 &&
    errors.every((e) => e.type === 'value_not_in_list' && typeof e.extra_info?.received_value === 'string' && MODEL_FILE.test(e.extra_info.received_value))
  );
}

function holdAgainst(graph: unknown, status: number, answer: RealAnswer): void {
  const v = preflightGraph(graph, info);
  const accepted = status === 200;
  if (v.ok) {
    // Not refusing is always safe (ComfyUI decides), but a refusal for a definite reason must not slip by.
    if (!accepted) expect(refusedForDefiniteReasons(answer), `real refused for a definite reason: ${JSON.stringify(answer)}`).toBe(false);
    return;
  }
  expect(accepted, 'the client refuses a graph the real server accepted').toBe(false);
  for (const p of v.problems) {
    if (p.type === 'missing_node_type') {
      // ComfyUI names the first absent node it meets, in the graph's key order, as the client does.
      expect(answer.error).toMatchObject({ type: 'missing_node_type', extra_info: { node_id: v.problems[0]!.nodeId } });
    } else {
      const real = answer.node_errors?.[p.nodeId]?.errors ?? [];
      expect(real, `${p.nodeId}.${p.input}`).toContainEqual(
        expect.objectContaining({ type: 'value_not_in_list', extra_info: expect.objectContaining({ input_name: p.input, received_value: p.value }) }),
      );
    }
  }
}

function promptSteps(file: string): Array<[string, Step]> {
  const steps = (fixture(file) as { steps: Step[] }).steps;
  return steps
    .filter((s) => s.method === undefined || (s.method === 'POST' && /^\/(api\/)?prompt$/.test(s.path ?? '')))
    .filter((s) => s.request_json && typeof s.request_json === 'object' && 'prompt' in s.request_json)
    .map((s) => [s.name, s]);
}

describe('verdicts against the real ComfyUI', () => {
  const goldenDir = new URL('../golden/', import.meta.url);
  // Every golden graph, image and video, has the real server's verdict (scripts/record-golden-verdicts.ts).
  const goldens = readdirSync(goldenDir).filter((f) => f.endsWith('.json'));
  const real = fixture('real-comfyui/golden-real.json') as Record<string, { status: number; response: RealAnswer }>;

  it('the real server answered every golden graph, and accepted all of them', () => {
    expect(goldens.length).toBeGreaterThanOrEqual(14);
    expect(Object.keys(real).sort()).toEqual([...goldens].sort());
    for (const [name, r] of Object.entries(real)) expect([name, r.status, r.response.node_errors]).toEqual([name, 200, {}]);
  });

  it.each(goldens)('golden %s is not refused', (file) => {
    const graph: unknown = JSON.parse(readFileSync(new URL(file, goldenDir), 'utf8'));
    const verdict = real[file];
    if (!verdict) throw new Error(`golden ${file} has no verdict from a real ComfyUI: record one (scripts/record-golden-verdicts.ts, docs/extending.md)`);
    holdAgainst(graph, verdict.status, verdict.response);
    expect(preflightGraph(graph, info).ok).toBe(true);
  });

  const capture = promptSteps('real-comfyui/capture-real.json');
  it('the capture holds the bad graphs of every kind', () => {
    expect(capture.length).toBeGreaterThanOrEqual(25);
    expect(capture.filter(([, s]) => Number(s.status) === 400).length).toBeGreaterThanOrEqual(15);
  });
  it.each(capture)('capture: %s', (_name, step) => {
    holdAgainst(step.request_json!.prompt, Number(step.status), step.json ?? {});
  });

  const files = promptSteps('real-comfyui/verdicts-model-files.json');
  it.each(files)('model files: %s', (_name, step) => {
    holdAgainst(step.request_json!.prompt, Number(step.status), step.json ?? {});
  });
  it('where the real server refused for a missing model file or class, the client refuses before submitting', () => {
    const definite = [...capture, ...files].filter(([, s]) => Number(s.status) === 400 && refusedForDefiniteReasons(s.json ?? {}));
    expect(definite.length).toBeGreaterThanOrEqual(5);
    for (const [name, s] of definite) expect(preflightGraph(s.request_json!.prompt, info).ok, name).toBe(false);
  });
});
