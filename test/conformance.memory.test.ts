import {
  createMemorySessionLog,
  type PlanAgent,
  type SessionLog,
  type UserMessage,
} from '../src/index.js'
import { defineConformanceSuite, type ConformanceAgent } from '../src/testing/index.js'
import { createLoggedCommand, createHostService } from './fixtures/conformance-host.js'

/**
 * The conformance kit (`xstate-plan-mode/testing`) run against the simplest host: a memory log,
 * a review channel the driver answers, a step = the boundary then a `request/header`, `/plan`
 * logged as `command/run` … `command/done`.
 */
const SECTION = 'PLAN MODE: explore and design; present the plan with exit_plan_mode.'

function memoryAgent(log: SessionLog, id: string, decisions: 'approve-or-keep' | 'all' = 'approve-or-keep'): ConformanceAgent {
  const { planMode, reviews } = createHostService(SECTION, decisions)
  const steered: UserMessage[] = []
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
    command: createLoggedCommand(log, planMode, agent),
    get: () => planMode.get(agent),
    callExitTool: (args, { signal } = {}) =>
      planMode.exitTool.execute(args, { agent, ...(signal ? { signal } : {}) }).then(
        (result) => result,
        (error: unknown) => ({ error: error instanceof Error ? error.message : String(error) }),
      ),
    nextReview: reviews.nextReview,
    steered: () => steered,
    async restart() {
      await planMode.dispose()
      return memoryAgent(log, id, decisions)
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

// The same host with the whole set of decisions (R101): the four options, and the two it adds.
defineConformanceSuite({
  name: 'memory log, scripted review channel, all decisions',
  decisions: 'all',
  createHost: () => ({
    section: SECTION,
    createAgent: () => memoryAgent(createMemorySessionLog(), 'agent-1', 'all'),
  }),
})
