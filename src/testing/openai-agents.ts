/**
 * `xstate-plan-mode/testing/openai-agents`: the stock conformance drivers of the OpenAI Agents SDK
 * adapter (`withPlanMode` of `xstate-plan-mode/openai-agents`), for `@openai/agents-core` 0.14 (a
 * peer, as for the adapter). Like every stock driver of the package it exports `conformanceSuites`:
 * the suites' options, to hand to the runner's wrappers. Every member drives real `run()` calls
 * through the adapter against a scripted model, and reports what that model received.
 *
 * ```ts
 * import { defineConformanceSuite, defineDurableReviewSuite } from 'xstate-plan-mode/testing'
 * import { conformanceSuites } from 'xstate-plan-mode/testing/openai-agents'
 *
 * const suites = conformanceSuites({ section: MY_SECTION })
 * defineConformanceSuite(suites.channel)
 * defineDurableReviewSuite(suites.durable)
 * ```
 *
 * @module xstate-plan-mode/testing/openai-agents
 */
import type { AgentInputItem, Model, ModelRequest } from '@openai/agents-core'
import { sdk } from '../adapters/openai-agents-sdk.js'
import { createMemorySessionLog } from '../adapters/memory.js'
import { createPlanMode, type PlanMode } from '../service.js'
import type { PlanAgent, ReviewAnswer, SessionLog, UserMessage } from '../types.js'
import type {
  ConformanceAgent,
  ConformanceReview,
  ConformanceSuiteOptions,
  DurableConformanceAgent,
  DurableReviewSuiteOptions,
  StockConformanceSuites,
} from './scenarios.js'
import { createReviewQueue } from './review-queue.js'
import { withPlanMode, type PlanModeOpenAiAgents } from '../adapters/openai-agents.js'

/** The base instructions of the drivers' SDK agent; a step's section is what follows them. */
const INSTRUCTIONS = 'You are the conformance kit’s agent.'

/** Options of `conformanceSuites`: the host's own settings. */
export interface OpenAiAgentsConformanceOptions {
  /** The section the host gives `createPlanMode` (R18). */
  section: string
  /** `createPlanMode`'s `decisions` (R101) for the channel suite. Default `'approve-or-keep'`. */
  decisions?: 'approve-or-keep' | 'all'
  /** A new, empty session log for each scenario's agent (the host's own store). Default: a memory log. */
  createLog?: () => SessionLog | Promise<SessionLog>
  /**
   * The log a restarted process of the durable suite opens, given the one the process before had
   * (a JSONL log is closed and opened again here). Default: the same object.
   */
  reopenLog?: (log: SessionLog) => SessionLog | Promise<SessionLog>
  /** The suites' names. Default `'OpenAI Agents SDK withPlanMode'`. */
  name?: string
}

/** What one driver is made of. */
interface DriverOptions {
  section: string
  log: SessionLog
  decisions?: 'approve-or-keep' | 'all'
  reopen?: (log: SessionLog) => SessionLog | Promise<SessionLog>
}

/** A model call the scripted model received: its instructions and input. */
interface SentRequest {
  instructions: string | undefined
  input: AgentInputItem[]
}

/**
 * The drivers' scripted model: it answers `next` when set (a tool call the driver asks for) and a
 * text otherwise, and keeps each request.
 */
function driverModel(): { model: Model; sent: SentRequest[]; callNext(name: string, args: unknown, callId: string): void } {
  const sent: SentRequest[] = []
  let next: AgentInputItem | undefined
  const model: Model = {
    async getResponse(request: ModelRequest) {
      sent.push({ instructions: request.systemInstructions, input: typeof request.input === 'string' ? [] : [...request.input] })
      const output = next ?? { type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'ok' }] }
      next = undefined
      return { usage: new sdk.Usage(), output: [output] as never }
    },
    getStreamedResponse() {
      throw new Error('the conformance driver does not stream')
    },
  }
  return { model, sent, callNext: (name, args, callId) => void (next = { type: 'function_call', name, callId, arguments: JSON.stringify(args), status: 'completed' }) }
}

/** What one agent's driver is built on: the service, the adapter, an SDK agent on the scripted model. */
function wire(planMode: PlanMode, log: SessionLog, id: string) {
  const steered: UserMessage[] = []
  const agent: PlanAgent = {
    id,
    session: log,
    steer: (message) => {
      steered.push(message)
      plan.steer(message)
    },
  }
  // Mutable on purpose: the filter reads `abortSignal` at each model call (a step's own signal).
  const settings: { planMode: PlanMode; agent: PlanAgent; abortSignal?: AbortSignal } = { planMode, agent }
  const plan: PlanModeOpenAiAgents = withPlanMode(settings)
  const { model, sent, callNext } = driverModel()
  const sdkAgent = new sdk.Agent({
    name: 'conformance',
    instructions: INSTRUCTIONS,
    model,
    tools: plan.tools,
    // The exit call's output ends the run: the kit's next step is its own `step()`.
    toolUseBehavior: { stopAtToolNames: [planMode.exitTool.name] },
  })
  return { agent, plan, settings, sdkAgent, sent, callNext, steered }
}

/** The section as the model received it: the instructions minus the base ones and their blank line. */
function sectionOf(instructions: string | undefined): string {
  if (instructions === undefined || instructions === INSTRUCTIONS) return ''
  const prefix = `${INSTRUCTIONS}\n\n`
  if (!instructions.startsWith(prefix)) throw new Error(`unexpected instructions: ${JSON.stringify(instructions)}`)
  return instructions.slice(prefix.length)
}

/** The texts of the user messages of an input. */
function userTexts(input: readonly AgentInputItem[]): string[] {
  return input.flatMap((item) => {
    if (!('role' in item) || item.role !== 'user') return []
    if (typeof item.content === 'string') return [item.content]
    return item.content.flatMap((part) => (part.type === 'input_text' ? [part.text] : []))
  })
}

/**
 * One step: a run of the SDK agent on the host's history, whose one model call answers a text.
 * Returns the section and the notices the model received (the user texts after the history's, but
 * steered ones), and the history to keep.
 */
async function runStep(
  wired: ReturnType<typeof wire>,
  history: AgentInputItem[],
  signal: AbortSignal | undefined,
): Promise<{ step: { section: string; notices: string[] }; history: AgentInputItem[] }> {
  const { plan, settings, sdkAgent, sent, steered } = wired
  const before = sent.length
  const known = userTexts(history).length
  if (signal) settings.abortSignal = signal
  let next = history
  try {
    const result = await sdk.run(sdkAgent, history.length === 0 ? [{ role: 'user', content: 'Begin.' }] : history, {
      callModelInputFilter: plan.callModelInputFilter,
      maxTurns: 1,
      ...(signal ? { signal } : {}),
    })
    next = plan.history(result.history)
  } catch (error) {
    // An aborted step sends nothing (R15, R30); any other failure is the host's.
    if (!signal?.aborted) throw error
  } finally {
    delete settings.abortSignal
  }
  const request = sent.slice(before)[0]
  if (request === undefined) return { step: { section: '', notices: [] }, history: next }
  const steeredTexts = new Set(steered.flatMap((message) => message.content.map((part) => (part as { text?: string }).text)))
  const base = history.length === 0 ? known + 1 : known
  return {
    step: { section: sectionOf(request.instructions), notices: userTexts(request.input).slice(base).filter((text) => !steeredTexts.has(text)) },
    history: next,
  }
}

/** `/plan` as a host runs it: logged `command/run` … `command/done` (R58, R64). */
function loggedCommand(log: SessionLog, planMode: PlanMode, agent: PlanAgent) {
  return async (rawInput: string, attachments?: unknown[]) => {
    const commandId = globalThis.crypto.randomUUID()
    await log.append('command/run', { commandId, name: 'plan', args: rawInput })
    const result = await planMode.command.run({ agent, rawInput, ...(attachments ? { attachments } : {}) })
    await log.append('command/done', { commandId, kind: result.kind })
    return result
  }
}

/** A fresh call id, unique across processes. */
const newCallId = () => `call_${globalThis.crypto.randomUUID()}`

/**
 * A `ConformanceAgent` (a service with a review channel) wired through `withPlanMode`: `step()`
 * is one `run()` of one model call; `callExitTool` invokes the adapter's `exit_plan_mode` tool as
 * the SDK does (its output is what the model reads); turns go through `plan.startTurn`/`endTurn`;
 * `/plan` is logged; `restart()` builds a new service and adapter over the same log.
 */
function conformanceDriver(options: DriverOptions): ConformanceAgent {
  const { section, log, decisions = 'approve-or-keep' } = options
  const reviews = createReviewQueue()
  const planMode = createPlanMode({ section, review: reviews.channel, decisions, logger: { warn: () => {} } })
  const wired = wire(planMode, log, 'conformance-agent')
  const { agent, plan } = wired
  let history: AgentInputItem[] = []
  return {
    events: () => log.events,
    startTurn: () => plan.startTurn(),
    endTurn: () => plan.endTurn(),
    async step({ signal } = {}) {
      const ran = await runStep(wired, history, signal)
      history = ran.history
      return ran.step
    },
    command: loggedCommand(log, planMode, agent),
    get: () => planMode.get(agent),
    async callExitTool(args, { signal } = {}) {
      const callId = newCallId()
      const toolCall = { type: 'function_call' as const, name: plan.exitTool.name, callId, arguments: JSON.stringify(args), status: 'completed' as const }
      const output = await plan.exitTool.invoke(new sdk.RunContext(), toolCall.arguments, { toolCall, ...(signal ? { signal } : {}) })
      return output === planMode.exitTool.resultText ? { approved: true } : { error: String(output) }
    },
    nextReview: reviews.nextReview,
    steered: () => wired.steered,
    async restart() {
      await planMode.dispose()
      return conformanceDriver(options)
    },
  }
}

/** What a durable host keeps besides the log across processes: the paused run's string and the history. */
interface HostStore {
  paused?: string
  history: AgentInputItem[]
}

/**
 * A told-in-result `DurableConformanceAgent` (`review: 'durable'`) wired through `withPlanMode`:
 * `callExitTool` is a run whose model calls `exit_plan_mode` and stops at the SDK's interruption
 * (the paused run's `RunState.toString()` is kept as a host keeps it); `answerReview` and `dismissReview` answer with
 * `toldInResult: true`; `callResult` restores the paused run with `RunState.fromString`, settles
 * its interruption (`plan.settleInterruptions`) and resumes it, returning the exit call's output;
 * `restart()` is a new service and adapter over the log (`reopen`), with the kept run.
 */
function durableConformanceDriver(options: DriverOptions, store: HostStore = { history: [] }): DurableConformanceAgent {
  const { section, log } = options
  const planMode = createPlanMode({ section, review: 'durable', logger: { warn: () => {} } })
  const wired = wire(planMode, log, 'durable-conformance-agent')
  const { agent, plan, sdkAgent, callNext } = wired
  /** A run's exit call output (the call stopped the run), or undefined when the run stopped at an interruption. */
  const exitOutput = (result: { finalOutput?: unknown; interruptions: unknown[] }) => (result.interruptions.length > 0 ? undefined : String(result.finalOutput))
  return {
    events: () => log.events,
    startTurn: () => plan.startTurn(),
    endTurn: () => plan.endTurn(),
    async step({ signal } = {}) {
      const ran = await runStep(wired, store.history, signal)
      store.history = ran.history
      return ran.step
    },
    command: loggedCommand(log, planMode, agent),
    get: () => planMode.get(agent),
    async callExitTool(args) {
      callNext(plan.exitTool.name, args, newCallId())
      const input = store.history.length === 0 ? [{ role: 'user' as const, content: 'Begin.' }] : store.history
      const result = await sdk.run(sdkAgent, input, { callModelInputFilter: plan.callModelInputFilter, maxTurns: 2 })
      const output = exitOutput(result)
      if (output !== undefined) {
        store.history = plan.history(result.history)
        return { error: output }
      }
      store.paused = result.state.toString()
      const open = planMode.openReview(agent)
      return open === null ? { error: 'no review opened' } : { submitted: true, reviewId: open.reviewId }
    },
    openReview: () => planMode.openReview(agent),
    answerReview: (reviewId, answer) =>
      planMode.answerReview(agent, reviewId, answer as ReviewAnswer, { toldInResult: true }).catch((error: Error) => ({ error: error.message })),
    dismissReview: (reviewId) => planMode.dismissReview(agent, reviewId, { toldInResult: true }).catch((error: Error) => ({ error: error.message })),
    async callResult() {
      if (store.paused === undefined) throw new Error('no paused run to resume')
      const state = await sdk.RunState.fromString(sdkAgent, store.paused)
      store.paused = undefined
      plan.settleInterruptions(state)
      const result = await sdk.run(sdkAgent, state, { callModelInputFilter: plan.callModelInputFilter })
      store.history = plan.history(result.history)
      const text = exitOutput(result) ?? 'the run stopped at its interruption again'
      return { isError: text !== planMode.exitTool.resultText, text }
    },
    steered: () => wired.steered,
    async restart() {
      await planMode.dispose()
      return durableConformanceDriver({ ...options, log: options.reopen ? await options.reopen(log) : log }, store)
    },
  }
}

/**
 * The conformance suites of the OpenAI Agents SDK adapter for a host's settings (R159): `channel`
 * (a review channel: `defineConformanceSuite`) and `durable` (`review: 'durable'` through the SDK's
 * tool approval, told in the call's result: `defineDurableReviewSuite`).
 */
export function conformanceSuites(options: OpenAiAgentsConformanceOptions): Required<StockConformanceSuites> {
  const name = options.name ?? 'OpenAI Agents SDK withPlanMode'
  const newLog = async () => (options.createLog ? await options.createLog() : createMemorySessionLog())
  const channel: ConformanceSuiteOptions = {
    name,
    ...(options.decisions ? { decisions: options.decisions } : {}),
    createHost: () => ({
      section: options.section,
      createAgent: async () => conformanceDriver({ section: options.section, log: await newLog(), ...(options.decisions ? { decisions: options.decisions } : {}) }),
    }),
  }
  const durable: DurableReviewSuiteOptions = {
    name,
    toldInResult: true,
    createHost: () => ({
      section: options.section,
      createAgent: async () => durableConformanceDriver({ section: options.section, log: await newLog(), ...(options.reopenLog ? { reopen: options.reopenLog } : {}) }),
    }),
  }
  return { channel, durable }
}
