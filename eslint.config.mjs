// ESLint flat config for the VS Code extension and its end-to-end test drivers.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['extension/out/**', 'extension/bin/**', 'node_modules/**', '.ci-cache/**', 'target/**', 'pkg/**'] },
  js.configs.recommended,
  {
    files: ['extension/**/*.ts'],
    extends: [...tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: { project: './extension/tsconfig.json', tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        // node:test's describe/it return promises the runner itself awaits.
        { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['describe', 'it'] }] },
      ],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      eqeqeq: 'error',
      curly: ['error', 'multi-line'],
    },
  },
  {
    // Plain Node scripts that drive code-server and chromium.
    files: ['tests/vscode-e2e/**/*.js', 'extension/**/*.mjs'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: { require: 'readonly', module: 'writable', process: 'readonly', console: 'readonly', __dirname: 'readonly', setTimeout: 'readonly', Buffer: 'readonly', URL: 'readonly', Element: 'readonly' },
    },
  },
);
