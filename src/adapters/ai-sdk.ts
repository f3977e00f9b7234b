/**
 * The Vercel AI SDK adapter (`ai@6`): plan mode for `generateText`, `streamText` and
 * `ToolLoopAgent`. It translates only: every plan decision is the service's (`planMode.step`:
 * the state in force, the section or the pinned plan, the notices, the handoff; `exitTool.execute`;
 * `planMode.callReviews`: which review a tool approval or denial answers, and what a closed one's
 * call results in); this module finds the SDK's calls, approvals and denials and moves the
 * service's answers into the SDK's step loop.
 *
 * Where the service's results go:
 * - the step's section: into the step's system prompt (`system + '\n\n' + section`; the section
 *   alone without a base system; the base system unchanged when the section is empty);
 * - the step's state in force: the planning model (R93); its handoff: a fresh context (R102);
 * - the notices: user messages at the position of the step they were produced for, kept there for
 *   the rest of the call (the SDK forgets `prepareStep` messages after their step; `transcript`
 *   hands them to the host's history afterwards). The bookkeeping is the core's
 *   `createCallTranscript`, which hosts of other frameworks use the same way;
 * - the exit tool's failures: thrown from `execute`, so the SDK sends the model a `tool-error`
 *   result whose text is the core's message; its success: the model is shown
 *   `exitTool.resultText`, the host's result keeps `{ approved: true }`.
 *
 * The adapter writes `turn/start`/`turn/end` (`runTurn`) and one `request/header { step }` per
 * step to the agent's session log. Keep one `withPlanMode` per agent for its lifetime (the queue
 * of steered messages lives in it) and run one loop at a time per agent.
 *
 * @module xstate-plan-mode/ai-sdk
 */

import {
  jsonSchema,
  tool,
  type FilePart,
  type ImagePart,
  type JSONSchema7,
  type LanguageModel,
  type ModelMessage,
  type PrepareStepFunction,
  type PrepareStepResult,
  type TextPart,
  type Tool,
  type ToolCallOptions,
  type ToolSet,
  type UIMessage,
  type UserModelMessage,
} from 'ai'
import { runInTurn } from '../plan/turn.js'
import type { ExitPlanModeTool, ExitToolResult } from '../plan/exit-tool.js'
import { REQUEST_HEADER_EVENT, TURN_END_EVENT, TURN_START_EVENT } from '../log/kinds.js'
import { createCallTranscript } from '../plan/transcript.js'
import type { PlanHandoff } from '../plan/handoff.js'
import type { CallDenial } from '../plan/call-review.js'
import { isReadOnlyTool, type PlanGuard } from '../guard/index.js'
import type { PlanMode } from '../service.js'
import type { PlanAgent, UserMessage } from '../types.js'

/**
 * The `exit_plan_mode` tool as an AI SDK tool: input `{ plan }`, output `{ approved: true }` (or,
 * for a durable service's host without approvals, `{ submitted: true, reviewId }`: R79).
 */
export type ExitPlanModeAiTool = Tool<{ plan: string }, ExitToolResult>

/** The host's tools plus `exit_plan_mode`, as `withPlanMode` hands them to the SDK. */
export type PlanModeToolSet<TOOLS extends ToolSet = ToolSet> = TOOLS & Record<ExitPlanModeTool['name'], ExitPlanModeAiTool>

/**
 * Options of `withPlanMode`: `{ planMode, agent, system, tools }` is the common case; the rest is
 * opt-in, one key per feature (`guard`, `planning`, `approvedPlan`).
 */
export interface WithPlanModeOptions<TOOLS extends ToolSet = ToolSet> {
  /** The plan-mode service (`createPlanMode`). */
  planMode: PlanMode
  /** The agent whose session this loop runs. */
  agent: PlanAgent
  /**
   * The base system prompt. Give it here, not to `generateText`: `prepareStep` sets every step's
   * system prompt, and a step with the section would otherwise replace the call's own `system`.
   */
  system?: string
  /** The host's tools; they pass through unchanged, in both states (R52). */
  tools?: TOOLS
  /** The default abort signal of a step boundary (R15); `runTurn`'s own signal overrides it. */
  abortSignal?: AbortSignal
  /**
   * The opt-in guard (`createPlanGuard` of `/guard`, R88–R91): every host tool with an `execute`
   * runs through it, so a side-effecting call while plan mode is in force is observed or blocked.
   * The tools keep every field but `execute` (R40: the catalog does not change).
   */
  guard?: PlanGuard
  /**
   * The model of the planning steps (R93): every step whose state in force is active (R18) runs
   * on `planning.model` with `planning.providerOptions`; every other step on the call's own model
   * and options. Chosen per step by `prepareStep`, so a `/plan off` typed mid-turn switches the
   * model at the next step. No fallback: when the planning model fails, the call fails with its
   * error and the call's model is not tried.
   * @throws TypeError from `withPlanMode` when the option has the wrong shape (R93).
   */
  planning?: PlanningModelOptions
  /** What the loop does with the plan the user approved (R98–R102). */
  approvedPlan?: ApprovedPlanOptions
}

/** The `approvedPlan` option of `withPlanMode` (R99, R102). */
export interface ApprovedPlanOptions {
  /**
   * Pins the plan the user approved last (R98) into the system prompt of every step whose state
   * in force is inactive (R99), after the base system, until plan mode is entered again: a
   * compaction that drops the conversation does not drop the plan. Off by default.
   */
  pin?: boolean
  /**
   * Called once when a plan approved into a fresh context (R101) is handed off, at the step that
   * starts the fresh context (R102), with the plan, its version and the decisions made.
   */
  onHandoff?: (handoff: PlanHandoff) => void
}

/** The shape of `approvedPlan`, as its errors name it (R129). */
const APPROVED_PLAN_SHAPE = '{ pin?, onHandoff? }'

/** The options `approvedPlan` groups, by the top-level names they had before it (R129). */
const UNGROUPED_APPROVED_PLAN_KEYS = { pinApprovedPlan: 'pin', onHandoff: 'onHandoff' } as const

/**
 * Checks `withPlanMode`'s `approvedPlan` option (R129) and returns a copy of it, read once, so that
 * a wrong value fails when the loop is wired, not at the step that hands a plan off (a callback
 * that is no function would fail every step that hands it off, and the handoff stays due).
 * @throws TypeError with the R129 message of the first check that fails.
 */
function approvedPlanOption(options: object, value: unknown): ApprovedPlanOptions {
  for (const [key, grouped] of Object.entries(UNGROUPED_APPROVED_PLAN_KEYS)) {
    if (Object.hasOwn(options, key)) {
      throw new TypeError(`withPlanMode option ${key} is approvedPlan.${grouped}: approvedPlan is ${APPROVED_PLAN_SHAPE}`)
    }
  }
  if (value === undefined) return {}
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new TypeError(`withPlanMode option approvedPlan must be ${APPROVED_PLAN_SHAPE}; got ${kindOfValue(value)}`)
  }
  const unknown = Reflect.ownKeys(value).filter((key) => key !== 'pin' && key !== 'onHandoff')
  if (unknown.length > 0) {
    throw new TypeError(`withPlanMode option approvedPlan has unknown key(s) ${unknown.map(String).join(', ')} — approvedPlan is ${APPROVED_PLAN_SHAPE}`)
  }
  const { pin, onHandoff } = value as Record<string, unknown>
  if (pin !== undefined && typeof pin !== 'boolean') throw new TypeError(`withPlanMode option approvedPlan.pin must be a boolean; got ${kindOfValue(pin)}`)
  if (onHandoff !== undefined && typeof onHandoff !== 'function') {
    throw new TypeError(`withPlanMode option approvedPlan.onHandoff must be a function; got ${kindOfValue(onHandoff)}`)
  }
  return { ...(pin === undefined ? {} : { pin }), ...(onHandoff === undefined ? {} : { onHandoff: onHandoff as ApprovedPlanOptions['onHandoff'] }) }
}

/** A wrong option value, for an error message: its JSON for a string, `null`, `an array`, else its type. */
function kindOfValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value)
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  return typeof value
}

/** The provider options a `prepareStep` may set (the SDK's `ProviderOptions`). */
export type StepProviderOptions = NonNullable<NonNullable<PrepareStepResult>['providerOptions']>

/** The `planning` option of `withPlanMode` (R93). */
export interface PlanningModelOptions {
  /**
   * The planning steps' model: whatever `prepareStep`'s `model` accepts, a language model object
   * (specification `v3` or `v2`) or a model id string the SDK's global provider resolves.
   */
  model: LanguageModel
  /**
   * Provider options of the planning steps, merged over the call's own `providerOptions` by the
   * SDK (per provider, per key; the planning value wins). Options meant only for the default
   * steps cannot be removed from a planning step: the SDK merges every `prepareStep`'s options
   * over the call's. The other steps get the call's options alone.
   */
  providerOptions?: StepProviderOptions
}

/** Options of `runTurn`. */
export interface RunTurnOptions {
  /** The turn's abort signal: pass the same one to `generateText`/`streamText`. */
  abortSignal?: AbortSignal
}

/** What `withPlanMode` returns: the SDK settings and the turn helpers of one agent's loop. */
export interface PlanModeAiSdk<TOOLS extends ToolSet = ToolSet> {
  /** The host's tools (the same objects) plus `exit_plan_mode`; identical in both states (R40, R52). */
  readonly tools: PlanModeToolSet<TOOLS>
  /**
   * Runs the step boundary before every step (R14), then logs `request/header` (R17), and returns
   * the step's system prompt and, once the call has injected messages, its messages.
   * With `planning` (R93), a step whose state in force is active also gets `model` (and
   * `providerOptions`, when given) from it.
   * A host with its own `prepareStep` wraps this one: `await plan.prepareStep(options)` first,
   * then its own settings on top (its `messages`, if any, must keep the injected ones; a `model`
   * of its own replaces the planning model).
   * @throws (rejects) when the boundary or the `request/header` append fails: the step does not run.
   */
  readonly prepareStep: PrepareStepFunction<PlanModeToolSet<TOOLS>>
  /**
   * Appends `turn/start`, runs `call`, and appends `turn/end` when it settles (R5). Resolves with
   * the call's value; rejects with the call's error (a failing `turn/end` append is then not
   * reported), else with the `turn/end` append's error.
   * With `streamText`, consume the stream inside `call` (`await result.consumeStream()`): the
   * turn ends when `call` settles. For a stream consumed elsewhere, use `startTurn`/`endTurn`.
   * @throws (rejects) with the `turn/start` append's error, before `call` runs.
   */
  runTurn<T>(call: () => T | PromiseLike<T>, options?: RunTurnOptions): Promise<Awaited<T>>
  /** Appends `turn/start` and sets the turn's abort signal; pair it with `endTurn`. */
  startTurn(options?: RunTurnOptions): Promise<void>
  /** Appends `turn/end` and clears the turn's abort signal. */
  endTurn(): Promise<void>
  /**
   * Queues a user message for the next request (this call's next step, or the next call's first
   * step), after that step's notices. Suits `PlanAgent.steer` (`/plan <message>`, R56).
   * @throws TypeError when a content part cannot be sent to the SDK (see `toModelMessage`).
   */
  steer(message: UserMessage): void
  /**
   * Takes the queued messages out, for a host that starts its next call with them: a
   * `/plan <message>` sent while idle belongs in that call's messages (the SDK refuses a call
   * without messages, and `prepareStep` runs only after that check).
   */
  takeSteered(): ModelMessage[]
  /**
   * The last call's response messages with the messages it injected (notices, steered messages)
   * at the places the model saw them: what to append to the host's history after the call.
   */
  transcript(responseMessages: readonly ModelMessage[]): ModelMessage[]
  /**
   * For a `useChat` host, on the UI messages a request brings, before `convertToModelMessages`
   * (R87): an `exit_plan_mode` part still asking for approval whose review the log has closed
   * meanwhile (a `/plan` superseded it, another tab or instance answered it) gets the result its
   * outcome gives, since the SDK wants one for every tool call. Returns the same array when
   * nothing changes; a review still open is left as it is.
   */
  settleClosedApprovals<M extends UIMessage>(messages: M[]): M[]
  /**
   * The handoff the current (or last) call made (R102), or null: after a call that made one, the
   * host REPLACES its history with `transcript(...)`, which then starts with the fresh context's
   * first message, instead of appending to it.
   */
  readonly handoff: PlanHandoff | null
}

/**
 * Builds the `exit_plan_mode` tool for one agent (R40–R51): the core's description and JSON
 * Schema; `execute` is the core's, so every check, keep-planning and dismissal reaches the model
 * as a tool error with the core's text; on approval the model is shown `exitTool.resultText`
 * (R50) while the host's tool result keeps `{ approved: true }`.
 */
export function exitPlanModeTool(planMode: PlanMode, agent: PlanAgent): ExitPlanModeAiTool {
  const { exitTool } = planMode
  const base = {
    description: exitTool.description,
    // No validator: the core checks the arguments itself, with the messages R42 fixes.
    inputSchema: jsonSchema<{ plan: string }>(exitTool.parameters as JSONSchema7),
  }
  if (exitTool.reviews === 'durable') return durableExitTool(planMode, agent, base)
  return tool<{ plan: string }, ExitToolResult>({
    ...base,
    outputSchema: jsonSchema<ExitToolResult>(exitTool.outputSchema as JSONSchema7),
    execute: (input, { abortSignal }) => exitTool.execute(input, { agent, signal: abortSignal }),
    toModelOutput: () => ({ type: 'text', value: exitTool.resultText }),
  })
}

/**
 * R82: a durable service's exit tool runs through the SDK's own tool approval; the service's
 * `callReviews` decide. `needsApproval` hands a new call to `callReviews.request` (a review opened
 * for it needs the user's approval; the SDK ends the response with the `tool-approval-request`),
 * and a call it refuses needs none: its `execute` fails with the refusal. In a later request,
 * perhaps another process, the client's approval makes the SDK run `execute`, which hands the
 * approval to `callReviews.approve`; a denial is handed to `callReviews.deny` by `prepareStep`.
 */
function durableExitTool(
  planMode: PlanMode,
  agent: PlanAgent,
  base: Pick<ExitPlanModeAiTool, 'description' | 'inputSchema'>,
): ExitPlanModeAiTool {
  const { exitTool, callReviews } = planMode
  /**
   * Calls refused while the SDK asked whether they need approval, by call id: `execute` fails
   * with it. The SDK runs `execute` right after a `false`, which takes the entry; only a step
   * aborted in between leaves one behind, so the oldest are let go past a bound.
   */
  const refused = new Map<string, unknown>()
  const refuse = (toolCallId: string, error: unknown) => {
    refused.delete(toolCallId)
    refused.set(toolCallId, error)
    for (const id of refused.keys()) {
      if (refused.size <= MAX_REFUSED_CALLS) break
      refused.delete(id)
    }
  }

  return tool<{ plan: string }, ExitToolResult>({
    ...base,
    async needsApproval(input, { toolCallId, messages }) {
      // The SDK asks again for an approved call before it runs it: `execute` hands the approval over.
      if (isApprovedCallRecheck(messages, toolCallId)) {
        refused.delete(toolCallId)
        return true
      }
      const request = callReviews.request(agent, toolCallId, input) // throws when the agent cannot be read
      try {
        await request
        refused.delete(toolCallId)
        return true
      } catch (error) {
        refuse(toolCallId, error)
        return false
      }
    },
    async execute(input, { toolCallId }) {
      const refusal = refused.get(toolCallId)
      if (refusal !== undefined) {
        refused.delete(toolCallId)
        throw refusal
      }
      return callReviews.approve(agent, toolCallId, input)
    },
    toModelOutput: () => ({ type: 'text', value: exitTool.resultText }),
  })
}

/** How many refused calls whose `execute` has not run yet a durable exit tool remembers (aborted steps leave theirs). */
const MAX_REFUSED_CALLS = 64

/**
 * Whether the SDK is checking an approved call again before it runs it: the request's last
 * message approves an approval request of `toolCallId` and holds no result for it (how the SDK
 * collects the approvals it acts on). A model's new call that reuses an id of the history is not.
 */
function isApprovedCallRecheck(messages: readonly ModelMessage[], toolCallId: string): boolean {
  const last = messages.at(-1)
  if (last?.role !== 'tool') return false
  if (last.content.some((part) => part.type === 'tool-result' && part.toolCallId === toolCallId)) return false
  const approvedIds = new Set(last.content.flatMap((part) => (part.type === 'tool-approval-response' && part.approved ? [part.approvalId] : [])))
  return messages.some(
    (message) =>
      message.role === 'assistant' &&
      typeof message.content !== 'string' &&
      message.content.some((part) => part.type === 'tool-approval-request' && part.toolCallId === toolCallId && approvedIds.has(part.approvalId)),
  )
}

/**
 * The exit calls whose approval the messages deny, by call id, with the input the denied card
 * showed and the reason given: the request's own denial (which the SDK has already answered with
 * an `execution-denied` result after it) and the earlier ones its history holds; for an id the
 * history reuses, the last denial.
 */
function deniedExitCalls(messages: readonly ModelMessage[], exitName: string): Map<string, CallDenial> {
  const denied = new Map<string, CallDenial>()
  /** Each approval request's call, with the input of the call it was made for. */
  const requests = new Map<string, { callId: string; input: unknown }>()
  for (const message of messages) {
    if (message.role !== 'assistant' || typeof message.content === 'string') continue
    const calls = new Map(message.content.flatMap((part) => (part.type === 'tool-call' && part.toolName === exitName ? [[part.toolCallId, part.input] as const] : [])))
    for (const part of message.content) {
      if (part.type === 'tool-approval-request' && calls.has(part.toolCallId)) {
        requests.set(part.approvalId, { callId: part.toolCallId, input: calls.get(part.toolCallId) })
      }
    }
  }
  for (const message of messages) {
    if (message.role !== 'tool') continue
    for (const part of message.content) {
      if (part.type !== 'tool-approval-response' || part.approved) continue
      const request = requests.get(part.approvalId)
      if (request !== undefined) denied.set(request.callId, { input: request.input, reason: part.reason })
    }
  }
  return denied
}

/**
 * The model's view of a denied exit call (R82): the SDK's `execution-denied` result becomes
 * `text(reason)`, the keep-planning text the user's answer means (R45, `callReviews.denialText`),
 * so the model reads what a channel service would have told it.
 */
function showDenials(messages: ModelMessage[], denied: ReadonlyMap<string, CallDenial>, text: (reason: string | undefined) => string): ModelMessage[] {
  if (denied.size === 0) return messages
  return messages.map((message) => {
    if (message.role !== 'tool') return message
    let changed = false
    const content = message.content.map((part) => {
      if (part.type !== 'tool-result' || !denied.has(part.toolCallId) || part.output.type !== 'execution-denied') return part
      changed = true
      return { ...part, output: { type: 'error-text' as const, value: text(denied.get(part.toolCallId)?.reason) } }
    })
    return changed ? { ...message, content } : message
  })
}

/**
 * Converts a core `UserMessage` (a notice, R34, or a steered `/plan` message, R56) to an AI SDK
 * user message. Text blocks become text parts; AI SDK `image` and `file` parts (attachments the
 * host passed to `/plan`) pass through unchanged.
 * @throws TypeError for any other content part.
 */
export function toModelMessage(message: UserMessage): UserModelMessage {
  return { role: 'user', content: message.content.map(toUserPart) }
}

/**
 * Wires plan mode into an AI SDK loop for one agent: returns `tools` and `prepareStep` for
 * `generateText`/`streamText` (or `ToolLoopAgent`), and the turn helpers.
 * @throws Error when a host tool is already named `exit_plan_mode`.
 * @throws TypeError when `planning` (R93) or `approvedPlan` (R129) has the wrong shape.
 */
export function withPlanMode<TOOLS extends ToolSet = {}>(options: WithPlanModeOptions<TOOLS>): PlanModeAiSdk<TOOLS> {
  const { planMode, agent, system } = options
  const planning = planningOption(options.planning)
  const approvedPlan = approvedPlanOption(options, options.approvedPlan)
  const pinApprovedPlan = approvedPlan.pin === true
  const onHandoff = approvedPlan.onHandoff
  const hostTools = options.tools ?? ({} as TOOLS)
  const exitName = planMode.exitTool.name
  if (Object.hasOwn(hostTools, exitName)) throw new Error(`withPlanMode: a host tool is already named "${exitName}"`)
  const guarded = options.guard === undefined ? hostTools : guardTools(hostTools, options.guard, agent)
  const tools = { ...guarded, [exitName]: exitPlanModeTool(planMode, agent) } as PlanModeToolSet<TOOLS>

  let turnSignal: AbortSignal | undefined
  /** Messages waiting for the next request: steered ones, and any a failed step did not send. */
  const outbox: ModelMessage[] = []
  /** The current (or last) call's injected messages, where the model saw them (SDK-neutral core helper). */
  const call = createCallTranscript<ModelMessage>()

  const append = async (type: string, data: unknown) => {
    await agent.session.append(type, data)
  }

  /** The length of the current call's input messages. */
  let inputLength = 0
  /** The fresh context of the current call (R102): where it starts in the call's messages, and its first message. */
  let fresh: { cut: number; seed: ModelMessage } | null = null
  /** The handoff the current (or last) call made (R102). */
  let handoff: PlanHandoff | null = null

  /** The exit calls this call's request denied (R82): shown to the model as keep planning. */
  let denied: ReadonlyMap<string, CallDenial> = new Map()

  /**
   * R82: the denials in the request's messages go to `callReviews.deny` (the open review bound
   * to a denied call keeps planning), before the boundary, so the step runs as logged.
   */
  async function answerDenials(messages: readonly ModelMessage[]): Promise<void> {
    denied = deniedExitCalls(messages, exitName)
    await planMode.callReviews.deny(agent, denied)
  }

  const prepareStep: PrepareStepFunction<PlanModeToolSet<TOOLS>> = async ({ stepNumber, messages }) => {
    if (stepNumber === 0) {
      call.startCall(messages.length)
      inputLength = messages.length
      fresh = null
      handoff = null
      await answerDenials(messages)
    }
    const signal = turnSignal ?? options.abortSignal
    // The service decides the step (R18, R93, R99, R102); what follows puts it into the SDK's step.
    const step = await planMode.step(agent, { ...(signal ? { signal } : {}), pinApprovedPlan })
    // Notices first: the user switched the mode before sending anything that follows it.
    const deliveries = [...step.messages.map(toModelMessage), ...outbox.splice(0)]
    try {
      // An aborted call sends no request, so nothing was told: no header (R30), the step stops.
      signal?.throwIfAborted()
      // After the boundary, so that its plan/mode append lands first (R17).
      await append(REQUEST_HEADER_EVENT, { step: stepNumber })
    } catch (error) {
      outbox.unshift(...deliveries) // not sent: they go with the next request
      throw error
    }
    const allMessages = showDenials(call.inject(messages, deliveries), denied, planMode.callReviews.denialText)
    if (step.handoff !== null) {
      // R102: the fresh context starts here: everything before this step's own deliveries is set aside.
      fresh = { cut: allMessages.length - deliveries.length, seed: { role: 'user', content: [{ type: 'text', text: step.handoff.text }] } }
      handoff = step.handoff
      onHandoff?.(step.handoff)
    }
    const stepMessages = fresh === null ? allMessages : [fresh.seed, ...allMessages.slice(fresh.cut)]

    const result: PrepareStepResult<PlanModeToolSet<TOOLS>> = {}
    const stepSystem = composeSystem(system, step.section)
    if (stepSystem !== undefined) result.system = stepSystem
    if (call.injections.length > 0 || denied.size > 0 || fresh !== null) result.messages = stepMessages
    // R93: the step's state in force picks the model. No fallback: the SDK runs this model only.
    if (planning !== undefined && step.active) {
      result.model = planning.model
      if (planning.providerOptions !== undefined) result.providerOptions = planning.providerOptions
    }
    return result
  }

  const startTurn = async ({ abortSignal }: RunTurnOptions = {}) => {
    await append(TURN_START_EVENT, {})
    turnSignal = abortSignal
  }

  const endTurn = async () => {
    turnSignal = undefined
    await append(TURN_END_EVENT, {})
  }

  return {
    tools,
    prepareStep,
    startTurn,
    endTurn,
    runTurn: <T>(run: () => T | PromiseLike<T>, turnOptions?: RunTurnOptions) => runInTurn(() => startTurn(turnOptions), endTurn, run),
    steer(message) {
      outbox.push(toModelMessage(message))
    },
    takeSteered() {
      return outbox.splice(0)
    },
    transcript(responseMessages) {
      const all = call.transcript(responseMessages)
      // R102: after a handoff the history starts again, from the fresh context's first message.
      return fresh === null ? all : [fresh.seed, ...all.slice(fresh.cut - inputLength)]
    },
    get handoff() {
      return handoff
    },
    settleClosedApprovals(messages) {
      const waiting = (part: unknown): part is { type: string; state: string; toolCallId: string } =>
        (part as { type?: unknown }).type === `tool-${exitName}` && (part as { state?: unknown }).state === 'approval-requested'
      if (!messages.some((m) => m.role === 'assistant' && m.parts.some(waiting))) return messages
      const settledCalls = planMode.callReviews.settled(agent)
      let changed = false
      const settled = messages.map((message) => {
        if (message.role !== 'assistant' || !message.parts.some(waiting)) return message
        const parts = message.parts.map((part) => {
          const result = waiting(part) ? settledCalls.resultOf(part.toolCallId, (part as { input?: unknown }).input) : undefined
          if (result === undefined) return part
          changed = true
          const { approval: _approval, ...rest } = part as typeof part & { approval?: unknown }
          return 'output' in result
            ? { ...rest, state: 'output-available', output: result.output }
            : { ...rest, state: 'output-error', errorText: result.errorText }
        })
        return { ...message, parts } as typeof message
      })
      return changed ? settled : messages
    },
  }
}

/** The keys `planning` may have (R93). */
const PLANNING_KEYS = ['model', 'providerOptions']

/**
 * Checks `withPlanMode`'s `planning` option (R93) and returns a copy of it, so that a later change
 * to the host's object does not switch models mid-call.
 * @throws TypeError with the R93 message of the first check that fails.
 */
function planningOption(planning: unknown): PlanningModelOptions | undefined {
  if (planning === undefined) return undefined
  const given = planning as Partial<Record<string, unknown>> | null
  if (given === null || typeof given !== 'object' || given.model === undefined || given.model === null) {
    throw new TypeError('withPlanMode option planning needs a model: planning is { model, providerOptions? }')
  }
  const unknown = Reflect.ownKeys(given).filter((key) => typeof key !== 'string' || !PLANNING_KEYS.includes(key))
  if (unknown.length > 0) {
    throw new TypeError(
      `withPlanMode option planning has unknown key(s) ${unknown.map(String).join(', ')} — planning is { model, providerOptions? }`,
    )
  }
  const { model, providerOptions } = given
  const version = typeof model === 'object' ? (model as { specificationVersion?: unknown }).specificationVersion : undefined
  if (!(typeof model === 'string' && model.trim() !== '') && version !== 'v3' && version !== 'v2') {
    throw new TypeError(
      `withPlanMode option planning.model must be a language model (specificationVersion v3 or v2) or a model id string; got ${describeValue(model)}`,
    )
  }
  if (providerOptions !== undefined && (providerOptions === null || typeof providerOptions !== 'object' || Array.isArray(providerOptions))) {
    throw new TypeError(
      `withPlanMode option planning.providerOptions must be an object of options by provider name; got ${describeValue(providerOptions)}`,
    )
  }
  return {
    model: model as LanguageModel,
    ...(providerOptions === undefined ? {} : { providerOptions: providerOptions as StepProviderOptions }),
  }
}

/** A wrong option value, for an error message: its JSON for a string, else its kind. */
function describeValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value)
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  if (typeof value === 'object') return 'an object without a specificationVersion of v3 or v2'
  return typeof value
}

/**
 * The host's tools with each `execute` behind the guard (R88): the same fields otherwise, so the
 * model sees the same catalog. A streaming tool (`async *execute`) stays a stream: the guard
 * decides before its first value. A tool without `execute` runs on the client and passes as it is.
 */
function guardTools<TOOLS extends ToolSet>(tools: TOOLS, guard: PlanGuard, agent: PlanAgent): TOOLS {
  const guarded: ToolSet = {}
  // Defined, never assigned: a host tool named `__proto__` would set the set's prototype and
  // leave the catalog (R40).
  const defineTool = (name: string, tool: Tool) => Object.defineProperty(guarded, name, { configurable: true, enumerable: true, writable: true, value: tool })
  for (const [name, original] of Object.entries(tools)) {
    // A host's `execute` getter that throws (R88) is read again when the call runs, after the
    // guard decided: the call fails with its error then, never `withPlanMode` now.
    let execute: unknown
    try {
      execute = original.execute
    } catch {
      execute = function (this: Tool, input: unknown, options: ToolCallOptions) {
        return (this.execute as (input: unknown, options: ToolCallOptions) => unknown)(input, options)
      }
    }
    if (typeof execute !== 'function') {
      defineTool(name, original)
      continue
    }
    const readOnly = isReadOnlyTool(original)
    const call = (toolCallId: string) => ({ tool: name, callId: toolCallId, readOnly })
    // The tool's own fields copied as they are, getters included, without reading them: a getter
    // of the host's (a `readOnly` that throws, R88) is not run here, and the SDK sees the same
    // fields, and prototype, as without a guard (R40).
    const { execute: _execute, ...fields } = Object.getOwnPropertyDescriptors(original)
    const guardedExecute: PropertyDescriptor = {
      configurable: true,
      enumerable: true,
      writable: true,
      value: isAsyncGeneratorFunction(execute)
        ? async function* (input: unknown, options: ToolCallOptions) {
            await guard.check(agent, call(options.toolCallId))
            yield* execute.call(original, input, options) as AsyncIterable<unknown>
          }
        : (input: unknown, options: ToolCallOptions) => guard.run(agent, call(options.toolCallId), () => execute.call(original, input, options)),
    }
    defineTool(name, Object.create(Object.getPrototypeOf(original), { ...fields, execute: guardedExecute }) as Tool)
  }
  return guarded as TOOLS
}

/** Whether `fn` is an `async function*` (its calls return a stream, not a promise). */
const isAsyncGeneratorFunction = (fn: unknown) => Object.prototype.toString.call(fn) === '[object AsyncGeneratorFunction]'

/** The step's system prompt (R18): the base, then the section, a blank line apart. */
function composeSystem(system: string | undefined, section: string): string | undefined {
  if (section === '') return system === '' ? undefined : system
  if (system === undefined || system === '') return section
  return `${system}\n\n${section}`
}

function toUserPart(part: unknown): TextPart | ImagePart | FilePart {
  const type = (part as { type?: unknown } | null | undefined)?.type
  if (type === 'text' && typeof (part as TextPart).text === 'string') return { type: 'text', text: (part as TextPart).text }
  if (type === 'image' || type === 'file') return part as ImagePart | FilePart
  throw new TypeError(
    `plan-mode: a message part of type ${JSON.stringify(type)} cannot be sent to the AI SDK; attach AI SDK image or file parts`,
  )
}


