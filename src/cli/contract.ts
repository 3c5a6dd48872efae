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
import { existsSync } from 'node:fs';
import type { ObjectInfo } from '../comfyui/object-info.ts';
import { checkWorkflow, loadWorkflowFiles, SHIPPED_WORKFLOWS_DIR } from '../workflow-files/manifest.ts';

/** Each workflow file (WORKFLOWS_DIR, default the shipped ones) against this ComfyUI's nodes and inputs. */
function workflowFileChecks(nodes: ObjectInfo): ContractResult[] {
  const dir = process.env.WORKFLOWS_DIR || SHIPPED_WORKFLOWS_DIR;
  if (!existsSync(dir)) return [];
  return loadWorkflowFiles(dir).map((wf) => {
    const problems = checkWorkflow(wf, nodes);
    return {
      name: `workflow file ${wf.name} matches /object_info`,
      ok: problems.length === 0,
      ...(problems.length > 0 ? { detail: problems.join('; ') } : {}),
    };
  });
}

/** Protocol checks, then the profiles' needs read from the same `/object_info` the client uses. */
export async function runAllContractChecks(url: string): Promise<ContractResult[]> {
  const results = await runContractChecks(url);
  const client = new ComfyClient({ baseUrl: url });
  try {
    const nodes = await client.objectInfo();
    results.push(...profileChecks(listProfiles(), nodes));
    results.push(...workflowFileChecks(nodes));
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
