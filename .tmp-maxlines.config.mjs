import base from './eslint.config.js';
export default [...base, { files: ['**/*.ts'], rules: { 'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true, IIFEs: true }] } }];
