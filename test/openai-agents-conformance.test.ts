/**
 * The conformance kit on the OpenAI Agents SDK adapter, through the stock drivers the package
 * ships (`xstate-plan-mode/testing/openai-agents`): the channel suite (both decision sets), and the
 * durable suite told in the result (the SDK's tool approval keeps the exit call waiting), on a
 * memory log and on a JSONL log each restarted process closes and opens again.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { conformanceSuites } from '../src/testing/openai-agents.js'
import type { SessionLog } from '../src/index.js'
import { openJsonlSessionLog } from '../src/node.js'
import { defineConformanceSuite, defineDurableReviewSuite } from '../src/testing/index.js'

const SECTION = 'PLAN MODE: explore and design; present the plan with exit_plan_mode.'

const suites = conformanceSuites({ section: SECTION })
defineConformanceSuite(suites.channel)
defineConformanceSuite(conformanceSuites({ section: SECTION, decisions: 'all', name: 'OpenAI Agents SDK withPlanMode, four decisions' }).channel)
defineDurableReviewSuite(suites.durable)

/** JSONL logs in temp dirs: each scenario's own file, reopened by each restarted process. */
const dirs: string[] = []
const opened: (SessionLog & { close(): Promise<void> })[] = []
const jsonl = conformanceSuites({
  section: SECTION,
  name: 'OpenAI Agents SDK withPlanMode, a JSONL log reopened by each process',
  async createLog() {
    const dir = await mkdtemp(join(tmpdir(), 'plan-mode-openai-conformance-'))
    dirs.push(dir)
    const log = await openJsonlSessionLog(join(dir, 'session.jsonl'))
    opened.push(log)
    return log
  },
  async reopenLog(log) {
    await (log as SessionLog & { close(): Promise<void> }).close()
    const dir = dirs.at(-1)! // the scenarios run one at a time: the last dir is this scenario's
    const next = await openJsonlSessionLog(join(dir, 'session.jsonl'))
    opened.push(next)
    return next
  },
})
defineDurableReviewSuite({
  ...jsonl.durable,
  createHost: async () => {
    const host = await jsonl.durable.createHost()
    return {
      ...host,
      async dispose() {
        await Promise.all(opened.splice(0).map((log) => log.close().catch(() => {})))
        await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })))
      },
    }
  },
})

describe('the stock drivers of xstate-plan-mode/testing/openai-agents', () => {
  it('R159: the durable driver\'s restart() disposes the process\'s service and serves the agent anew over the log, keeping the paused run', async () => {
    const host = await suites.durable.createHost()
    const driver = await host.createAgent()
    await driver.command('')
    await driver.startTurn()
    const submitted = await driver.callExitTool({ plan: '# Ship it\n\n1. Ship.' })
    expect(submitted).toMatchObject({ submitted: true })
    const next = await driver.restart()
    expect(() => driver.get()).toThrow('plan-mode service is disposed')
    expect(await next.answerReview((submitted as { reviewId: string }).reviewId, { answers: [{ id: 'plan-review', selected: ['Approve'] }] })).toBe('approved')
    const carrying = await next.restart()
    expect(await carrying.callResult!()).toEqual({ isError: false, text: 'Plan approved — plan mode exited; carry out the plan starting with your next step.' })
  })
})
