import { fileURLToPath } from 'node:url'
import { configDefaults, defineConfig } from 'vitest/config'
import { LongestFirstSequencer } from './test/sequencer.js'

const src = (path: string) => fileURLToPath(new URL(`./src/${path}`, import.meta.url))

/** Test files that replace a module with `vi.mock`: they run isolated (see `projects` below). */
const ISOLATED = ['test/cli-workspace-tools.test.ts']
/**
 * What only `npm run test:deep` runs: two unpacks of the bundled Chromium (~190 MB each), and the
 * PGlite cache made again from a broken one (a fresh initdb, ~8 s of CPU). Neither is a rule's test.
 */
const DEEP_ONLY = [
  ...(process.env.PLAN_MODE_CHROMIUM === 'bundled' ? [] : ['test/browser-unpack.test.ts']),
  ...(process.env.PLAN_MODE_DEEP === '1' ? [] : ['test/pglite-cache.test.ts']),
]

export default defineConfig({
  resolve: {
    // The examples import the package by name, as users do; tests run them against the sources.
    alias: [
      { find: /^xstate-plan-mode$/, replacement: src('index.ts') },
      { find: /^xstate-plan-mode\/node$/, replacement: src('node.ts') },
      { find: /^xstate-plan-mode\/ai-sdk$/, replacement: src('adapters/ai-sdk.ts') },
      { find: /^xstate-plan-mode\/openai-agents$/, replacement: src('adapters/openai-agents.ts') },
      { find: /^xstate-plan-mode\/inspect$/, replacement: src('adapters/inspect.ts') },
      { find: /^xstate-plan-mode\/testing$/, replacement: src('testing/index.ts') },
      { find: /^xstate-plan-mode\/testing\/scenarios$/, replacement: src('testing/scenarios.ts') },
      { find: /^xstate-plan-mode\/testing\/node$/, replacement: src('testing/node.ts') },
      { find: /^xstate-plan-mode\/testing\/ai-sdk$/, replacement: src('testing/ai-sdk.ts') },
      { find: /^xstate-plan-mode\/testing\/openai-agents$/, replacement: src('testing/openai-agents.ts') },
      { find: /^xstate-plan-mode\/testing\/langgraph$/, replacement: src('testing/langgraph.ts') },
      { find: /^xstate-plan-mode\/postgres$/, replacement: src('adapters/postgres.ts') },
      { find: /^xstate-plan-mode\/guard$/, replacement: src('guard/index.ts') },
      { find: /^xstate-plan-mode\/langgraph$/, replacement: src('adapters/langgraph.ts') },
    ],
  },
  test: {
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
    // two files at once. Three measured no faster (two clones of one commit, minutes apart: 328 s with two,
    // 335 s with three, 9 % more CPU). `PLAN_MODE_TEST_WORKERS` overrides it.
    maxWorkers: Number(process.env.PLAN_MODE_TEST_WORKERS ?? 2),
    // The longest files first (test/sequencer.ts), also in a fresh clone, which has no durations
    // of a last run: else a long file starting last kept one worker busy long after the other.
    sequence: { sequencer: LongestFirstSequencer },
    // One module graph per worker, not one per file: each file importing the AI SDK, xstate and
    // the sources again was a third of the suite's CPU. The files that replace a module (vi.mock)
    // run in a project of their own, isolated, so their mocks never reach the others.
    projects: [
      { extends: true, test: { name: 'shared', isolate: false, setupFiles: ['test/setup-shared.ts'], include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, ...ISOLATED, ...DEEP_ONLY] } },
      { extends: true, test: { name: 'isolated', include: ISOLATED, isolate: true } },
    ],
  },
})
