/**
 * `comfy-durable contract <url>`: exercises the ComfyUI client against any ComfyUI (real or fake) with
 * model-free protocol checks (src/comfyui/contract.ts), so a protocol change upstream is caught before a
 * render fails in production, and reports, one line each, the node classes and model files the model
 * profiles need that this ComfyUI lacks (contract-profiles.ts), then which models are unusable there.
 *
 * Exit code: 0 every check passed; 1 a protocol check failed (the client and this ComfyUI disagree);
 * 3 the protocol holds but the models on the last line cannot render here (switch them off in
 * MODELS_CONFIG, or install what they lack), or a workflow file (WORKFLOWS_DIR) names a node or input this
 * ComfyUI lacks; 2 usage or MODELS_CONFIG errors.
 */
import { existsSync } from 'node:fs';
import { ComfyClient } from '../comfyui/client.ts';
import { runContractChecks, type ContractResult } from '../comfyui/contract.ts';
import { profileNeeds } from '../models/availability.ts';
import { disabledModels, listProfiles, loadModelOverrides } from '../models/registry.ts';
import { formatNeeds, segmentationLines, unusableProfiles } from './contract-profiles.ts';
import { segmentationNeeds } from '../models/segmentation.ts';
import { sanitizeForTerminal } from './sanitize.ts';
import type { ObjectInfo } from '../comfyui/object-info.ts';
import { checkWorkflow, loadWorkflowFiles, SHIPPED_WORKFLOWS_DIR } from '../workflow-files/manifest.ts';

export const EXIT_PROTOCOL = 1;
export const EXIT_MODELS_UNUSABLE = 3;

export interface ContractReport {
  /** Protocol checks, then the profiles' needs. */
  results: ContractResult[];
  /** Model ids that lack a node class or a file on this ComfyUI. */
  unusable: string[];
  /** Workflow files that name a node class or an input this ComfyUI lacks. */
  unusableWorkflows: string[];
  /** The protocol checks (and reading /object_info) all passed. */
  protocolOk: boolean;
}

/** Each workflow file (WORKFLOWS_DIR, default the shipped ones) against this ComfyUI's nodes and inputs. */
function workflowFileChecks(nodes: ObjectInfo): Array<ContractResult & { workflow: string }> {
  const dir = process.env.WORKFLOWS_DIR || SHIPPED_WORKFLOWS_DIR;
  if (!existsSync(dir)) return [];
  return loadWorkflowFiles(dir).map((wf) => {
    const problems = checkWorkflow(wf, nodes);
    return {
      workflow: wf.name,
      name: `workflow file ${wf.name} matches /object_info`,
      ok: problems.length === 0,
      ...(problems.length > 0 ? { detail: problems.join('; ') } : {}),
    };
  });
}

/** Protocol checks, then the profiles' needs read from the same `/object_info` the client uses. */
export async function runAllContractChecks(url: string): Promise<ContractReport> {
  const results = await runContractChecks(url);
  let protocolOk = results.every((r) => r.ok);
  let unusable: string[] = [];
  let unusableWorkflows: string[] = [];
  const client = new ComfyClient({ baseUrl: url });
  try {
    const info = await client.objectInfo();
    const profiles = listProfiles();
    const needs = profileNeeds(profiles, info);
    unusable = unusableProfiles(needs);
    results.push(...formatNeeds(profiles, needs, info));
    results.push(...segmentationLines(segmentationNeeds(info)));
    const workflows = workflowFileChecks(info);
    unusableWorkflows = workflows.filter((w) => !w.ok).map((w) => w.workflow);
    results.push(...workflows.map(({ workflow: _workflow, ...r }) => r));
  } catch (err) {
    protocolOk = false;
    results.push({ name: 'the model profiles can be checked against /object_info', ok: false, detail: err instanceof Error ? err.message : String(err) });
  } finally {
    await client.close();
  }
  return { results, unusable, unusableWorkflows, protocolOk };
}

export async function runContract(args: string[]): Promise<number> {
  const url = args[0] ?? process.env.COMFYUI_URL;
  if (!url) {
    process.stderr.write('usage: comfy-durable contract <comfyui-url>\n');
    return 2;
  }
  // The profiles as the service runs them: the operator's MODELS_CONFIG decides files, engines and which are on.
  const config = process.env.MODELS_CONFIG;
  try {
    loadModelOverrides(config);
  } catch (err) {
    process.stderr.write(`${sanitizeForTerminal((err as Error).message)}\n`);
    return 2;
  }
  const write = (line: string): boolean => process.stdout.write(sanitizeForTerminal(`${line}\n`));
  if (config) write(`model profiles from MODELS_CONFIG ${config}`);
  const off = disabledModels();
  if (off.length > 0) write(`switched off in MODELS_CONFIG (not checked): ${off.join(', ')}`);
  const { results, unusable, unusableWorkflows, protocolOk } = await runAllContractChecks(url);
  let failed = 0;
  let missing = 0;
  for (const r of results) {
    if (!r.ok && r.optional) missing++;
    else if (!r.ok) failed++;
    write(`${r.ok ? 'ok  ' : r.optional ? 'miss' : 'FAIL'} ${r.name}${r.detail ? `: ${r.detail}` : ''}`);
  }
  write(`${results.length - failed - missing} passed, ${failed} failed${missing > 0 ? `, ${missing} optional missing` : ''}`);
  if (unusable.length > 0) {
    const example = JSON.stringify(Object.fromEntries(unusable.map((id) => [id, { enabled: false }])));
    write(`unusable models on this ComfyUI: ${unusable.join(', ')} (install what they lack, or switch them off with MODELS_CONFIG: ${example})`);
  }
  if (unusableWorkflows.length > 0) write(`unusable workflow files on this ComfyUI: ${unusableWorkflows.join(', ')}`);
  if (!protocolOk) return EXIT_PROTOCOL;
  return unusable.length > 0 || unusableWorkflows.length > 0 ? EXIT_MODELS_UNUSABLE : 0;
}
