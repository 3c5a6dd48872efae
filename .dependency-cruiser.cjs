/**
 * The import rules `npm run lint:deps` checks (run by `npm test` before the tests): no import cycles in src/
 * or tools/, type-only imports included, and the layers point one way. From the bottom:
 * - src/contracts: what the front, the workflows and the activities agree on; imports no other layer;
 * - src/comfyui (a typed client that knows no models), src/models (all model knowledge), src/request (the
 *   neutral request and its resolver, which knows no protocol);
 * - src/workflows imports only src/contracts; src/activities never reaches up into submission, the
 *   resolver, the operators, the front or the workflows; nothing but the worker and the composition root
 *   reaches workflow or activity code (the rest goes through src/contracts);
 * - src/renders (submission), src/operators, src/progress and src/retention sit below the front;
 * - src/api: only itself and the composition root (src/app) import it; no protocol folder imports another;
 * - src/cli: only src/app imports it.
 * The service (src/) never imports the tools beside it (tools/, e.g. the fake ComfyUI), the tests or the
 * benchmarks, which may import src/ but not its CLI, front or process wiring.
 */
module.exports = {
  forbidden: [
    {
      name: 'no-cycles',
      comment: 'Modules that import each other, directly or through others: move what both need into a third module.',
      severity: 'error',
      from: { path: '^(src|tools)/' },
      to: { circular: true },
    },
    {
      name: 'http-layer-imported-only-by-the-front',
      comment: 'src/api is the HTTP adapter: what it shares with other layers belongs in a neutral module (src/errors, src/auth, src/renders).',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/(api|app)/' },
      to: { path: '^src/api/' },
    },
    {
      name: 'no-protocol-built-on-another',
      comment:
        'A protocol (src/api/<protocol>) maps its own fields into the neutral request (src/request); what two protocols share belongs there or in another neutral module, never in one of them.',
      severity: 'error',
      from: { path: '^src/api/(a1111|openai|video|comfyui)/' },
      to: { path: '^src/api/(a1111|openai|video|comfyui)/', pathNot: '^src/api/$1/' },
    },
    {
      name: 'neutral-request-knows-no-protocol',
      comment: 'src/request is the protocol-neutral request and its resolver: the protocols import it, never the reverse.',
      severity: 'error',
      from: { path: '^src/request/' },
      to: { path: '^src/api/' },
    },
    {
      name: 'comfyui-client-knows-no-models',
      comment: 'src/comfyui is a typed ComfyUI client: it knows nothing of models, requests, renders or the layers above it.',
      severity: 'error',
      from: { path: '^src/comfyui/' },
      to: { path: '^src/(contracts|models|request|renders|activities|workflows|operators|progress|retention|api|app|cli|worker)/' },
    },
    {
      name: 'models-below-requests-and-renders',
      comment: 'src/models is all model knowledge: it builds graphs from a RenderRequest and imports no layer that uses it.',
      severity: 'error',
      from: { path: '^src/models/' },
      to: { path: '^src/(request|renders|activities|workflows|operators|progress|retention|api|app|cli|worker)/' },
    },
    {
      name: 'neutral-request-below-renders',
      comment: 'src/request resolves a neutral request into a RenderRequest; submission, workflows and operators sit above it.',
      severity: 'error',
      from: { path: '^src/request/' },
      to: { path: '^src/(renders|activities|workflows|operators|progress|retention|app|cli|worker)/' },
    },
    {
      name: 'contracts-below-everything-that-uses-them',
      comment:
        'src/contracts is what the front, the workflows and the activities agree on (render types, workflow signatures, signals and queries, activity interfaces, failure types, task queues, search attributes): plain definitions and pure helpers that import only each other and the ComfyUI graph types, never a layer that uses them.',
      severity: 'error',
      from: { path: '^src/contracts/' },
      to: { path: '^src/', pathNot: '^src/(contracts/|comfyui/graph[.]ts$)' },
    },
    {
      name: 'contracts-and-workflows-use-no-node-modules',
      comment: 'Contracts are read inside the workflow sandbox and workflow code is replayed: no Node built-in (fs, crypto, timers) may reach either.',
      severity: 'error',
      from: { path: '^src/(contracts|workflows)/' },
      to: { dependencyTypes: ['core'] },
    },
    {
      name: 'workflows-import-only-contracts',
      comment:
        'Workflow code is replayed: it imports only the contracts and its own folder (and @temporalio/workflow), never an I/O layer nor the activities themselves (it calls them through their interfaces, src/contracts/activities.ts).',
      severity: 'error',
      from: { path: '^src/workflows/' },
      to: { path: '^src/', pathNot: '^src/(workflows|contracts)/' },
    },
    {
      name: 'workflows-and-activities-reached-through-contracts',
      comment:
        'The front, the operators and the submission service start workflows by name and talk to them through src/contracts (signatures, signals, queries); only the worker (which bundles the workflows) and the composition root (which loads the activities) reach the code itself.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/(workflows|activities|worker|app)/' },
      to: { path: '^src/(workflows|activities)/' },
    },
    {
      name: 'activities-below-submission-and-front',
      comment:
        'src/activities is the worker side of a render: it never reaches up into the submission service, the request resolver, the operators, the front, the workflows or the process wiring (what both sides read is in src/contracts).',
      severity: 'error',
      from: { path: '^src/activities/' },
      to: { path: '^src/(renders|request|operators|api|app|cli|worker|workflows)/' },
    },
    {
      name: 'live-progress-and-retention-below-the-front',
      comment:
        'src/progress (live progress and the worker-to-front preview channel) and src/retention (prune, the schedule) are read by the front, the CLI and the worker: they import none of those.',
      severity: 'error',
      from: { path: '^src/(progress|retention)/' },
      to: { path: '^src/(renders|request|api|app|cli|worker|activities|workflows)/' },
    },
    {
      name: 'operators-below-the-front',
      comment: 'src/operators (read views of renders and the commands on them) is shared by the CLI and the HTTP routes: it imports neither, nor the worker.',
      severity: 'error',
      from: { path: '^src/operators/' },
      to: { path: '^src/(api|app|cli|worker|activities|workflows)/' },
    },
    {
      name: 'cli-is-the-top',
      comment: 'src/cli holds the commands: only the composition root (src/app) and the CLI itself import it.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/(cli|app)/' },
      to: { path: '^src/cli/' },
    },
    {
      name: 'tools-use-the-service-not-its-commands',
      comment:
        'The fake ComfyUI stands beside the service: it may read models, the contracts and the ComfyUI client, never the CLI, the front, the process wiring, nor the render machinery it is a stand-in for the other side of.',
      severity: 'error',
      from: { path: '^tools/' },
      to: { path: '^src/(cli|api|app|worker|renders|request|workflows|activities|operators|progress|retention)/' },
    },
    {
      name: 'service-never-imports-tools-or-tests',
      comment: 'src/ is what ships: tools/ (the fake ComfyUI), test/ and bench/ stand beside it and may import it, never the reverse.',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(tools|test|bench)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // Type-only imports count: a cycle of types is still two modules that cannot be understood apart.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
