/**
 * Custom-node packages the client can explain when their nodes are missing or their loaders fail, so an
 * operator reads what to install or fix instead of a validation dump. The client knows no package itself:
 * whoever uses one registers it (the model engines register theirs, src/models/engines), and the client
 * looks a node class up here. Keyed by node class: the client knows node classes, not model profiles.
 */

export interface CustomNodePackage {
  /** Folder name under ComfyUI's custom_nodes. */
  name: string;
  /** Where it comes from. */
  source: string;
  /** Why its nodes are most likely absent. */
  likelyCause: string;
  /** Whether `classType` is one of its nodes. */
  hasNode(classType: string): boolean;
  /** Exceptions its nodes raise, each with what the operator must change (deterministic: retrying cannot help). */
  failureHints?: ReadonlyArray<readonly [RegExp, string]>;
}

const registered: CustomNodePackage[] = [];

/** Makes `packages` known to the client (a package registered twice, by name, is kept once). */
export function registerCustomNodePackages(packages: readonly CustomNodePackage[]): void {
  for (const pkg of packages) {
    if (!registered.some((p) => p.name === pkg.name)) registered.push(pkg);
  }
}

/** The package a node class comes from, when it is one registered. */
export function packageOfNode(classType: string | null | undefined): CustomNodePackage | undefined {
  if (!classType) return undefined;
  return registered.find((p) => p.hasNode(classType));
}

/** "it comes from X (source); likely cause: ..." for a missing node of a known package, else undefined. */
export function missingNodeExplanation(classType: string | null | undefined): string | undefined {
  const pkg = packageOfNode(classType);
  return pkg ? `it comes from custom node ${pkg.name} (${pkg.source}); likely cause: ${pkg.likelyCause}` : undefined;
}

/** What to do about an exception of a node of a known package, or undefined when nothing specific is known. */
export function executionHint(nodeType: string | undefined, exceptionMessage: string): string | undefined {
  const pkg = packageOfNode(nodeType);
  for (const [pattern, hint] of pkg?.failureHints ?? []) {
    if (pattern.test(exceptionMessage)) return `${pkg!.name}: ${hint}`;
  }
  return undefined;
}
