import { PLAN_MODE_TEXTS, createMemorySessionLog, createPlanMode, planHistory, type PlanAgent, type SessionLog } from 'xstate-plan-mode'
import { defineDurableReviewSuite, type DurableConformanceAgent } from 'xstate-plan-mode/testing'
import { createPlanCommand } from './plan-command.js'
import { PLAN_SECTION } from './plan-section.js'

/**
 * A host that keeps the exit call waiting and tells the outcome in its result, as LangGraph's
 * interrupt() does. Each driver is one process; only the session log survives a restart.
 */
function waitingDriver(session: SessionLog): DurableConformanceAgent {
  const planMode = createPlanMode({ section: PLAN_SECTION, review: 'durable' })
  const agent: PlanAgent = { id: 'main', session }
  return {
    events: () => session.events,
    startTurn: async () => void (await session.append('turn/start', {})),
    endTurn: async () => void (await session.append('turn/end', {})),
    async step({ signal } = {}) {
      const { section, messages } = await planMode.stepBoundary(agent, { signal })
      if (!signal?.aborted) await session.append('request/header', {})
      return { section, notices: messages.map((notice) => (notice.content[0] as { text: string }).text) }
    },
    command: createPlanCommand(planMode, agent),
    get: () => planMode.get(agent),
    steered: () => [],
    // The model's call: the request is recorded, and the run pauses with the call waiting.
    callExitTool: (args, { signal } = {}) =>
      planMode.exitTool.execute(args, { agent, signal, callId: crypto.randomUUID() }).catch((error: Error) => ({ error: error.message })),
    openReview: () => planMode.openReview(agent),
    // The user's answer, told in the waiting call's result: no step tells it again (R81).
    answerReview: (reviewId, answer) =>
      planMode.answerReview(agent, reviewId, answer, { toldInResult: true }).catch((error: Error) => ({ error: error.message })),
    dismissReview: (reviewId) =>
      planMode.dismissReview(agent, reviewId, { toldInResult: true }).catch((error: Error) => ({ error: error.message })),
    // The run resumes: the waiting call gets the closed review's result (R135).
    async callResult() {
      const review = planHistory(session.events).filter((plan) => plan.reviewId !== undefined).at(-1)!
      const { isError, text } = PLAN_MODE_TEXTS.review.toldInResult(review)
      return { isError, text }
    },
    async restart() {
      await planMode.dispose()
      return waitingDriver(session)
    },
  }
}

defineDurableReviewSuite({
  name: 'my waiting host',
  toldInResult: true,
  createHost: () => ({ section: PLAN_SECTION, createAgent: () => waitingDriver(createMemorySessionLog()) }),
})
