import { fileURLToPath } from 'node:url'
import { configDefaults, defineConfig } from 'vitest/config'

const src = (path: string) => fileURLToPath(new URL(`./src/${path}`, import.meta.url))

export default defineConfig({
  resolve: {
    // The examples import the package by name, as users do; tests run them against the sources.
    alias: [
      { find: /^xstate-plan-mode$/, replacement: src('index.ts') },
      { find: /^xstate-plan-mode\/node$/, replacement: src('node.ts') },
      { find: /^xstate-plan-mode\/ai-sdk$/, replacement: src('adapters/ai-sdk.ts') },
      { find: /^xstate-plan-mode\/inspect$/, replacement: src('adapters/inspect.ts') },
      { find: /^xstate-plan-mode\/testing$/, replacement: src('testing/index.ts') },
      { find: /^xstate-plan-mode\/postgres$/, replacement: src('adapters/postgres.ts') },
      { find: /^xstate-plan-mode\/guard$/, replacement: src('guard/index.ts') },
    ],
  },
  test: {
    include: ['test/**/*.test.ts'],
    // Two unpacks of the bundled Chromium (~190 MB each): a variation `npm run test:deep` runs.
    exclude: [...configDefaults.exclude, ...(process.env.PLAN_MODE_CHROMIUM === 'bundled' ? [] : ['test/browser-unpack.test.ts'])],
    // Built once per run, not per file: the web chat's page (test/global-setup.ts).
    globalSetup: ['test/global-setup.ts'],
    // Hang guards, not time limits: a test or hook waits on events, and these only end one that
    // never gets them. Generous, so that a busy machine (two copies of the suite at once) does not
    // turn slowness into failures.
    testTimeout: 120_000,
    hookTimeout: 300_000,
    // `expect.poll` waits for what the page or a server brings about: its cap too is a hang guard.
    expect: { poll: { timeout: 60_000 } },
    // Vitest's default is one worker fewer than the cores: one on these 2-core machines, so every
    // file ran after the other. Much of the suite waits (browsers, PostgreSQL, child processes):
    // two files at once keep `npm test` well under 5 minutes.
    maxWorkers: 2,
  },
})
