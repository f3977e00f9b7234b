import { defineConfig } from 'tsup'

export default defineConfig({
  entry: {
    index: 'src/index.ts',
    node: 'src/node.ts',
    'ai-sdk': 'src/adapters/ai-sdk.ts',
    inspect: 'src/adapters/inspect.ts',
    testing: 'src/testing/index.ts',
  },
  format: ['esm', 'cjs'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'node20',
  // Peers are the host's own copies.
  external: ['ai', 'vitest', 'xstate', '@statelyai/inspect', 'ws'],
})
