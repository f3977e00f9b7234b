import {
  createMemorySessionLog,
  createPlanMode,
  type PlanAgent,
  type PlanMode,
  type ReviewAnswer,
  type ReviewRequest,
  type SessionLog,
  type UserMessage,
} from '../src/index.js'
import { defineConformanceSuite, type ConformanceAgent, type ConformanceReview } from '../src/testing/index.js'

/**
 * The conformance kit (`xstate-plan-mode/testing`) run against the simplest host: a memory log,
 * a review channel the driver answers, a step = the boundary then a `request/header`, `/plan`
 * logged as `command/run` … `command/done`.
 */
const SECTION = 'PLAN MODE: explore and design; present the plan with exit_plan_mode.'

function memoryAgent(log: SessionLog, id: string): ConformanceAgent {
  const waiting: ((review: ConformanceReview) => void)[] = []
  const asked: ConformanceReview[] = []
  const steered: UserMessage[] = []
  let commands = 0
  const toReview = (request: ReviewRequest, resolve: (a: ReviewAnswer) => void, reject: (e: unknown) => void): ConformanceReview => ({
    request,
    answer: resolve,
    dismiss: () => reject(Object.assign(new Error('dismissed'), { code: 'ASK_CANCELLED' })),
  })
  const planMode: PlanMode = createPlanMode(
    { section: SECTION },
    {
      review: {
        ask: (request) =>
          new Promise<ReviewAnswer>((resolve, reject) => {
            const review = toReview(request, resolve, reject)
            const waiter = waiting.shift()
            if (waiter) waiter(review)
            else asked.push(review)
          }),
      },
      logger: { warn: () => {} },
    },
  )
  const agent: PlanAgent = { id, session: log, steer: (message) => steered.push(message) }
  return {
    events: () => log.events,
    startTurn: () => void log.append('turn/start', {}),
    endTurn: () => void log.append('turn/end', {}),
    async step(options = {}) {
      const { section, messages } = await planMode.stepBoundary(agent, options)
      if (!options.signal?.aborted) await log.append('request/header', { model: 'memory' })
      return { section, notices: messages.map((m) => (m.content[0] as { text: string }).text) }
    },
    async command(rawInput, attachments) {
      const commandId = `cmd-${++commands}`
      await log.append('command/run', { commandId, name: 'plan', args: rawInput })
      const result = await planMode.command.run({ agent, rawInput, ...(attachments ? { attachments } : {}) })
      await log.append('command/done', { commandId, kind: result.kind })
      return result
    },
    get: () => planMode.get(agent),
    callExitTool: (args, { signal } = {}) =>
      planMode.exitTool.execute(args, { agent, ...(signal ? { signal } : {}) }).then(
        (result) => result,
        (error: unknown) => ({ error: error instanceof Error ? error.message : String(error) }),
      ),
    nextReview: () => {
      const review = asked.shift()
      return review ? Promise.resolve(review) : new Promise((resolve) => waiting.push(resolve))
    },
    steered: () => steered,
    async restart() {
      await planMode.dispose()
      return memoryAgent(log, id)
    },
  }
}

let logs: SessionLog[] = []

defineConformanceSuite({
  name: 'memory log, scripted review channel',
  createHost: () => ({
    section: SECTION,
    createAgent: () => {
      const log = createMemorySessionLog()
      logs.push(log)
      return memoryAgent(log, 'agent-1')
    },
    dispose: () => {
      logs = []
    },
  }),
})
