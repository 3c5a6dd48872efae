import tseslint from 'typescript-eslint';
export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', 'dist.build-*/', 'coverage/', '.tmp/', 'data/', '.venv-*/'] },
  { files: ['**/*.ts'], languageOptions: { parser: tseslint.parser }, rules: { 'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true, IIFEs: true }] } },
);
