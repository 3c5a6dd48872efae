/**
 * The import rules `npm run lint:deps` checks (run by `npm test` before the tests): no import cycles in src/
 * or tools/, type-only imports included, and the layers point one way: only the HTTP front (src/api) and the
 * composition root (src/app) import src/api, so the CLI, operators, metrics, images and models never
 * depend on the HTTP layer; the service (src/) never imports the tools beside it (tools/, e.g. the fake
 * ComfyUI), the tests or the benchmarks, which may import src/.
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
