/**
 * Workflow files: the shipped ones read, match a real ComfyUI 0.33.0's /object_info (the recording), and
 * their manifests become zod schemas with the manifest's limits and defaults; the parameters land in the
 * node inputs the manifest names; a manifest naming an input the node lacks is caught.
 */
import { readFileSync } from 'node:fs';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseObjectInfo } from '../../src/comfyui/object-info.ts';
import { applyParameters, bodySchemaOf, checkWorkflow, loadWorkflowFiles, SHIPPED_WORKFLOWS_DIR } from '../../src/workflow-files/manifest.ts';

/** The recorded /object_info of a real ComfyUI 0.33.0 (only its folder file lists adjusted, see its README). */
const real = parseObjectInfo(
  JSON.parse(readFileSync(path.join(import.meta.dirname, '..', '..', 'tools', 'fake-comfyui', 'fixtures', 'object_info.json'), 'utf8')),
);

describe('workflow files', () => {
  const files = loadWorkflowFiles(SHIPPED_WORKFLOWS_DIR);

  it('ships a LoRA stack and a regional prompt, each matching the nodes and inputs of a real ComfyUI 0.33.0', () => {
    expect(files.map((f) => f.name)).toEqual(['lora-stack', 'regional-prompt']);
    for (const wf of files) {
      // Only core nodes: the real server has every class and input.
      expect(checkWorkflow(wf, real), wf.name).toEqual([]);
    }
  });

  it('builds the schema from the manifest: defaults, limits, unknown fields refused', () => {
    const lora = files.find((f) => f.name === 'lora-stack')!;
    const schema = bodySchemaOf(lora.manifest);
    const parsed = schema.parse({ prompt: 'a fox' });
    expect(parsed).toMatchObject({ lora_1: 'style/detail-tweaker.safetensors', lora_1_clip_strength: 1, lora_2_clip_strength: 0.25, steps: 20 });
    expect(schema.safeParse({ prompt: 'a fox', lora_1_clip_strength: 99 }).error?.issues[0]?.path).toEqual(['lora_1_clip_strength']);
    expect(schema.safeParse({ prompt: 'a fox', steps: 2.5 }).success).toBe(false);
    expect(schema.safeParse({ prompt: 'a fox', lora: 'x' }).error?.issues[0]?.code).toBe('unrecognized_keys');
    expect(schema.safeParse({}).error?.issues[0]?.path).toEqual(['prompt']);
  });

  it('writes each parameter into every node input it names (the region strength into both areas)', () => {
    const regional = files.find((f) => f.name === 'regional-prompt')!;
    const values = bodySchemaOf(regional.manifest).parse({ prompt: 'a meadow', left_prompt: 'a fox', right_prompt: 'an owl', region_strength: 2.5 });
    const graph = applyParameters(regional, values);
    expect(graph.left_text!.inputs.text).toBe('a fox');
    expect(graph.right_text!.inputs.text).toBe('an owl');
    expect([graph.left_area!.inputs.strength, graph.right_area!.inputs.strength]).toEqual([2.5, 2.5]);
    // The file's own graph is untouched.
    expect(regional.graph.left_text!.inputs.text).toBe('a red fox');
  });

  it('catches a manifest naming an input its node lacks, or a node the graph lacks', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'cd-wf-'));
    const lora = files.find((f) => f.name === 'lora-stack')!;
    writeFileSync(path.join(dir, 'bad.json'), JSON.stringify(lora.graph));
    const manifest = structuredClone(lora.manifest);
    manifest.parameters.lora_1_clip_strength!.sets = [{ node: 'lora1', input: 'clip_strength' }];
    writeFileSync(path.join(dir, 'bad.manifest.json'), JSON.stringify(manifest));
    const [bad] = loadWorkflowFiles(dir);
    expect(checkWorkflow(bad!, real)).toEqual(['parameter lora_1_clip_strength: LoraLoader (node lora1) has no input clip_strength']);
    manifest.parameters.lora_1_clip_strength!.sets = [{ node: 'nope', input: 'strength_clip' }];
    writeFileSync(path.join(dir, 'bad.manifest.json'), JSON.stringify(manifest));
    expect(() => loadWorkflowFiles(dir)).toThrow(/sets node nope, which the graph lacks/);
  });
});
