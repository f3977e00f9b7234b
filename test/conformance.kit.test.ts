import { execFile } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { build } from 'esbuild'
import { describe, expect, it } from 'vitest'
import { createMemorySessionLog, createPlanMode, type PlanAgent, type SessionLog, type UserMessage } from '../src/index.js'
import {
  ConformanceError,
  checkConformance,
  checkDurableReviews,
  conformanceScenarios,
  durableReviewScenarios,
  type ConformanceAgent,
  type DurableConformanceAgent,
} from '../src/testing/index.js'
import { createHostService, driverBasics, durableReviewUi } from './fixtures/conformance-host.js'

/**
 * The kit itself (issue #26): scenarios as plain async functions that throw, and the `node:test`
 * wrapper run by `node --test` (the stock AI SDK drivers run in test/conformance.ai-sdk.test.ts).
 */
const SECTION = 'PLAN MODE: explore and design; present the plan with exit_plan_mode.'

/** The memory host of the kit's own tests, with no restart unless asked. */
function memoryAgent(log: SessionLog = createMemorySessionLog()): ConformanceAgent {
  const { planMode, reviews } = createHostService(SECTION)
  const steered: UserMessage[] = []
  const agent: PlanAgent = { id: 'agent-1', session: log, steer: (message) => steered.push(message) }
  return { ...driverBasics(log, planMode, agent), nextReview: reviews.nextReview, steered: () => steered }
}

/** A durable host that tells outcomes at the next step (its answers carry no toldInResult), with a callResult all the same. */
function nextStepAgent(log: SessionLog): DurableConformanceAgent {
  const planMode = createPlanMode({ section: SECTION, review: 'durable', logger: { warn: () => {} } })
  const agent: PlanAgent = { id: 'agent-1', session: log }
  return {
    ...driverBasics(log, planMode, agent),
    ...durableReviewUi(planMode, agent),
    callResult: async () => ({ isError: false, text: 'Plan approved — plan mode exited; carry out the plan starting with your next step.' }),
    async restart() {
      await planMode.dispose()
      return nextStepAgent(log)
    },
  }
}

describe('the conformance kit: plain async scenarios that throw', () => {
  it('R4: conformanceScenarios lists every scenario by rule; checkConformance passes a conforming host and reports the ones without restart() as skipped', async () => {
    const titles = conformanceScenarios({ createHost: () => ({ section: SECTION, createAgent: () => memoryAgent() }) }).map((scenario) => scenario.title)
    expect(titles.every((title) => /^R\d+/.test(title))).toBe(true)
    const report = await checkConformance({ name: 'memory host', createHost: () => ({ section: SECTION, createAgent: () => memoryAgent() }) })
    expect(report.skipped.map((skip) => skip.reason)).toEqual(['the driver has no restart()', 'the driver has no restart()'])
    expect([...report.passed, ...report.skipped.map((skip) => skip.title)].sort()).toEqual([...titles].sort())
  })

  it('R32, R33: checkConformance throws a ConformanceError naming each scenario a host breaks, with the spec’s text it missed', async () => {
    // A host that forgets the notices: it sends the section, never the switch.
    const forgetful = (): ConformanceAgent => {
      const driver = memoryAgent()
      return { ...driver, step: async (options) => ({ ...(await driver.step(options)), notices: [] }) }
    }
    const error = await checkConformance({ name: 'forgetful host', createHost: () => ({ section: SECTION, createAgent: forgetful }) }).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(ConformanceError)
    const { failures, message } = error as ConformanceError
    expect(failures.map((failure) => failure.title)).toContain('R32: a switch between steps is narrated once, at the next step (R33, R20)')
    expect(message).toMatch(/^xstate-plan-mode conformance: forgetful host: \d+ scenarios failed:\n- R/)
    expect(failures.every((failure) => (failure.error as Error).name === 'AssertionError')).toBe(true)
  })

  it('R81, R135: the told-in-result scenarios fail a host that tells the outcome at the next step, naming the approval and keep-planning scenarios', async () => {
    const createHost = () => ({ section: SECTION, createAgent: () => nextStepAgent(createMemorySessionLog()) })
    await expect(checkDurableReviews({ createHost })).resolves.toMatchObject({ skipped: [] })
    const error = (await checkDurableReviews({ name: 'next-step host', toldInResult: true, createHost }).catch((caught: unknown) => caught)) as ConformanceError
    expect(error).toBeInstanceOf(ConformanceError)
    expect(error.failures.map((failure) => failure.title)).toEqual([
      'R80: an approval in a second process is told in the waiting call’s result in a third, and at no step (R81, R135, R47)',
      'R80: keep planning with feedback reaches the model in the waiting call’s result, and the review closes (R45, R81, R135)',
      'R80: a review is answered once; a second answer is refused and changes nothing',
      // Its callResult() tells an approval whatever the outcome: the dismissal's text is R46's.
      'R136: the user’s dismissal in a second process is recorded as the user’s; plan mode stays, and the waiting call gets R46’s text (R135)',
    ])
    expect(durableReviewScenarios({ createHost, toldInResult: true }).length).toBe(durableReviewScenarios({ createHost }).length)
  })

  it('R81: told in the result, a driver without callResult() fails every scenario with a TypeError saying so', async () => {
    const createHost = () => ({ section: SECTION, createAgent: () => ({ ...nextStepAgent(createMemorySessionLog()), callResult: undefined }) })
    const [first] = durableReviewScenarios({ createHost, toldInResult: true })
    await expect(first!.run()).rejects.toThrow(
      new TypeError('the durable review scenarios told in the result ({ toldInResult: true }) need a driver with callResult()'),
    )
  })
})

describe('the node:test wrapper', () => {
  it('R4: node --test runs xstate-plan-mode/testing/node’s suites on a host, built into one entry, and every scenario passes', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'plan-mode-node-test-'))
    try {
      const entry = join(dir, 'host.test.mjs')
      await build({
        stdin: {
          contents: [
            `import { createMemorySessionLog, createPlanMode } from 'xstate-plan-mode'`,
            `import { defineConformanceSuite, defineDurableReviewSuite } from 'xstate-plan-mode/testing/node'`,
            `import { createHostService, driverBasics, durableReviewUi } from './test/fixtures/conformance-host.ts'`,
            `const SECTION = ${JSON.stringify(SECTION)}`,
            `function driver(log = createMemorySessionLog()) {`,
            `  const { planMode, reviews } = createHostService(SECTION)`,
            `  const steered = []`,
            `  const agent = { id: 'agent-1', session: log, steer: (message) => steered.push(message) }`,
            `  return { ...driverBasics(log, planMode, agent), nextReview: reviews.nextReview, steered: () => steered,`,
            `    async restart() { await planMode.dispose(); return driver(log) } }`,
            `}`,
            `function durable(log) {`,
            `  const planMode = createPlanMode({ section: SECTION, review: 'durable', logger: { warn: () => {} } })`,
            `  const agent = { id: 'agent-1', session: log }`,
            `  return { ...driverBasics(log, planMode, agent), ...durableReviewUi(planMode, agent),`,
            `    async restart() { await planMode.dispose(); return durable(log) } }`,
            `}`,
            `defineConformanceSuite({ name: 'memory host', createHost: () => ({ section: SECTION, createAgent: () => driver() }) })`,
            `defineDurableReviewSuite({ name: 'durable host', createHost: () => ({ section: SECTION, createAgent: () => durable(createMemorySessionLog()) }) })`,
          ].join('\n'),
          resolveDir: join(import.meta.dirname, '..'),
          sourcefile: 'host.test.ts',
          loader: 'ts',
        },
        bundle: true,
        platform: 'node',
        format: 'esm',
        target: 'node20',
        outfile: entry,
        alias: {
          'xstate-plan-mode': './src/index.ts',
          'xstate-plan-mode/testing/node': './src/testing/node.ts',
        },
        logLevel: 'silent',
      })
      const { stdout } = await promisify(execFile)(process.execPath, ['--test', '--test-reporter=tap', entry], {
        cwd: join(import.meta.dirname, '..'),
      })
      const count = (key: string) => Number(new RegExp(`^# ${key} (\\d+)$`, 'm').exec(stdout)?.[1])
      expect({ fail: count('fail'), skipped: count('skipped') }).toEqual({ fail: 0, skipped: 0 })
      const createHost = () => ({ section: SECTION, createAgent: () => memoryAgent() })
      expect(count('pass')).toBe(conformanceScenarios({ createHost }).length + durableReviewScenarios({ createHost: () => ({ section: SECTION, createAgent: () => nextStepAgent(createMemorySessionLog()) }) }).length)
      expect(stdout).toContain('ok 1 - R4: a new agent starts inactive, and its first step carries no section and no notice (R36)')
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  }, 120_000) // a hang guard, not a time limit: the bundle and the child on a busy machine
})
