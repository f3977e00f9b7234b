/**
 * The conformance kit (`xstate-plan-mode/testing`) run against a host wired through the AI SDK
 * adapter (`withPlanMode`): a memory log, a review channel the driver answers, and per `step()`
 * one real `generateText` step (`stopWhen: stepCountIs(1)`, `tools: plan.tools`,
 * `prepareStep: plan.prepareStep`) against a scripted mock model. What `step()` returns is read
 * from the request the mock model actually received: the section is the system prompt minus the
 * base prompt (and its `\n\n` separator), the notices are the user messages the adapter injected
 * after the host's history.
 *
 * - Turns go through `plan.startTurn` / `plan.endTurn` (the adapter logs `turn/start`/`turn/end`);
 *   the adapter itself logs the `request/header { step }` of each step (R17, R30).
 * - `step({ signal })`: the step's signal is the adapter's default boundary signal
 *   (`WithPlanModeOptions.abortSignal`, read at each step) and `generateText`'s `abortSignal`.
 *   An aborted step sends no request, so it reports `{ section: '', notices: [] }`.
 * - `callExitTool` calls the AI SDK tool's `execute` (`plan.tools.exit_plan_mode.execute`), not a
 *   model-issued tool call; its thrown error is the message the SDK would send as `tool-error`.
 * - `/plan` goes through `planMode.command.run`, logged `command/run` … `command/done` like the
 *   memory host; `/plan <message>` is steered through `plan.steer` (and recorded for `steered()`);
 *   the next `step()` starts its call with `plan.takeSteered()` as the adapter documents.
 *
 * What does not apply as such to this host:
 * - `restart()`: the AI SDK adapter has no persistence of its own; a "restart" here is what a host
 *   process would do: dispose the service and build a new `createPlanMode` + `withPlanMode` over
 *   the same session log (memory log, so only the log survives; the adapter's in-memory queue of
 *   steered messages and the conversation history do not, which the kit's restart scenarios do not
 *   need). The R64 scenarios therefore test the core's replay through the adapter, not any
 *   durability of the adapter itself.
 * - The kit's `step()` is one model request; in production one `generateText` call runs many steps.
 *   Here each kit step is its own `generateText` call (stepNumber 0), so the adapter's within-call
 *   re-injection of notices at later steps of the same call is not exercised by the kit (it is
 *   covered by test/ai-sdk.test.ts). The model's own `exit_plan_mode` tool calls and tool-error
 *   mapping are likewise not driven by the kit (it calls `execute` directly).
 */
import { generateText, stepCountIs, type ModelMessage } from 'ai'
import { describe, expect, it } from 'vitest'
import { withPlanMode, type PlanModeAiSdk, type WithPlanModeOptions } from '../src/adapters/ai-sdk.js'
import {
  createMemorySessionLog,
  type PlanAgent,
  type SessionLog,
  type UserMessage,
} from '../src/index.js'
import { defineConformanceSuite, type ConformanceAgent } from '../src/testing/index.js'
import { createLoggedCommand, createHostService } from './fixtures/conformance-host.js'
import { scriptedModel } from './fixtures/ai-sdk-model.js'

const BASE = 'You are a careful coding agent.'
const SECTION = 'PLAN MODE: explore and design; present the plan with exit_plan_mode.'
const FIRST_USER = 'Import the CSV files.'

/** The section as the model received it: the system prompt minus the base prompt. */
function sectionOf(system: string | undefined): string {
  if (system === undefined || system === BASE) return ''
  const prefix = `${BASE}\n\n`
  if (!system.startsWith(prefix)) throw new Error(`unexpected system prompt: ${JSON.stringify(system)}`)
  return system.slice(prefix.length)
}

/** The user texts of a list of model messages. */
function userTexts(messages: readonly ModelMessage[]): string[] {
  const texts: string[] = []
  for (const message of messages) {
    if (message.role !== 'user') continue
    if (typeof message.content === 'string') texts.push(message.content)
    else for (const part of message.content) if (part.type === 'text') texts.push(part.text)
  }
  return texts
}

function aiSdkAgent(log: SessionLog, id: string): ConformanceAgent {
  const { planMode, reviews } = createHostService(SECTION)
  const steered: UserMessage[] = []
  const agent: PlanAgent = {
    id,
    session: log,
    steer: (message) => {
      steered.push(message)
      plan.steer(message)
    },
  }
  // Mutable on purpose: the adapter reads `abortSignal` at each step boundary.
  const settings: WithPlanModeOptions = { planMode, agent, system: BASE }
  const plan: PlanModeAiSdk = withPlanMode(settings)
  const { model, requests } = scriptedModel([])
  /** The host's conversation history: grows with each step's transcript. */
  const history: ModelMessage[] = [{ role: 'user', content: FIRST_USER }]

  return {
    events: () => log.events,
    startTurn: () => plan.startTurn(),
    endTurn: () => plan.endTurn(),
    async step(options = {}) {
      history.push(...plan.takeSteered())
      const knownUserTexts = userTexts(history).length
      const before = requests().length
      settings.abortSignal = options.signal
      try {
        const result = await generateText({
          model,
          messages: history,
          tools: plan.tools,
          prepareStep: plan.prepareStep,
          stopWhen: stepCountIs(1),
          ...(options.signal ? { abortSignal: options.signal } : {}),
        })
        history.push(...plan.transcript(result.response.messages))
      } catch (error) {
        // An aborted step sends nothing (R15, R30); any other failure is a test failure.
        if (!options.signal?.aborted) throw error
      } finally {
        delete settings.abortSignal
      }
      const sent = requests().slice(before)
      if (sent.length === 0) return { section: '', notices: [] }
      expect(sent.length).toBe(1)
      const request = sent[0]!
      const steeredTexts = new Set(steered.flatMap((m) => m.content.map((p) => (p as { text?: string }).text)))
      return {
        section: sectionOf(request.system),
        notices: request.userTexts.slice(knownUserTexts).filter((text) => !steeredTexts.has(text)),
      }
    },
    command: createLoggedCommand(log, planMode, agent),
    get: () => planMode.get(agent),
    async callExitTool(args, { signal } = {}) {
      const execute = plan.tools.exit_plan_mode.execute!
      try {
        const result = await execute(args as { plan: string }, {
          toolCallId: `call-exit-${Date.now()}`,
          messages: history,
          ...(signal ? { abortSignal: signal } : {}),
        })
        return result as { approved: true }
      } catch (error) {
        return { error: error instanceof Error ? error.message : String(error) }
      }
    },
    nextReview: reviews.nextReview,
    steered: () => steered,
    async restart() {
      await planMode.dispose()
      return aiSdkAgent(log, id)
    },
  }
}

defineConformanceSuite({
  name: 'AI SDK generateText (withPlanMode), scripted mock model',
  createHost: () => ({
    section: SECTION,
    createAgent: () => aiSdkAgent(createMemorySessionLog(), 'agent-1'),
  }),
})

describe('the AI SDK conformance driver', () => {
  it('reads the section and notices from the request the model received', async () => {
    const agent = aiSdkAgent(createMemorySessionLog(), 'agent-1')
    await agent.command('')
    await agent.startTurn()
    expect(await agent.step()).toEqual({ section: SECTION, notices: [] })
    const types = agent.events().map((e) => e.type)
    expect(types).toEqual(['command/run', 'plan/mode', 'command/done', 'turn/start', 'request/header'])
  })
})
