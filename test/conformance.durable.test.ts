import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PLAN_MODE_TEXTS, createMemorySessionLog, createPlanMode, planHistory, type PlanAgent, type ReviewAnswer, type SessionLog } from '../src/index.js'
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

/**
 * A host that keeps the exit call waiting and tells the outcome in its result (R81, R135), as
 * LangGraph's `interrupt()` does: the call's review request is recorded and the run pauses; the
 * user answers in another process with `{ toldInResult: true }`; a third process resumes the call,
 * reads the closed review's record and gives the model `PLAN_MODE_TEXTS.review.toldInResult`'s text.
 * Nothing but the log survives a process: the waiting call is the log's last request.
 */
function waitingAgent(log: SessionLog): DurableConformanceAgent {
  const planMode = createPlanMode({ section: SECTION, review: 'durable', logger: { warn: () => {} } })
  const agent: PlanAgent = { id: 'agent-1', session: log }
  let calls = 0
  return {
    ...driverBasics(log, planMode, agent),
    ...durableReviewUi(planMode, agent),
    callExitTool: (args, { signal } = {}) =>
      planMode.exitTool
        .execute(args, { agent, callId: `call-${++calls}`, ...(signal ? { signal } : {}) })
        .catch((error: Error) => ({ error: error.message })),
    answerReview: (reviewId: string, answer: ReviewAnswer) =>
      planMode.answerReview(agent, reviewId, answer, { toldInResult: true }).catch((error: Error) => ({ error: error.message })),
    dismissReview: (reviewId: string) =>
      planMode.dismissReview(agent, reviewId, { toldInResult: true }).catch((error: Error) => ({ error: error.message })),
    async callResult() {
      // The waiting call is the one whose request the log holds last; its review is closed by now.
      const waiting = planHistory(log.events).filter((plan) => plan.reviewId !== undefined).at(-1)!
      const { isError, text } = PLAN_MODE_TEXTS.review.toldInResult(waiting)
      return { isError, text }
    },
    async restart() {
      await planMode.dispose()
      return waitingAgent(log)
    },
  }
}

defineDurableReviewSuite({
  name: 'a host that keeps the exit call waiting (memory log)',
  toldInResult: true,
  createHost: () => ({ section: SECTION, createAgent: () => waitingAgent(createMemorySessionLog()) }),
})
