// `npm run lint` (run by `npm test` before the tests): ESLint's and typescript-eslint's type-checked
// recommended rules over every TypeScript file, with zero warnings allowed. Regexes that can backtrack or
// move super-linearly are errors too: request text reaches many of them, and one such regex on a PNG's
// infotext stalled the service 16 s.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import regexp from 'eslint-plugin-regexp';

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', 'dist.build-*/', 'coverage/', '.tmp/', 'data/', '.venv-*/'] },
  {
    files: ['**/*.ts'],
    extends: [js.configs.recommended, ...tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      ecmaVersion: 'latest',
      sourceType: 'module',
      parserOptions: { project: './tsconfig.eslint.json', tsconfigRootDir: import.meta.dirname },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    plugins: { regexp },
    rules: {
      'regexp/no-super-linear-backtracking': ['error', { report: 'potential' }],
      'regexp/no-super-linear-move': ['error', { report: 'potential', ignoreSticky: false, ignorePartial: false }],
      'regexp/no-dupe-disjunctions': 'error',
      'regexp/no-misleading-capturing-group': 'error',
      'regexp/optimal-quantifier-concatenation': 'error',
      'regexp/no-useless-quantifier': 'error',
      // `_`-prefixed names are unused on purpose (`{ $schema: _drop, ...rest }` drops a key, `for (const _ of …)`).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { ignoreRestSiblings: true, argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' },
      ],
      // A variable a callback reads before its one assignment cannot be a const (it would throw in its dead zone).
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      // `async` here marks a promise contract (Fastify handlers, activities, the client and store interfaces and
      // their test doubles) and turns a throw into a rejection; dropping it to satisfy this rule would change
      // how those functions fail.
      '@typescript-eslint/require-await': 'off',
      // Functions a reader takes in at once. A longer one is split, or says beside it why it stays whole
      // (`// eslint-disable-next-line max-lines-per-function -- <reason>`). Nested functions count in their
      // parent's lines, so a plugin is measured with its routes.
      'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true, IIFEs: true }],
    },
  },
  {
    // Tests read response bodies as untyped JSON on purpose and check their shape with expect(); typing every
    // body would restate the assertions.
    files: ['test/**/*.ts'],
    rules: {
      // A describe() block is a list of cases, as long as the cases are; each case is its own function.
      'max-lines-per-function': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
);
