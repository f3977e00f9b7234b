/**
 * The conformance kit (`xstate-plan-mode/testing`) on the OpenAI Agents SDK adapter, through the
 * stock drivers `xstate-plan-mode/openai-agents` ships: the channel suite (both decision sets), and
 * the durable suite told in the result (the SDK's tool approval keeps the exit call waiting), on a
 * memory log and on a JSONL log each restarted process reopens.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { conformanceDriver, durableConformanceDriver } from '../src/adapters/openai-agents.js'
import { createMemorySessionLog, type SessionLog } from '../src/index.js'
import { openJsonlSessionLog } from '../src/node.js'
import { describe, expect, it } from 'vitest'
import { defineConformanceSuite, defineDurableReviewSuite } from '../src/testing/index.js'

const SECTION = 'PLAN MODE: explore and design; present the plan with exit_plan_mode.'

for (const decisions of ['approve-or-keep', 'all'] as const) {
  defineConformanceSuite({
    name: `OpenAI Agents SDK (withPlanMode, conformanceDriver), decisions ${decisions}`,
    decisions,
    createHost: () => ({ section: SECTION, createAgent: () => conformanceDriver({ section: SECTION, log: createMemorySessionLog(), decisions }) }),
  })
}

defineDurableReviewSuite({
  name: 'OpenAI Agents SDK (withPlanMode, durableConformanceDriver), memory log',
  toldInResult: true,
  createHost: () => ({ section: SECTION, createAgent: () => durableConformanceDriver({ section: SECTION, log: createMemorySessionLog() }) }),
})

defineDurableReviewSuite({
  name: 'OpenAI Agents SDK (withPlanMode, durableConformanceDriver), a JSONL log reopened by each process',
  toldInResult: true,
  createHost: async () => {
    const dir = await mkdtemp(join(tmpdir(), 'plan-mode-openai-conformance-'))
    const open: SessionLog[] = []
    const reopen = async (log: SessionLog) => {
      await (log as SessionLog & { close(): Promise<void> }).close()
      const next = await openJsonlSessionLog(join(dir, 'session.jsonl'))
      open.push(next)
      return next
    }
    const first = await openJsonlSessionLog(join(dir, 'session.jsonl'))
    open.push(first)
    return {
      section: SECTION,
      createAgent: () => durableConformanceDriver({ section: SECTION, log: first, reopen }),
      async dispose() {
        await Promise.all(open.map((log) => (log as SessionLog & { close(): Promise<void> }).close().catch(() => {})))
        await rm(dir, { recursive: true, force: true })
      },
    }
  },
})

describe('the stock drivers of xstate-plan-mode/openai-agents', () => {
  it('R159: restart() disposes the process\'s service and serves the agent anew over the log, keeping the paused run', async () => {
    const driver = durableConformanceDriver({ section: SECTION, log: createMemorySessionLog() })
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
