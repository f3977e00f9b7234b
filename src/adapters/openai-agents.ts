/**
 * The OpenAI Agents SDK adapter (`@openai/agents-core` 0.14, what `@openai/agents` runs on): plan
 * mode for `run(agent, input)` and `Runner.run`. It translates only: every plan decision is the
 * service's (`planMode.step`: the state in force, the section, the notices, the handoff;
 * `exitTool.execute`; `planMode.callReviews`: which review an approval or a rejection answers, and
 * what a closed review's call results in); this module finds the SDK's calls, approvals and
 * rejections and moves the service's answers into the SDK's run.
 *
 * Where the service's results go:
 * - the step's section: after the agent's instructions (`instructions + '\n\n' + section`), by
 *   `callModelInputFilter`, which runs right before every model call of the run (one step each);
 * - the notices and steered `/plan` messages: user messages after the step's input, kept at that
 *   place for the rest of the turn (the SDK forgets what a filter adds); `history` hands them to
 *   the host's history afterwards;
 * - the exit tool's results: the core's texts, as the tool's output (`exitTool.resultText` on
 *   approval; a failure's message otherwise).
 *
 * Reviews: with a review channel the exit call waits in the tool for the channel's answer. With
 * durable reviews (`review: 'durable'`) the exit tool needs approval: the SDK's interruption is
 * the review, `RunState.approve(item)` approves it, `RunState.reject(item, { message })` keeps
 * planning with the message as feedback, and the state survives `toString()`/`fromString()` and a
 * restart, since the review lives in the log.
 *
 * @example
 * const plan = withPlanMode({ planMode, agent, tools: [readFile, writeFile] })
 * const coder = new Agent({ name: 'coder', instructions: BASE, model, tools: plan.tools })
 * const result = await plan.runTurn(() => run(coder, input, { callModelInputFilter: plan.callModelInputFilter }))
 *
 * @module xstate-plan-mode/openai-agents
 */

import type {
  Agent,
  AgentInputItem,
  CallModelInputFilter,
  FunctionTool,
  RunContext,
  RunState,
  RunToolApprovalItem,
  Tool,
} from '@openai/agents-core'
import { sdk } from './openai-agents-sdk.js'
import { REQUEST_HEADER_EVENT, TURN_END_EVENT, TURN_START_EVENT } from '../log/kinds.js'
import { runInTurn } from '../plan/turn.js'
import { planArgument, type ExitPlanModeParameters } from '../plan/exit-tool.js'
import { interleaveInjections, type CallInjection } from '../plan/transcript.js'
import type { PlanHandoff } from '../plan/handoff.js'
import type { CallDenial, CallReviewResult } from '../plan/call-review.js'
import { isReadOnlyTool, type PlanGuard } from '../guard/index.js'
import type { PlanMode } from '../service.js'
import type { PlanAgent, ReviewAnswer, UserMessage } from '../types.js'

/** Options of `withPlanMode`: `{ planMode, agent, tools }` is the common case. */
export interface WithPlanModeOptions {
  /** The plan-mode service (`createPlanMode`). */
  planMode: PlanMode
  /** The agent whose session this loop runs. */
  agent: PlanAgent
  /** The host's tools; they pass through unchanged, in both states (R40, R52). */
  tools?: readonly Tool[]
  /** The default abort signal of a step boundary (R15); `runTurn`'s own signal overrides it. */
  abortSignal?: AbortSignal
  /**
   * The opt-in guard (`createPlanGuard` of `/guard`, R88–R91): every host function tool runs
   * through it, so a side-effecting call while plan mode is in force is observed or blocked; a
   * blocked call's output is the guard's message. Other fields are kept (R40).
   */
  guard?: PlanGuard
}

/** Options of `runTurn` and `startTurn`. */
export interface RunTurnOptions {
  /** The turn's abort signal: pass the same one to `run` (its `signal` option). */
  abortSignal?: AbortSignal
}

/** What `withPlanMode` returns: the tools, the input filter and the turn helpers of one agent's loop. */
export interface PlanModeOpenAiAgents {
  /** The host's tools (guarded when a guard is given) plus `exit_plan_mode`; identical in both states (R40, R52). */
  readonly tools: Tool[]
  /** The `exit_plan_mode` function tool alone (also the last of `tools`). */
  readonly exitTool: FunctionTool
  /**
   * Give it to `run` (or the `Runner`'s config) as `callModelInputFilter`. Before every model
   * call it answers a rejected exit call's review (R155), runs the step boundary (R14), logs
   * `request/header { step }` (R17), and returns the model input with the section after the
   * instructions and the notices and steered messages after the input (R156).
   * @throws (rejects) when the boundary or an append fails, or the turn is aborted: the model is not called.
   */
  readonly callModelInputFilter: CallModelInputFilter<any>
  /**
   * Appends `turn/start`, runs `call`, and appends `turn/end` when it settles (R5). Resolves with
   * the call's value; rejects with the call's error, else with the `turn/end` append's error.
   * A run that stops at an interruption (a durable review) ends the turn too: resuming it is a new turn.
   * A streamed run (`run(agent, input, { stream: true, … })`, R169) ends the turn once its
   * `completed` settles (rejecting with the run's error): consume its events inside `call` to show
   * them as they come; the SDK keeps them for a later reader otherwise.
   */
  runTurn<T>(call: () => T | PromiseLike<T>, options?: RunTurnOptions): Promise<Awaited<T>>
  /** Appends `turn/start` and sets the turn's abort signal; pair it with `endTurn`. */
  startTurn(options?: RunTurnOptions): Promise<void>
  /** Appends `turn/end` and clears the turn's abort signal. */
  endTurn(): Promise<void>
  /**
   * Queues a user message for the next model call, after that call's notices. Suits
   * `PlanAgent.steer` (`/plan <message>`, R56).
   * @throws TypeError when a content part cannot be sent to the SDK.
   */
  steer(message: UserMessage): void
  /**
   * The run's history (`result.history`) with the messages its model calls were given
   * besides it (notices, steered messages) at the places the model saw them: what the host keeps
   * as its next input. After a handoff (R102) it starts with the fresh context's first message.
   */
  history(items: readonly AgentInputItem[]): AgentInputItem[]
  /**
   * For a durable service (R157): before resuming a `RunState`, each `exit_plan_mode` interruption
   * whose review the log has closed meanwhile (`/plan off`, an answer from another UI or process)
   * is approved or rejected in the state with the result its outcome gives (R87), so the SDK does
   * not ask again. Returns how many it settled; a review still open stays pending.
   */
  settleInterruptions(state: RunState<any, any>): number
  /**
   * For a durable service (R157): answers the review of an `exit_plan_mode` interruption with any
   * answer (`Approve in a fresh context`, `Leave plan mode`, comments: R100, R101), told in the
   * call's result, then settles the interruption in the state. Resolves the recorded outcome.
   * @throws (rejects) when the item is not an `exit_plan_mode` call whose review is open, or as `answerReview` does.
   */
  answer(state: RunState<any, any>, item: RunToolApprovalItem, answer: ReviewAnswer): Promise<'approved' | 'keep-planning' | 'left'>
  /** The handoff the current (or last) run made (R102), or null. */
  readonly handoff: PlanHandoff | null
  /**
   * A paused run as a string to keep (R156): `state.toString()` plus the messages this adapter gave
   * its model calls besides the run's items (notices, steered `/plan` messages, a handoff's start),
   * which the SDK's state does not hold. Restore it with `restoreState`, in this process or another.
   */
  saveState(state: RunState<any, any>): string
  /**
   * The run `saveState` kept, as `RunState.fromString(agent, …)` gives it, with its model calls'
   * messages: its next model call shows them where the model saw them before the pause (none is
   * told again). A plain `state.toString()` string is restored without them.
   * @throws (rejects) as `RunState.fromString` does; with {@link MALFORMED_SAVED_RUN_MESSAGE} when
   *   the string is marked as `saveState`'s but its messages or fresh context are not as it wrote them.
   */
  restoreState<TAgent extends Agent<any, any>>(agent: TAgent, text: string): Promise<RunState<any, TAgent>>
}

/** What the adapter keeps of one run: the messages its model calls were given besides its items, and its fresh context (R102). */
interface RunRecord {
  /** Where the model saw each message: before the run's item at index `at` (its input first, then what its steps produced). */
  injections: CallInjection<AgentInputItem>[]
  /** Where the fresh context starts among the run's messages, its first message, and the handoff that made it. */
  fresh: { cut: number; seed: AgentInputItem; handoff: PlanHandoff } | null
}

/** The key that marks `saveState`'s strings (and their format's version). */
const SAVED_RUN_FORMAT = 'xstate-plan-mode/openai-agents run'

/** `saveState`'s string, parsed. */
interface SavedRun extends Omit<RunRecord, 'injections'> {
  [SAVED_RUN_FORMAT]: 1
  state: string
  injections: readonly CallInjection<AgentInputItem>[]
  /** The exit calls answered before the run's latest model call (R155, R168). */
  answered: readonly string[]
}

/** The refusal of a `saveState` string whose plan-mode part is malformed (R156): nothing is restored. */
export const MALFORMED_SAVED_RUN_MESSAGE = 'plan-mode openai-agents: restoreState: the saved run is malformed (not as saveState wrote it); nothing was restored'

/**
 * `text` as `saveState` wrote it, or undefined for any other string (a plain `RunState` string).
 * The string is untrusted (it comes back from the host's storage): each message must be a user
 * message, as the adapter only ever injects those (a forged one cannot pose as the system or the
 * assistant), and each place and handoff must have its shape.
 * @throws Error {@link MALFORMED_SAVED_RUN_MESSAGE} when it is marked as `saveState`'s but is not.
 */
function savedRun(text: string): SavedRun | undefined {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return undefined
  }
  if (!isObject(value) || !(SAVED_RUN_FORMAT in value)) return undefined
  const saved = value as Record<string, unknown>
  const { state, injections, fresh, answered } = saved
  const wellFormed =
    saved[SAVED_RUN_FORMAT] === 1 &&
    typeof state === 'string' &&
    Array.isArray(injections) &&
    injections.every((injection) => isObject(injection) && isPlace((injection as { at?: unknown }).at) && isUserItem((injection as { message?: unknown }).message)) &&
    (fresh === null || fresh === undefined || isFreshContext(fresh)) &&
    (answered === undefined || (Array.isArray(answered) && answered.every((id) => typeof id === 'string')))
  if (!wellFormed) throw new Error(MALFORMED_SAVED_RUN_MESSAGE)
  return {
    [SAVED_RUN_FORMAT]: 1,
    state: state as string,
    injections: injections as CallInjection<AgentInputItem>[],
    fresh: (fresh ?? null) as RunRecord['fresh'],
    answered: (answered ?? []) as string[],
  }
}

/** An index among a run's messages. */
function isPlace(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0
}

/** A user message as the adapter injects them (`userItem`, `toInputItem`). */
function isUserItem(value: unknown): boolean {
  if (!isObject(value)) return false
  const item = value as { type?: unknown; role?: unknown; content?: unknown }
  return item.type === 'message' && item.role === 'user' && Array.isArray(item.content) && item.content.every((part) => isObject(part) && typeof (part as { type?: unknown }).type === 'string')
}

/** A run's fresh context (R102): where it starts, its first message, and the handoff that made it. */
function isFreshContext(value: unknown): boolean {
  if (!isObject(value)) return false
  const { cut, seed, handoff } = value as { cut?: unknown; seed?: unknown; handoff?: unknown }
  if (!isPlace(cut) || !isUserItem(seed) || !isObject(handoff)) return false
  const { title, plan, version, decisions, text } = handoff as Record<string, unknown>
  return (
    typeof title === 'string' &&
    typeof plan === 'string' &&
    typeof text === 'string' &&
    Number.isSafeInteger(version) &&
    Array.isArray(decisions) &&
    decisions.every((decision) => isObject(decision) && Number.isSafeInteger((decision as { version?: unknown }).version) && typeof (decision as { feedback?: unknown }).feedback === 'string')
  )
}

function isObject(value: unknown): value is object {
  return typeof value === 'object' && value !== null
}

/** How many refused calls whose output the SDK has not asked for yet a durable exit tool remembers. */
const MAX_REFUSED_CALLS = 64

/**
 * Wires plan mode into an OpenAI Agents SDK loop for one agent: returns `tools` for the `Agent`,
 * `callModelInputFilter` for `run`, and the turn helpers. Keep one per agent for its lifetime.
 * @throws Error when a host tool is already named `exit_plan_mode`.
 */
export function withPlanMode(options: WithPlanModeOptions): PlanModeOpenAiAgents {
  const { planMode, agent } = options
  const exitName = planMode.exitTool.name
  const hostTools = [...(options.tools ?? [])]
  if (hostTools.some((hostTool) => hostTool.name === exitName)) throw new Error(`withPlanMode: a host tool is already named "${exitName}"`)
  const guard = options.guard
  /**
   * The run whose model calls the filter serves: the SDK's `RunContext` of the run, which it hands
   * the exit tool's `isEnabled` before every model call. The injected messages are kept per run
   * (a new run's input is the host's history, which `history()` gave them to already), for every
   * run of this adapter that a host may resume, and across a restart in `saveState`'s string.
   */
  let servedRun: unknown
  /** Per run (its `RunContext`): the messages its model calls were given besides its items, and its fresh context. */
  const runs = new WeakMap<object, RunRecord>()
  let current: RunRecord = { injections: [], fresh: null }
  /** Per run (its `RunContext`): the exit calls answered before its latest model call (R168). */
  const answered = new WeakMap<object, Set<string>>()
  const exitTool = exitPlanModeTool(planMode, agent, answered, (runContext) => {
    if (runContext === servedRun) return
    servedRun = runContext
    const known = isObject(runContext) ? runs.get(runContext) : undefined
    current = known ?? { injections: [], fresh: null }
    if (known === undefined && isObject(runContext)) runs.set(runContext, current)
    handoff = current.fresh?.handoff ?? null
  })
  const tools = [...(guard === undefined ? hostTools : hostTools.map((hostTool) => guardTool(hostTool, guard, agent))), exitTool]

  let turnSignal: AbortSignal | undefined
  let step = 0
  /** Messages waiting for the next model call: steered ones, and any a failed step did not send. */
  const outbox: AgentInputItem[] = []
  let handoff: PlanHandoff | null = null
  /**
   * Exit results already read against the log, by call id and plan, one per result of that call in
   * the run's input, in order (a provider may reuse a call id: a later call of the same id and plan
   * is another review's): the text the model reads, or null to keep the SDK's.
   */
  const shown = new Map<string, (string | null)[]>()

  const append = async (type: string, data: unknown) => {
    await agent.session.append(type, data)
  }

  /**
   * R155: the call the open review is bound to was rejected when the run's context (the SDK's
   * record of its approvals) says so and the call has its result in the input, which the run's
   * previous model call did not have (else the rejection was an earlier review's); the feedback is
   * the message given to `RunState.reject`, if any.
   */
  async function answerRejection(input: readonly AgentInputItem[]): Promise<void> {
    if (planMode.exitTool.reviews !== 'durable') return
    const open = planMode.openReview(agent)
    const runContext = servedRun as RunContext | undefined
    if (open?.callId === undefined || runContext?.isToolApproved({ toolName: exitName, callId: open.callId }) !== false) return
    // Answered before this run's previous model call: the rejection is an earlier review's, not this one's.
    if (answered.get(runContext)?.has(open.callId)) return
    if (findLast(input, (item) => item.type === 'function_call_result' && item.callId === open.callId) === undefined) return
    const callItem = findLast(input, (item) => item.type === 'function_call' && item.callId === open.callId)
    const reason = runContext.getRejectionMessage(exitName, open.callId)
    const denial: CallDenial = { input: callItem?.type === 'function_call' ? parseArguments(callItem.arguments) : undefined, reason }
    await planMode.callReviews.deny(agent, new Map([[open.callId, denial]]))
  }

  /**
   * The model's view of the exit calls' results (R155, R87): a call whose review the log holds
   * closed with another outcome than an approval reads the text that outcome gives, not the SDK's
   * rejection text. Read against the log once per call; every other item is kept.
   */
  function showExitResults(input: AgentInputItem[]): AgentInputItem[] {
    if (planMode.exitTool.reviews !== 'durable') return input
    let settled: ReturnType<PlanMode['callReviews']['settled']> | undefined
    const calls = new Map<string, unknown>()
    const seen = new Map<string, number>()
    return input.map((item) => {
      if (item.type === 'function_call' && item.name === exitName) calls.set(item.callId, parseArguments(item.arguments))
      if (item.type !== 'function_call_result' || item.name !== exitName || !calls.has(item.callId)) return item
      const args = calls.get(item.callId)
      const key = `${item.callId}\u0000${planArgument(args) ?? ''}`
      const at = seen.get(key) ?? 0
      seen.set(key, at + 1)
      const texts = shown.get(key) ?? []
      let text = texts[at]
      // The log's closed review of this call id and plan is the latest one's: read for the first result not read yet.
      if (text === undefined && at === texts.length) {
        settled ??= planMode.callReviews.settled(agent)
        const result = settled.resultOf(item.callId, args)
        text = result !== undefined && 'errorText' in result ? result.errorText : null
        if (result !== undefined) shown.set(key, [...texts, text])
      }
      return text === null || text === undefined || outputText(item) === text ? item : { ...item, output: { type: 'text' as const, text } }
    })
  }

  const callModelInputFilter: CallModelInputFilter<any> = async ({ modelData }) => {
    const signal = turnSignal ?? options.abortSignal
    await answerRejection(modelData.input)
    // The service decides the step (R18, R81, R102); what follows puts it into the SDK's model call.
    const decided = await planMode.step(agent, signal ? { signal } : {})
    const deliveries = [...decided.messages.map(toInputItem), ...outbox.splice(0)]
    try {
      // An aborted turn sends no request, so nothing was told: no header (R30), the run stops.
      signal?.throwIfAborted()
      await append(REQUEST_HEADER_EVENT, { step: step++ })
    } catch (error) {
      outbox.unshift(...deliveries) // not sent: they go with the next model call
      throw error
    }
    if (isObject(servedRun)) answered.set(servedRun, answeredExitCalls(modelData.input, exitName))
    for (const message of deliveries) current.injections.push({ at: modelData.input.length, message })
    const all = interleaveInjections(showExitResults(modelData.input), current.injections)
    if (decided.handoff !== null) {
      // R102: the fresh context starts here: everything before this step's own deliveries is set aside.
      current.fresh = { cut: all.length - deliveries.length, seed: userItem(decided.handoff.text), handoff: decided.handoff }
      handoff = decided.handoff
    }
    const { fresh } = current
    const input = fresh === null ? all : [fresh.seed, ...all.slice(fresh.cut)]
    const instructions = composeInstructions(modelData.instructions, decided.section)
    return { ...modelData, input, ...(instructions === undefined ? {} : { instructions }) }
  }

  const startTurn = async ({ abortSignal }: RunTurnOptions = {}) => {
    await append(TURN_START_EVENT, {})
    turnSignal = abortSignal
    step = 0
  }

  const endTurn = async () => {
    turnSignal = undefined
    await append(TURN_END_EVENT, {})
  }

  /** The result a closed review's exit interruption gets in the state (R87): approved, or rejected with the outcome's text. */
  function settle(state: RunState<any, any>, item: RunToolApprovalItem, result: CallReviewResult): void {
    if ('output' in result) state.approve(item)
    else state.reject(item, { message: result.errorText })
  }

  return {
    tools,
    exitTool,
    callModelInputFilter,
    startTurn,
    endTurn,
    runTurn: <T>(run: () => T | PromiseLike<T>, turnOptions?: RunTurnOptions) => runInTurn(() => startTurn(turnOptions), endTurn, () => untilCompleted(run)),
    steer(message) {
      outbox.push(toInputItem(message))
    },
    history(items) {
      const all = interleaveInjections(items, current.injections)
      const { fresh } = current
      return fresh === null ? all : [fresh.seed, ...all.slice(fresh.cut)]
    },
    get handoff() {
      return handoff
    },
    saveState(state) {
      const run = runs.get(state._context)
      const saved: SavedRun = {
        [SAVED_RUN_FORMAT]: 1,
        state: state.toString(),
        injections: run?.injections ?? [],
        fresh: run?.fresh ?? null,
        answered: [...(answered.get(state._context) ?? [])],
      }
      return JSON.stringify(saved)
    },
    async restoreState(sdkAgent, text) {
      const saved = savedRun(text)
      if (saved === undefined) return sdk.RunState.fromString(sdkAgent, text)
      const state = await sdk.RunState.fromString(sdkAgent, saved.state)
      const record: RunRecord = { injections: [...saved.injections], fresh: saved.fresh }
      runs.set(state._context, record)
      answered.set(state._context, new Set(saved.answered))
      // `fromString` may have asked the tools already (`isEnabled`): this run is then the one served.
      if (servedRun === state._context) {
        current = record
        handoff = record.fresh?.handoff ?? null
      }
      return state
    },
    settleInterruptions(state) {
      const settled = planMode.callReviews.settled(agent)
      let count = 0
      for (const item of state.getInterruptions()) {
        const exitCall = exitCallOf(item, exitName)
        if (exitCall === undefined) continue
        const result = settled.resultOf(exitCall.callId, exitCall.input)
        if (result === undefined) continue
        settle(state, item, result)
        count++
      }
      return count
    },
    async answer(state, item, answer) {
      const exitCall = exitCallOf(item, exitName)
      const open = planMode.openReview(agent)
      if (exitCall === undefined || open === null || open.callId !== exitCall.callId || planArgument(exitCall.input) !== open.plan) {
        throw new Error(`the interruption answered is no ${exitName} call whose plan review is open; nothing was changed`)
      }
      const outcome = await planMode.answerReview(agent, open.reviewId, answer, { toldInResult: true })
      const result = planMode.callReviews.settled(agent).resultOf(exitCall.callId, exitCall.input)
      if (result !== undefined) settle(state, item, result)
      return outcome
    },
  }
}

/**
 * The `exit_plan_mode` function tool (R40–R51): the core's description and JSON Schema (a copy:
 * the core's is frozen; it is strict-compatible). The SDK only parses the arguments' JSON: the
 * core checks them, with R42's messages. Its
 * output is `exitTool.resultText` on approval and a failure's message otherwise (R156): the
 * library's exact texts, not the SDK's error wrapper.
 */
function exitPlanModeTool(planMode: PlanMode, agent: PlanAgent, answered: WeakMap<object, Set<string>>, onModelCall: (runContext: unknown) => void): FunctionTool {
  const { exitTool } = planMode
  const base: ExitToolBase = {
    // Always enabled (R40); the SDK asks before every model call, with the run's context.
    isEnabled: ({ runContext }) => {
      onModelCall(runContext)
      return true
    },
    name: exitTool.name,
    description: exitTool.description,
    parameters: structuredClone(exitTool.parameters),
    strict: true,
    errorFunction: (_context, error) => (error instanceof Error ? error.message : String(error)),
  }
  if (exitTool.reviews === 'durable') return durableExitTool(planMode, agent, base, answered)
  return sdk.tool({
    ...base,
    async execute(input, _context, details) {
      const callId = details?.toolCall?.callId
      await exitTool.execute(input, { agent, ...(details?.signal ? { signal: details.signal } : {}), ...(callId === undefined ? {} : { callId }) })
      return exitTool.resultText
    },
  }) as unknown as FunctionTool
}

/** The exit tool's fields in both kinds of service. */
interface ExitToolBase {
  name: string
  description: string
  parameters: ExitPlanModeParameters
  strict: true
  isEnabled: (args: { runContext: unknown }) => boolean
  errorFunction: (context: unknown, error: unknown) => string
}

/**
 * R155: a durable service's exit tool needs the SDK's approval, and the approval is the review.
 * `needsApproval` hands a new call to `callReviews.request` (a review opened for it needs
 * approval: the run stops at the interruption); a call it refuses needs none, and `execute`
 * then fails with the refusal. Asked again for the call its open review is bound to (a resumed
 * state without a decision), it needs approval and opens nothing. An approved call's `execute`
 * hands the approval to `callReviews.approve`, or gives the result of its review closed meanwhile.
 *
 * R168: the SDK keeps a run's approvals by call id and runs a later call of an approved id without
 * asking `needsApproval`. A call whose id had its result in the input of the model call that made
 * it, and that `needsApproval` was not asked about since, is such a replay: it answers nothing and
 * is refused, so an earlier approval never approves another review or plan.
 */
function durableExitTool(planMode: PlanMode, agent: PlanAgent, base: ExitToolBase, answered: WeakMap<object, Set<string>>): FunctionTool {
  const { exitTool, callReviews } = planMode
  /** Calls refused while the SDK asked whether they need approval, by call id: `execute` fails with it. */
  const refused = new Map<string, unknown>()
  const refuse = (callId: string, error: unknown) => {
    refused.delete(callId)
    refused.set(callId, error)
    for (const id of refused.keys()) {
      if (refused.size <= MAX_REFUSED_CALLS) break
      refused.delete(id)
    }
  }
  return sdk.tool({
    ...base,
    async needsApproval(context, input, callId) {
      const id = callId ?? ''
      answered.get(context)?.delete(id) // asked: this call is reviewed as itself, not replayed
      const open = planMode.openReview(agent)
      if (open !== null && open.callId === id && planArgument(input) === open.plan) return true
      try {
        await callReviews.request(agent, id, input)
        refused.delete(id)
        return true
      } catch (error) {
        refuse(id, error)
        return false
      }
    },
    async execute(input, context, details) {
      const callId = details?.toolCall?.callId ?? ''
      if (context !== undefined && answered.get(context)?.has(callId)) throw new Error(REPLAYED_CALL_MESSAGE(base.name, callId))
      const refusal = refused.get(callId)
      if (refusal !== undefined) {
        refused.delete(callId)
        throw refusal
      }
      const closed = callReviews.settled(agent).resultOf(callId, input)
      if (closed !== undefined) {
        if ('errorText' in closed) throw new Error(closed.errorText)
        return exitTool.resultText
      }
      await callReviews.approve(agent, callId, input)
      return exitTool.resultText
    },
  }) as unknown as FunctionTool
}

/**
 * A host function tool behind the guard (R88, R158): `invoke` asks the guard first; a blocked
 * call's output is the guard's message, which the model reads as the tool's result. Every other
 * field, and every tool that is not a function tool, is kept as it is.
 */
function guardTool(hostTool: Tool, guard: PlanGuard, agent: PlanAgent): Tool {
  if (hostTool.type !== 'function') return hostTool
  const readOnly = isReadOnlyTool(hostTool)
  const invoke: FunctionTool['invoke'] = async (runContext, input, details) => {
    try {
      await guard.check(agent, { tool: hostTool.name, callId: details?.toolCall?.callId ?? '', readOnly })
    } catch (error) {
      return error instanceof Error ? error.message : String(error)
    }
    return hostTool.invoke(runContext, input, details)
  }
  return Object.create(Object.getPrototypeOf(hostTool), { ...Object.getOwnPropertyDescriptors(hostTool), invoke: { configurable: true, enumerable: true, writable: true, value: invoke } }) as Tool
}

/**
 * What a replayed exit call's output reads (R168): a call of a run that repeats the id of an exit
 * call the run already answered, which the SDK runs as approved without asking.
 */
const REPLAYED_CALL_MESSAGE = (exitName: string, callId: string): string =>
  `${exitName} call "${callId}" repeats the id of a call this run already answered: its plan was not reviewed, and nothing was approved.`

/** The ids of the exit calls whose result is in `input`. */
function answeredExitCalls(input: readonly AgentInputItem[], exitName: string): Set<string> {
  const ids = new Set<string>()
  for (const item of input) if (item.type === 'function_call_result' && item.name === exitName) ids.add(item.callId)
  return ids
}

/**
 * `run()`'s value, once the run is over (R169): a streamed run's result (`StreamedRunResult`, which
 * `run` returns while the run goes on) after its `completed` settles; any other value as it is.
 */
async function untilCompleted<T>(run: () => T | PromiseLike<T>): Promise<Awaited<T>> {
  const value = await run()
  const completed = (value as { completed?: unknown } | null | undefined)?.completed
  if (typeof (value as { toStream?: unknown } | null | undefined)?.toStream === 'function' && typeof (completed as PromiseLike<void> | undefined)?.then === 'function') {
    await completed
  }
  return value
}

/** The exit call of an interruption, or undefined for another tool's. */
function exitCallOf(item: RunToolApprovalItem, exitName: string): { callId: string; input: unknown } | undefined {
  const raw = item.rawItem as { type?: unknown; name?: unknown; callId?: unknown; arguments?: unknown }
  if (raw.type !== 'function_call' || raw.name !== exitName || typeof raw.callId !== 'string') return undefined
  return { callId: raw.callId, input: parseArguments(raw.arguments) }
}

/** A function call's arguments as the tool reads them; undefined when they are not JSON. */
function parseArguments(text: unknown): unknown {
  if (typeof text !== 'string') return undefined
  try {
    return JSON.parse(text) as unknown
  } catch {
    return undefined
  }
}

/** The text of a function call result's output (a string, or a text output item). */
function outputText(item: AgentInputItem): string | undefined {
  if (item.type !== 'function_call_result') return undefined
  const output = item.output as unknown
  if (typeof output === 'string') return output
  const text = (output as { type?: unknown; text?: unknown } | null)?.type === 'text' ? (output as { text?: unknown }).text : undefined
  return typeof text === 'string' ? text : undefined
}

function findLast(items: readonly AgentInputItem[], test: (item: AgentInputItem) => boolean): AgentInputItem | undefined {
  for (let i = items.length - 1; i >= 0; i--) if (test(items[i]!)) return items[i]
  return undefined
}

/** The step's instructions (R18): the agent's, then the section, a blank line apart. */
function composeInstructions(instructions: string | undefined, section: string): string | undefined {
  if (section === '') return instructions
  if (instructions === undefined || instructions === '') return section
  return `${instructions}\n\n${section}`
}

function userItem(text: string): AgentInputItem {
  return { type: 'message', role: 'user', content: [{ type: 'input_text', text }] }
}

/**
 * A core `UserMessage` (a notice, R34, or a steered `/plan` message, R56) as an SDK user message:
 * text blocks become `input_text` parts; the SDK's own `input_image` and `input_file` parts (a
 * host's `/plan` attachments) pass through.
 * @throws TypeError for any other content part.
 */
function toInputItem(message: UserMessage): AgentInputItem {
  const content = message.content.map((part) => {
    const type = (part as { type?: unknown } | null | undefined)?.type
    if (type === 'text' && typeof (part as { text?: unknown }).text === 'string') return { type: 'input_text' as const, text: (part as { text: string }).text }
    if (type === 'input_image' || type === 'input_file' || type === 'input_text') return part as never
    throw new TypeError(`plan-mode: a message part of type ${JSON.stringify(type)} cannot be sent to the OpenAI Agents SDK; attach input_image or input_file parts`)
  })
  return { type: 'message', role: 'user', content }
}
