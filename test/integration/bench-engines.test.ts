/**
 * The engine benchmark's CPU dry run (bench/engines.ts --dry-run): the same requests built for engine=comfyui
 * and engine=sglang, submitted to a fake ComfyUI that has the SGLang plugin's recorded nodes, followed to the
 * end, their outputs fetched and checked, and the ratio table printed. Figures are meaningless here; that the
 * GPU run's whole path works is what this proves.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runEngineBench } from '../../bench/engines.ts';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';

let fake: FakeComfyUI;
beforeAll(async () => {
  fake = await startFakeComfyUI({ port: 0, sgldPlugin: true });
});
afterAll(async () => {
  await fake?.close();
});

describe('engine benchmark, dry run', () => {
  it('renders flux-dev, qwen-image and H3 on both engines with the same seeds and prints the ratio per model', async () => {
    const lines: string[] = [];
    const results = await runEngineBench({
      url: fake.url,
      models: ['flux-dev', 'qwen-image', 'h3'],
      runs: 2,
      seed: 7,
      dryRun: true,
      write: (l) => lines.push(l),
    });
    expect(results.map((r) => r.model)).toEqual(['imagegen-flux-dev', 'imagegen-qwen-image', 'videogen-minimax-h3']);
    for (const r of results) {
      for (const engine of ['comfyui', 'sglang'] as const) {
        expect(r.runs[engine].map((x) => x.seed)).toEqual([7, 8]);
        const classes = r.runs[engine].flatMap((x) => Object.values(x.graph).map((n) => n.class_type));
        if (engine === 'sglang') expect(classes).toEqual(expect.arrayContaining(['SGLDUNETLoader', 'SGLDOptions']));
        else expect(classes).not.toContain('SGLDUNETLoader');
        for (const x of r.runs[engine]) expect(x.output.length).toBeGreaterThan(0);
      }
      expect(Number.isFinite(r.ratio) && r.ratio > 0).toBe(true);
      expect(r.checks.map((c) => c.seed)).toEqual([7, 8]);
      for (const c of r.checks) expect(Number.isFinite(c.noise) && Number.isFinite(c.similarity)).toBe(true);
    }
    expect(results[2]!.runs.sglang[0]!.file).toMatch(/\.mp4$/);
    expect(lines).toContain('model                  comfyui (median)  sglang (median)  ratio (comfyui/sglang)');
    expect(lines.filter((l) => /^\s+seed \d+: sglang noise score/.test(l))).toHaveLength(6);
  });
});
