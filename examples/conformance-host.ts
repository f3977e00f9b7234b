import {
  createMemorySessionLog,
  createPlanMode,
  type PlanAgent,
  type ReviewAnswer,
  type ReviewChannel,
  type SessionLog,
  type UserMessage,
} from 'xstate-plan-mode'
import { defineConformanceSuite, type ConformanceAgent, type ConformanceReview } from 'xstate-plan-mode/testing'
import { createPlanCommand } from './plan-command.js'
import { PLAN_SECTION } from './plan-section.js'

/** The host's review channel as the kit drives it: each question waits for `nextReview()`, the kit answers. */
function reviewQueue() {
  const asked: ConformanceReview[] = []
  const waiting: ((review: ConformanceReview) => void)[] = []
  const channel: ReviewChannel = {
    ask: (request) =>
      new Promise<ReviewAnswer>((answer, reject) => {
        const dismiss = () => reject(Object.assign(new Error('review dismissed'), { code: 'ASK_CANCELLED' }))
        const review: ConformanceReview = { request, answer, dismiss }
        const waiter = waiting.shift()
        if (waiter) waiter(review)
        else asked.push(review)
      }),
  }
  const nextReview = () => {
    const review = asked.shift()
    return review ? Promise.resolve(review) : new Promise<ConformanceReview>((resolve) => waiting.push(resolve))
  }
  return { channel, nextReview }
}

/** The driver: each member does what this host does at that moment (a hand-written loop's, here). */
function myDriver(session: SessionLog = createMemorySessionLog()): ConformanceAgent {
  const reviews = reviewQueue()
  const planMode = createPlanMode({ section: PLAN_SECTION, review: reviews.channel })
  const steered: UserMessage[] = []
  const agent: PlanAgent = { id: 'main', session, steer: (message) => steered.push(message) }
  return {
    events: () => session.events,
    startTurn: async () => void (await session.append('turn/start', {})),
    endTurn: async () => void (await session.append('turn/end', {})),
    async step({ signal } = {}) {
      const { section, messages } = await planMode.stepBoundary(agent, { signal }) // an aborted signal changes nothing
      if (!signal?.aborted) await session.append('request/header', {}) // then the request goes out
      return { section, notices: messages.map((notice) => textOf(notice.content)) } // the notices new at this step
    },
    command: createPlanCommand(planMode, agent), // `/plan` logged as command/run … command/done
    get: () => planMode.get(agent),
    callExitTool: (args, { signal } = {}) =>
      planMode.exitTool.execute(args, { agent, signal }).catch((error: Error) => ({ error: error.message })),
    nextReview: reviews.nextReview,
    steered: () => steered,
    async restart() {
      await planMode.dispose() // a new service over the same log: the logged commands keep a pending selection
      return myDriver(session)
    },
  }
}

defineConformanceSuite({ name: 'my host', createHost: () => ({ section: PLAN_SECTION, createAgent: () => myDriver() }) })

const textOf = (content: unknown[]) => content.map((part) => (part as { text?: string }).text ?? '').join('')
