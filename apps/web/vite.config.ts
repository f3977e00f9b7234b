import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vite'
import { recordSources } from './build.mjs'

/**
 * Builds the web chat's page (`apps/web/page/`) into `apps/web/dist/`, which the server serves. The page
 * imports the package by name, as a user's app does; here the names resolve to the sources.
 * `npm start` builds through `apps/web/build.mjs`, which skips a build whose sources are unchanged (R111):
 * `recordSources` writes down what this build read.
 */
const src = (path: string) => fileURLToPath(new URL(`../../src/${path}`, import.meta.url))

export default defineConfig({
  root: fileURLToPath(new URL('./page/', import.meta.url)),
  base: '/',
  logLevel: 'warn',
  resolve: {
    alias: [{ find: /^xstate-plan-mode$/, replacement: src('index.ts') }],
  },
  plugins: [recordSources()],
  oxc: { jsx: { runtime: 'automatic', importSource: 'react' } },
  build: {
    outDir: fileURLToPath(new URL('./dist/', import.meta.url)),
    emptyOutDir: true,
    chunkSizeWarningLimit: 4096,
    sourcemap: false,
    rolldownOptions: {
      // swr (under @ai-sdk/react) marks its modules 'use client', a directive for React Server
      // Components bundlers that means nothing in this client-only bundle.
      onLog(level, log, handler) {
        if (log.code === 'MODULE_LEVEL_DIRECTIVE') return
        handler(level, log)
      },
    },
  },
})
