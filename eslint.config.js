// Lint of src/ and tools/ run by `npm test` before the tests: regexes that can backtrack or move super-linearly are
// errors (request text reaches many of them; one such regex on a PNG's infotext stalled the service 16 s).
import tsParser from '@typescript-eslint/parser';
import regexp from 'eslint-plugin-regexp';

export default [
  {
    files: ['src/**/*.ts', 'tools/**/*.ts'],
    languageOptions: { parser: tsParser, ecmaVersion: 'latest', sourceType: 'module' },
    // Only the rules below run: directives for others (no-control-regex) are not unused.
    linterOptions: { reportUnusedDisableDirectives: 'off' },
    plugins: { regexp },
    rules: {
      'regexp/no-super-linear-backtracking': ['error', { report: 'potential' }],
      'regexp/no-super-linear-move': ['error', { report: 'potential', ignoreSticky: false, ignorePartial: false }],
      'regexp/no-dupe-disjunctions': 'error',
      'regexp/no-misleading-capturing-group': 'error',
      'regexp/optimal-quantifier-concatenation': 'error',
      'regexp/no-useless-quantifier': 'error',
    },
  },
];
