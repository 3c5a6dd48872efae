/**
 * The fake's SGLang plugin switch against the real server's verdicts on the sglang golden graphs
 * (test/fixtures/real-comfyui/sglang-golden-real.json): off, the same `missing_node_type` on the same node;
 * on, accepted with no node errors and run to the end like any other graph.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { SGLD_FIXTURE_URL, sgldPluginFromEnv } from '../../tools/fake-comfyui/sgld-plugin.ts';

const dir = new URL('../golden/sglang/', import.meta.url);
const goldens = readdirSync(dir)
  .filter((f) => f.endsWith('.json'))
  .sort();
const real = JSON.parse(readFileSync(new URL('../fixtures/real-comfyui/sglang-golden-real.json', import.meta.url), 'utf8')) as Record<
  string,
  Record<string, { status: number; response: Record<string, unknown> }>
>;

let off: FakeComfyUI;
let on: FakeComfyUI;
beforeAll(async () => {
  [off, on] = await Promise.all([startFakeComfyUI({ port: 0, sgldPlugin: false }), startFakeComfyUI({ port: 0, sgldPlugin: true })]);
});
afterAll(async () => {
  await Promise.all([off?.close(), on?.close()]);
});

async function post(url: string, graph: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${url}/prompt`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ prompt: graph }) });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

describe("fake ComfyUI with and without SGLang's plugin", () => {
  it("serves the plugin's 9 node classes only when told", async () => {
    const names = async (url: string) => Object.keys((await (await fetch(`${url}/object_info`)).json()) as object).filter((k) => k.startsWith('SGLD'));
    expect(await names(off.url)).toEqual([]);
    expect((await names(on.url)).sort()).toEqual(Object.keys(JSON.parse(readFileSync(SGLD_FIXTURE_URL, 'utf8'))).sort());
    expect(sgldPluginFromEnv({ FAKE_COMFYUI_SGLD_PLUGIN: '1' })).toBe(true);
    expect(sgldPluginFromEnv({})).toBe(false);
  });

  it.each(goldens.filter((f) => !/ref|inpaint|img2img|fl2va/.test(f)))('%s: the real verdicts, both ways', async (f) => {
    const graph = JSON.parse(readFileSync(new URL(f, dir), 'utf8')) as unknown;
    const without = await post(off.url, graph);
    expect(without.status).toBe(real['no-plugin']![f]!.status);
    expect(without.json.error).toEqual(real['no-plugin']![f]!.response.error);
    const withPlugin = await post(on.url, graph);
    expect(withPlugin.status).toBe(200);
    expect(withPlugin.json.node_errors).toEqual({});
  });
});
