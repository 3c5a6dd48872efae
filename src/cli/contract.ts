/**
 * `comfy-durable contract <url>`: exercises the ComfyUI client against any ComfyUI (real or fake) with
 * model-free checks, so a protocol change upstream is caught before a render fails in production.
 */
import { runContractChecks } from '../comfyui/contract.ts';

export async function runContract(args: string[]): Promise<number> {
  const url = args[0] ?? process.env.COMFYUI_URL;
  if (!url) {
    process.stderr.write('usage: comfy-durable contract <comfyui-url>\n');
    return 2;
  }
  const results = await runContractChecks(url);
  let failed = 0;
  for (const r of results) {
    if (!r.ok) failed++;
    process.stdout.write(`${r.ok ? 'ok  ' : 'FAIL'} ${r.name}${r.detail ? `: ${r.detail}` : ''}\n`);
  }
  process.stdout.write(`${results.length - failed} passed, ${failed} failed\n`);
  return failed === 0 ? 0 : 1;
}
