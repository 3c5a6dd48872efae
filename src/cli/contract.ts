/**
 * `comfy-durable contract <url>`: exercises the ComfyUI client against any ComfyUI (real or fake) with
 * model-free protocol checks (src/comfyui/contract.ts), so a protocol change upstream is caught before a
 * render fails in production, and reports, one line each, the node classes and model files the model
 * profiles need that this ComfyUI lacks (contract-profiles.ts).
 */
import { ComfyClient } from '../comfyui/client.ts';
import { runContractChecks, type ContractResult } from '../comfyui/contract.ts';
import { listProfiles, loadModelOverrides } from '../models/registry.ts';
import { profileChecks } from './contract-profiles.ts';

/** Protocol checks, then the profiles' needs read from the same `/object_info` the client uses. */
export async function runAllContractChecks(url: string): Promise<ContractResult[]> {
  const results = await runContractChecks(url);
  const client = new ComfyClient({ baseUrl: url });
  try {
    results.push(...profileChecks(listProfiles(), await client.objectInfo()));
  } catch (err) {
    results.push({ name: 'the model profiles can be checked against /object_info', ok: false, detail: err instanceof Error ? err.message : String(err) });
  } finally {
    await client.close();
  }
  return results;
}
import { sanitizeForTerminal } from './sanitize.ts';

export async function runContract(args: string[]): Promise<number> {
  const url = args[0] ?? process.env.COMFYUI_URL;
  if (!url) {
    process.stderr.write('usage: comfy-durable contract <comfyui-url>\n');
    return 2;
  }
  // The profiles as the service runs them: the operator's MODELS_CONFIG decides files and engines.
  const config = process.env.MODELS_CONFIG;
  try {
    loadModelOverrides(config);
  } catch (err) {
    process.stderr.write(`${sanitizeForTerminal((err as Error).message)}\n`);
    return 2;
  }
  if (config) process.stdout.write(sanitizeForTerminal(`model profiles from MODELS_CONFIG ${config}\n`));
  const results = await runAllContractChecks(url);
  let failed = 0;
  for (const r of results) {
    if (!r.ok) failed++;
    process.stdout.write(sanitizeForTerminal(`${r.ok ? 'ok  ' : 'FAIL'} ${r.name}${r.detail ? `: ${r.detail}` : ''}\n`));
  }
  process.stdout.write(`${results.length - failed} passed, ${failed} failed\n`);
  return failed === 0 ? 0 : 1;
}
