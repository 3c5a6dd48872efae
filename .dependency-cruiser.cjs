/**
 * The import rules `npm run lint:deps` checks (run by `npm test` before the tests): no import cycles in src/
 * or tools/, type-only imports included, and the layers point one way: only the HTTP front (src/api) and the
 * composition root (src/app) import src/api, so the CLI, operators, metrics, images and models never
 * depend on the HTTP layer; no protocol folder imports another, and the neutral request (src/request) knows
 * none; the ComfyUI client knows no models, models know no requests or renders, workflow code imports no I/O
 * layer (of the activities only their interfaces), the render contracts (src/render) import no layer above
 * them, activities never reach up into submission, the resolver or the front, and only src/app imports the
 * CLI; the service (src/) never imports the tools beside it (tools/, e.g. the fake ComfyUI), the tests or the
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
      to: { path: '^src/(models|request|renders|activities|workflows|operators|api|app|cli|worker)/' },
    },
    {
      name: 'models-below-requests-and-renders',
      comment: 'src/models is all model knowledge: it builds graphs from a RenderRequest and imports no layer that uses it.',
      severity: 'error',
      from: { path: '^src/models/' },
      to: { path: '^src/(request|renders|activities|workflows|operators|api|app|cli|worker)/' },
    },
    {
      name: 'neutral-request-below-renders',
      comment: 'src/request resolves a neutral request into a RenderRequest; submission, workflows and operators sit above it.',
      severity: 'error',
      from: { path: '^src/request/' },
      to: { path: '^src/(renders|activities|workflows|operators|app|cli|worker)/' },
    },
    {
      name: 'workflows-deterministic',
      comment:
        'Workflow code is replayed: it imports only contracts, its own folder and pure helpers, never I/O layers (the search-attribute keys are plain definitions; of the activities only their interfaces, activities/types.ts).',
      severity: 'error',
      from: { path: '^src/workflows/' },
      to: {
        path: '^src/(api|app|cli|comfyui|blobs|backends|bytes|images|request|renders|operators|metrics|tracing|worker|temporal|gpu|activities)/',
        pathNot: '^src/(temporal/search-attributes|activities/types)[.]ts$',
      },
    },
    {
      name: 'render-contracts-below-everything-that-uses-them',
      comment: 'src/render holds the render types and pure helpers every layer shares: it imports none of the layers that use it.',
      severity: 'error',
      from: { path: '^src/render/' },
      to: { path: '^src/(models|request|renders|activities|workflows|operators|api|app|cli|worker|gpu|backends|blobs|webhooks)/' },
    },
    {
      name: 'activities-below-submission-and-front',
      comment:
        'src/activities is the worker side of a render: it never reaches up into the submission service, the request resolver, the front or the process wiring.',
      severity: 'error',
      from: { path: '^src/activities/' },
      // The priority scale (renders/priority.ts) is a plain definition both sides read.
      to: { path: '^src/(renders|request|api|app|cli)/', pathNot: '^src/renders/priority[.]ts$' },
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
      comment: 'The fake ComfyUI stands beside the service: it may read models and the ComfyUI client, never the CLI, the front or the process wiring.',
      severity: 'error',
      from: { path: '^tools/' },
      to: { path: '^src/(cli|api|app)/' },
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
