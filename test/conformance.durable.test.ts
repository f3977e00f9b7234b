import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createMemorySessionLog, createPlanMode, type PlanAgent, type SessionLog } from '../src/index.js'
import { openJsonlSessionLog } from '../src/node.js'
import { defineDurableReviewSuite, type DurableConformanceAgent } from '../src/testing/index.js'
import { driverBasics, durableReviewUi } from './fixtures/conformance-host.js'

/**
 * The conformance kit's durable-review scenarios (R78–R81) against two stateless hosts: every
 * `restart` is a new service, as a new request on another instance would be; one shares a memory
 * log, the other reopens a JSONL log from disk (the serverless recipe of the README).
 */
const SECTION = 'PLAN MODE: explore and design; present the plan with exit_plan_mode.'

/** A driver of one request's process: a new service over `log`; `reopen` gives the next process's log. */
function durableAgent(log: SessionLog, reopen: () => Promise<SessionLog>, close: () => Promise<void>): DurableConformanceAgent {
  const planMode = createPlanMode({ section: SECTION, review: 'durable', logger: { warn: () => {} } })
  const agent: PlanAgent = { id: 'agent-1', session: log }
  return {
    ...driverBasics(log, planMode, agent),
    ...durableReviewUi(planMode, agent),
    async restart() {
      await planMode.dispose()
      await close()
      const next = await reopen()
      return durableAgent(next, reopen, async () => {})
    },
  }
}

defineDurableReviewSuite({
  name: 'memory log shared by stateless services',
  createHost: () => ({
    section: SECTION,
    createAgent: () => {
      const log = createMemorySessionLog()
      return durableAgent(log, async () => log, async () => {})
    },
  }),
})

let dir: string | undefined
defineDurableReviewSuite({
  name: 'JSONL log reopened by each process',
  createHost: async () => {
    dir = await mkdtemp(join(tmpdir(), 'plan-mode-durable-kit-'))
    const path = join(dir, 'session.jsonl')
    let open: Awaited<ReturnType<typeof openJsonlSessionLog>> | undefined
    const reopen = async () => {
      await open?.close()
      open = await openJsonlSessionLog(path)
      return open
    }
    return {
      section: SECTION,
      createAgent: async () => durableAgent(await reopen(), reopen, async () => {}),
      dispose: async () => {
        await open?.close()
        await rm(dir!, { recursive: true, force: true })
      },
    }
  },
})
