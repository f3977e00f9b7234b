/** The LangGraph adapter's state, nodes, routers and helpers (`xstate-plan-mode/langgraph` re-exports them; see there). */

import type * as LangGraph from '@langchain/langgraph'
import type * as Messages from '@langchain/core/messages'
import type * as Tools from '@langchain/core/tools'
import type { RunnableConfig } from '@langchain/core/runnables'
import { REQUEST_HEADER_EVENT, TURN_END_EVENT, TURN_START_EVENT, isTurnOpen } from '../log/kinds.js'
import { planArgument, type ExitToolResult } from '../plan/exit-tool.js'
import { reviewQuestion } from '../plan/review.js'
import type { PlanMode } from '../service.js'
import type { PlanAgent, ReviewAnswer, SessionEvent, SessionLog } from '../types.js'

/** The node names the adapter's routers return (`afterModel`, `afterTools`). */
export const PLAN_GRAPH_NODES = Object.freeze({
  boundary: 'plan_boundary',
  tools: 'plan_tools',
  review: 'plan_review',
  end: 'plan_end',
} as const)

/**
 * What the model reads of a tool call its run left without a result (a run stopped or aborted
 * between the model's answer and the tool's, R149): the model's message stays, and the call is
 * answered with this, status `error`.
 */
export const TOOL_CALL_STOPPED_TEXT = 'The run stopped before this tool call finished; it may not have run. Call it again if it is still needed.'

/** The graph's state as the adapter reads and writes it (`State`'s channels). */
export interface PlanGraphState {
  /** The conversation (`MessagesAnnotation`'s channel and reducer). */
  messages: Messages.BaseMessage[]
  /** The agent's session log (R145): plan mode's events, seq one after another. */
  planLog: SessionEvent[]
  /** The step's part of the system prompt (`planMode.step`'s `section`, R18, R99). */
  planSection: string
  /** The step's state in force (R18): pick a planning model with it (R93). */
  planActive: boolean
}

/** A node's update of the plan channels (and `messages`). */
export type PlanGraphUpdate = Partial<{ messages: Messages.BaseMessage[]; planLog: SessionEvent[]; planSection: string; planActive: boolean }>

/** The name of one of the adapter's nodes (`PLAN_GRAPH_NODES`). */
export type PlanGraphNode = (typeof PLAN_GRAPH_NODES)[keyof typeof PLAN_GRAPH_NODES]

/**
 * The host's model node for `lg.graph`: it calls the chat model with its system prompt and
 * `state.planSection` (R18), and returns the model's message (`{ messages: [aiMessage] }`).
 */
export type PlanModelNode = (state: PlanGraphState, config: LangGraph.LangGraphRunnableConfig) => PlanGraphUpdate | Promise<PlanGraphUpdate>

/** Options of `lg.graph`. */
export interface PlanGraphOptions<M extends string = 'model'> {
  /** The model node's name in the graph. Default `'model'`. */
  modelNode?: M
}

/**
 * What `lg.graph` returns: a `StateGraph` on `lg.State` with the adapter's nodes and the model
 * node wired (R165), not compiled yet.
 */
export type PlanStateGraph<M extends string = 'model'> = LangGraph.StateGraph<
  PlanGraphSpec,
  LangGraph.StateType<PlanGraphSpec>,
  LangGraph.UpdateType<PlanGraphSpec>,
  typeof LangGraph.START | PlanGraphNode | M,
  PlanGraphSpec,
  PlanGraphSpec
>

/** What the `plan_review` node's `interrupt()` carries: what a UI renders (JSON data, R146). */
export interface PlanReviewInterrupt {
  readonly kind: 'plan-review'
  readonly reviewId: string
  readonly callId: string
  readonly title: string
  readonly plan: string
  /** The plan's version in its planning episode, 1, 2, … as `planHistory` numbers it (`openReview(agent).version`, R138). */
  readonly version: number
  /** The question to render (R43, R101). */
  readonly question: ReturnType<typeof reviewQuestion>
  /** Why the answer the run was last resumed with was refused (nothing was changed; R146), when it was. */
  readonly refused?: string
}

/**
 * What the `plan_review` node is resumed with (R146): the user's answer with the `reviewId` of the
 * card it answers (the interrupt's), or the id alone of a review answered meanwhile. An answer
 * naming another review (a stale card's) is not recorded; one naming none is refused: either way
 * the run pauses again at the open review.
 */
export type PlanReviewResume = (ReviewAnswer & { reviewId: string }) | { reviewId: string }

/** The refusal of an answer that names no review (R146): a consent must say which plan it is for. */
export const UNNAMED_ANSWER_MESSAGE =
  'plan-mode langgraph: an answer must name the review it answers (resume with { reviewId, answers }, the reviewId of the interrupt); nothing was recorded'

/**
 * The refusal of a plan-mode node, `agent` or `resumeClosedReview` while a run of the same thread
 * is in a plan-mode node in this process (R177): a node's appends go into its own run's update,
 * and a second run or a helper would take them or rebuild the log under it.
 */
export const concurrentRunMessage = (threadId: string) =>
  `plan-mode langgraph: a run of thread ${JSON.stringify(threadId)} is in a plan-mode node in this process; run a thread's runs one at a time, and call agent or resumeClosedReview while it is paused or idle (nothing was recorded)`

/** Options of `createLangGraphPlanMode`. */
export interface LangGraphPlanModeOptions {
  /** The plan-mode service; its reviews must be durable (`review: 'durable'`, R78). */
  planMode: PlanMode
  /** The host's tools (`tool()` of `@langchain/core/tools`, or any `StructuredToolInterface`); they run the same in both states (R52). */
  tools?: readonly Tools.StructuredToolInterface[]
  /** The agent's id for a run's config: by default its `configurable.thread_id`. */
  agentId?: (config: RunnableConfig) => string
  /** Pins the plan approved last into `planSection` while it is carried out (R99). */
  pinApprovedPlan?: boolean
}

/** What `createLangGraphPlanMode` returns: the state, the nodes, the routers and the helpers of one graph. */
export interface LangGraphPlanMode {
  /** `MessagesAnnotation`'s `messages` plus the plan channels: `new StateGraph(lg.State)`. */
  readonly State: LangGraph.AnnotationRoot<PlanGraphSpec>
  /** The plan channels alone, to spread into a host's own `Annotation.Root({ ...spec, ...lg.channels })`. */
  readonly channels: Omit<PlanGraphSpec, 'messages'>
  /** The host's tools plus `exit_plan_mode`, for `model.bindTools(lg.toolDefinitions)`. */
  readonly toolDefinitions: readonly Tools.StructuredToolInterface[]
  /** `exit_plan_mode` as a LangChain tool (its own copy of the schema, R150); `plan_tools` runs it, never LangChain. */
  readonly exitTool: Tools.StructuredToolInterface
  /** Node `plan_boundary`: the step boundary, before each model call (R14, R145). */
  boundary(state: PlanGraphState, config: RunnableConfig): Promise<PlanGraphUpdate>
  /** Node `plan_tools`: runs the last model message's tool calls (R150). */
  tools(state: PlanGraphState, config: RunnableConfig): Promise<PlanGraphUpdate>
  /** Node `plan_review`: pauses at the open review of the exit call, records the answer it is resumed with (R146). */
  review(state: PlanGraphState, config: RunnableConfig): Promise<PlanGraphUpdate>
  /** Node `plan_end`: ends the turn (`turn/end`, R5) before `END`. */
  endTurn(state: PlanGraphState, config: RunnableConfig): Promise<PlanGraphUpdate>
  /**
   * The standard graph around the host's model node (R165): `START → plan_boundary → model`, then
   * `afterModel` to `plan_tools` or `plan_end`, `afterTools` to `plan_review` or `plan_boundary`,
   * `plan_review → plan_boundary`, `plan_end → END`. A new, uncompiled `StateGraph` on `State` at
   * each call: add your own nodes and edges if you like, then `.compile({ checkpointer })`.
   * @param model the model node (see `PlanModelNode`)
   * @param options `modelNode`: the model node's name (default `'model'`)
   * @throws LangGraph's own error when `modelNode` is one of the adapter's node names, `__start__` or `__end__`.
   * @example const graph = lg.graph(callModel).compile({ checkpointer })
   */
  graph<M extends string = 'model'>(model: PlanModelNode, options?: PlanGraphOptions<M>): PlanStateGraph<M>
  /** Router after the model node: `plan_tools` when it called tools, else `plan_end`. */
  afterModel(state: PlanGraphState): 'plan_tools' | 'plan_end'
  /** Router after `plan_tools`: `plan_review` when an exit call waits for its review, else `plan_boundary`. */
  afterTools(state: PlanGraphState): 'plan_review' | 'plan_boundary'
  /**
   * The thread's agent for a call outside the graph's nodes (an answer, a `/plan`, `get`): its log
   * is read from `graph.getState(config)`, and each append is written with `graph.updateState`
   * (R145). Call it while the run is paused or idle. The adapter keeps the thread in memory while
   * the service keeps this agent attached (R166); named again after that, it is read again from the graph.
   */
  agent(graph: PlanGraphHandle, config: RunnableConfig): Promise<PlanAgent>
  /**
   * For a run paused at `plan_review` whose review closed meanwhile (a `/plan` superseded it, an
   * answer recorded outside the graph): the `Command({ resume: { reviewId } })` that lets the run
   * take the outcome, or null when the run is not paused at a closed review (R147).
   */
  resumeClosedReview(graph: PlanGraphHandle, config: RunnableConfig): Promise<LangGraph.Command<{ reviewId: string }, Record<string, never>, never> | null>
}

/** What the adapter reads and writes of a compiled graph (`graph.compile(...)`). */
export interface PlanGraphHandle {
  getState(config: RunnableConfig): Promise<{ values: unknown; next: readonly string[] }>
  updateState(config: RunnableConfig, values: Record<string, unknown>, asNode?: string): Promise<RunnableConfig>
}

/** The channels of `State`. */
export type PlanGraphSpec = {
  messages: LangGraph.BinaryOperatorAggregate<Messages.BaseMessage[], LangGraph.Messages>
  planLog: LangGraph.BinaryOperatorAggregate<SessionEvent[], SessionEvent[]>
  planSection: LangGraph.LastValue<string>
  planActive: LangGraph.LastValue<boolean>
}

/** The optional peers this entry point loads, and what installs each (R148). */
const PEERS = { '@langchain/langgraph': '@langchain/langgraph@1', '@langchain/core': '@langchain/core@1' } as const

/**
 * Loads an optional peer (R148) with the host's own module system (`import()` in ESM, `require`
 * in CommonJS), so the adapter and the host share one copy of LangGraph.
 * @throws Error `` xstate-plan-mode/langgraph needs the `<name>` package (npm install <name>@1) ``,
 *   `code` `MODULE_NOT_FOUND`, when it is not installed.
 */
async function peer<T>(name: keyof typeof PEERS, load: () => Promise<T>): Promise<T> {
  try {
    return await load()
  } catch (error) {
    const code = (error as { code?: unknown }).code
    if ((code === 'MODULE_NOT_FOUND' || code === 'ERR_MODULE_NOT_FOUND') && String((error as Error).message).includes(name)) {
      throw Object.assign(new Error(`xstate-plan-mode/langgraph needs the \`${name}\` package (npm install ${PEERS[name]})`), { code: 'MODULE_NOT_FOUND' })
    }
    throw error
  }
}

/**
 * The appends to a session log, in their order. Each event is the log's; its seq is the one
 * after the log's last (the channel's reducer takes an event only at that seq, R145).
 */
function appendEvents(current: SessionEvent[], update: SessionEvent[] | SessionEvent): SessionEvent[] {
  const added = Array.isArray(update) ? update : [update]
  let next = current
  for (const event of added) {
    const last = next[next.length - 1]
    // An event at a seq the channel holds already is not appended (another writer took it), nor one
    // past the seq after the log's last (the first event of an empty log may have any seq, R74).
    if (typeof event?.seq !== 'number' || (last !== undefined && event.seq !== last.seq + 1)) continue
    if (next === current) next = [...current]
    next.push(event)
  }
  return next
}

/** Whether two events are the same event of a log (a deserialised copy counts). */
function sameEvent(a: SessionEvent, b: SessionEvent): boolean {
  return a.seq === b.seq && a.type === b.type && JSON.stringify(a.data) === JSON.stringify(b.data)
}

/** What a thread's log tells the adapter that keeps it (R166). */
interface ThreadLogKeeper {
  /** The service listens to the log (an agent attached on it): it is the thread's log in this process. */
  listened(log: ThreadLog): void
  /** Nothing holds the log any more (no listener, no node, no write in flight): the adapter may let it go. */
  idle(log: ThreadLog): void
}

/**
 * A thread's session log in this process (R145): the events the graph's `planLog` holds, plus the
 * appends staged since. In a node every append is staged, and the node returns them (`staging`)
 * with its update; outside a node (`writer` set, also after nodes ran) an append is written with
 * `graph.updateState` and resolves once the graph's state holds it. It is held while the service listens to it (its agent
 * is attached), a node or a helper works on it, or a write is in flight; when none is left it tells
 * its keeper, which lets it go (R166).
 */
class ThreadLog implements SessionLog {
  readonly events: SessionEvent[] = []
  /** The thread's agent: its id, and this log as its session. */
  readonly agent: PlanAgent
  readonly #listeners = new Set<(event: SessionEvent) => void>()
  #staged: SessionEvent[] = []
  /** Outside a node: how appends are written (set by `lg.agent`, kept across nodes); the chain keeps them in order. */
  writer: { graph: PlanGraphHandle; config: RunnableConfig } | undefined
  /** The nodes running on the log now: meanwhile every append is staged for their update. */
  #inNodes = 0
  #writing: Promise<unknown> = Promise.resolve()
  /** The nodes and helpers working on the log now (`hold`). */
  #holds = 0
  readonly #keeper: ThreadLogKeeper

  constructor(id: string, committed: readonly SessionEvent[], keeper: ThreadLogKeeper) {
    this.agent = { id, session: this }
    this.#keeper = keeper
    for (const event of committed) this.events.push(Object.freeze({ seq: event.seq, type: event.type, data: event.data }))
  }

  /** A node or helper starts working on the log: it is kept until the matching `release`. */
  hold(): void {
    this.#holds++
  }

  /** The work `hold` announced is done. */
  release(): void {
    this.#holds--
    this.#settle()
  }

  /** Tells the keeper when nothing holds the log any more. */
  #settle(): void {
    if (this.#holds === 0 && this.#listeners.size === 0 && this.#pendingWrites === 0) this.#keeper.idle(this)
  }

  /**
   * Runs a node's `work` with the log's appends staged, and resolves with its value and the
   * events it staged; a failure leaves them staged, so the log is ahead of the graph's.
   */
  /** A node is working on the log now: its appends are being staged. */
  get inNode(): boolean {
    return this.#inNodes > 0
  }

  async staging<T>(work: () => Promise<T>): Promise<{ value: T; staged: SessionEvent[] }> {
    this.#inNodes++
    try {
      const value = await work()
      return { value, staged: this.#staged.splice(0) }
    } finally {
      this.#inNodes--
    }
  }

  /**
   * Follows the graph's `planLog`: the events it holds beyond ours are taken (and told, as another
   * writer's). False when ours are not a prefix of it, or appends were staged and never returned
   * (a node that failed): the log is then rebuilt from the graph's.
   */
  follow(committed: readonly SessionEvent[]): boolean {
    if (this.#staged.length > 0 || committed.length < this.events.length) return false
    const shared = this.events.length
    if (shared > 0 && !sameEvent(this.events[shared - 1]!, committed[shared - 1]!)) return false
    for (const event of committed.slice(shared)) this.#push(Object.freeze({ seq: event.seq, type: event.type, data: event.data }))
    return true
  }

  append(type: string, data: unknown): SessionEvent | Promise<SessionEvent> {
    const last = this.events[this.events.length - 1]
    const writer = this.#inNodes > 0 ? undefined : this.writer
    const event: SessionEvent = Object.freeze({ seq: (last?.seq ?? 0) + 1 + (writer === undefined ? 0 : this.#pendingWrites), type, data })
    if (writer === undefined) {
      this.#staged.push(event)
      this.#push(event)
      return event
    }
    this.#pendingWrites++
    const written = this.#writing.then(async () => {
      try {
        // An append queued behind one that failed was numbered after it: it is not written either.
        if (event.seq !== (this.events[this.events.length - 1]?.seq ?? 0) + 1) throw this.#failed ?? new Error(`plan-mode langgraph: the thread's log already has seq ${event.seq} (another writer appended first); the ${type} event was not written`)
        await writer.graph.updateState(writer.config, { planLog: [event] })
        const held = planLogOf((await writer.graph.getState(writer.config)).values)
        const landed = held[event.seq - (held[0]?.seq ?? 1)]
        if (landed === undefined || !sameEvent(landed, event)) {
          this.#failed = new Error(`plan-mode langgraph: the thread's log already has seq ${event.seq} (another writer appended first); the ${type} event was not written`)
          throw this.#failed
        }
        this.#push(event)
        return event
      } finally {
        this.#pendingWrites--
        this.#settle()
      }
    })
    this.#writing = written.catch(() => {})
    return written
  }

  #pendingWrites = 0
  /** The error of the last append that another writer beat: the appends queued behind it reject with it. */
  #failed: Error | undefined

  subscribe(listener: (event: SessionEvent) => void): () => void {
    this.#listeners.add(listener)
    this.#keeper.listened(this)
    return () => {
      if (this.#listeners.delete(listener)) this.#settle()
    }
  }

  #push(event: SessionEvent): void {
    this.events.push(event)
    for (const listener of [...this.#listeners]) listener(event)
  }
}

/** The `planLog` of a graph state's values (`[]` when it has none). */
function planLogOf(values: unknown): SessionEvent[] {
  const log = (values as { planLog?: unknown } | null | undefined)?.planLog
  return Array.isArray(log) ? (log as SessionEvent[]) : []
}

/** The number of `request/header` events since the turn's `turn/start`: the step's number in the turn. */
function stepInTurn(events: readonly SessionEvent[]): number {
  let steps = 0
  for (let i = events.length - 1; i >= 0; i--) {
    const type = events[i]!.type
    if (type === TURN_START_EVENT) break
    if (type === REQUEST_HEADER_EVENT) steps++
  }
  return steps
}

/**
 * The threads' logs in this process, each while something holds it (R166): the service listens to
 * it (its agent is attached: memory follows `limits.maxAttachedAgents`, R77), a node or a helper
 * works on it, or a write is in flight. A thread let go is read again from the graph's `planLog`
 * when next named, as after a restart.
 */
class ThreadLogs implements ThreadLogKeeper {
  readonly #held = new Map<string, ThreadLog>()
  /**
   * The logs let go, weakly: while a host still holds one (it kept `lg.agent`'s agent), the thread
   * is named on that log again, so the thread has one agent in this process; once collected, its
   * entry goes (the registry), so memory still follows the bound.
   */
  readonly #letGo = new Map<string, WeakRef<ThreadLog>>()
  readonly #collected = new FinalizationRegistry<string>((id) => {
    if (this.#letGo.get(id)?.deref() === undefined) this.#letGo.delete(id)
  })
  readonly #planMode: PlanMode

  constructor(planMode: PlanMode) {
    this.#planMode = planMode
  }

  /** The service listens to `log`: an agent attached on a log let go of (a host kept `lg.agent`'s agent) is the thread's log again. */
  listened(log: ThreadLog): void {
    if (this.#held.get(log.agent.id) !== log) this.#held.set(log.agent.id, log)
  }

  /** Nothing holds `log` any more: it is let go (weakly kept while a host holds it). */
  idle(log: ThreadLog): void {
    const { id } = log.agent
    if (this.#held.get(id) !== log) return
    this.#held.delete(id)
    this.#letGo.set(id, new WeakRef(log))
  }

  /**
   * Runs `work` on the thread's log, held meanwhile, its events following the graph's `planLog`
   * (R145). A log that went ahead of the graph (a node failed after staging appends, a checkpoint
   * was not written) is dropped: the agent is detached, and attached again from the graph's log.
   */
  async withLog<T>(committed: readonly SessionEvent[], id: string, work: (log: ThreadLog) => Promise<T>): Promise<T> {
    const known = this.#held.get(id) ?? this.#letGo.get(id)?.deref()
    // R177: a second run of the thread (or a helper) would take the running node's staged appends or rebuild the log under it.
    if (known?.inNode === true) throw new Error(concurrentRunMessage(id))
    const followed = known !== undefined && known.follow(committed)
    const log = followed ? known : new ThreadLog(id, committed, this)
    if (!followed) this.#collected.register(log, id) // once per log: its entry in `letGo` goes with it
    log.hold()
    this.#held.set(id, log)
    try {
      if (!followed && known !== undefined) {
        this.#planMode.detach(known.agent)
        // An aborted boundary changes nothing (R15); it waits for the detach and attaches from the graph's log.
        await this.#planMode.stepBoundary(log.agent, { signal: AbortSignal.abort() })
      }
      return await work(log)
    } finally {
      log.release()
    }
  }
}

/** A tool call of the model: LangChain's `ToolCall`, its id required. */
interface Call {
  id: string
  name: string
  args: unknown
}

/**
 * Builds plan mode for one LangGraph graph (see the module's example).
 * @throws (rejects) `` xstate-plan-mode/langgraph needs the `<name>` package (npm install <name>@1) `` when a peer is missing (R148).
 * @throws (rejects) TypeError when the service's reviews are not durable, or a host tool is named `exit_plan_mode`.
 */
export async function createLangGraphPlanMode(options: LangGraphPlanModeOptions): Promise<LangGraphPlanMode> {
  const lg = await peer('@langchain/langgraph', () => import('@langchain/langgraph'))
  const messagesModule = await peer('@langchain/core', () => import('@langchain/core/messages'))
  const toolsModule = await peer('@langchain/core', () => import('@langchain/core/tools'))
  const { Annotation, MessagesAnnotation, Command, interrupt, REMOVE_ALL_MESSAGES, StateGraph, START, END } = lg
  const { HumanMessage, ToolMessage, RemoveMessage } = messagesModule
  const { planMode } = options
  const { exitTool } = planMode
  if (exitTool.reviews !== 'durable') {
    throw new TypeError("createLangGraphPlanMode needs a plan-mode service with durable reviews (createPlanMode({ review: 'durable', … })): a LangGraph run pauses at a review with interrupt()")
  }
  const hostTools = [...(options.tools ?? [])]
  const exitName = exitTool.name
  if (hostTools.some((tool) => tool.name === exitName)) throw new TypeError(`createLangGraphPlanMode: a host tool is already named "${exitName}"`)
  const byName = new Map(hostTools.map((tool) => [tool.name, tool]))
  const agentIdOf = options.agentId ?? ((config: RunnableConfig) => {
    const id = config.configurable?.['thread_id']
    if (typeof id !== 'string' || id === '') throw new TypeError('plan-mode langgraph: the run needs configurable.thread_id (or the agentId option)')
    return id
  })
  const pinApprovedPlan = options.pinApprovedPlan === true

  const channels = {
    planLog: Annotation<SessionEvent[], SessionEvent[]>({ reducer: appendEvents, default: () => [] }),
    planSection: Annotation<string>(),
    planActive: Annotation<boolean>(),
  }
  const State = Annotation.Root({ ...MessagesAnnotation.spec, ...channels }) as unknown as LangGraph.AnnotationRoot<PlanGraphSpec>

  // The schema LangChain's `tool()` takes: its own copy (it adds keys to the schema it is given; the core's is frozen, R150).
  const exitLangChainTool = toolsModule.tool(
    async () => {
      throw new Error('plan-mode langgraph: exit_plan_mode runs in the plan_tools node')
    },
    { name: exitName, description: exitTool.description, schema: structuredClone(exitTool.parameters) as Record<string, unknown> },
  ) as unknown as Tools.StructuredToolInterface

  const threadLogs = new ThreadLogs(planMode)

  /** Runs a node's work on the thread's agent and returns its update with the staged appends. */
  function inNode(state: PlanGraphState, config: RunnableConfig, work: (agent: PlanAgent) => Promise<PlanGraphUpdate>): Promise<PlanGraphUpdate> {
    return threadLogs.withLog(planLogOf(state), agentIdOf(config), async (log) => {
      // A failure leaves its appends staged: the next node finds the log ahead of the graph's and rebuilds it.
      const { value: update, staged } = await log.staging(() => work(log.agent))
      return staged.length === 0 ? update : { ...update, planLog: staged }
    })
  }

  /** The tool calls of the last model message that no `ToolMessage` answers yet. */
  function unanswered(messages: readonly Messages.BaseMessage[]): { calls: Call[]; at: number } {
    for (let i = messages.length - 1; i >= 0; i--) {
      const message = messages[i]!
      if (!isAi(message)) continue
      const answered = new Set(messages.slice(i + 1).filter(isToolResult).map((m) => m.tool_call_id))
      const calls = (message.tool_calls ?? []).filter((call) => typeof call.id === 'string' && !answered.has(call.id)) as Call[]
      return { calls, at: i }
    }
    return { calls: [], at: -1 }
  }

  /** A tool call's result for the model: the text, status `error` for a failure (R150). */
  const toolResult = (call: Call, content: string, failed: boolean) =>
    new ToolMessage({ content, tool_call_id: call.id, name: call.name, status: failed ? 'error' : 'success' })

  /** The exit call waiting for its review: the last model message's exit call that nothing answers. */
  function waitingExitCall(state: PlanGraphState): Call | undefined {
    return unanswered(state.messages).calls.find((call) => call.name === exitName)
  }

  /**
   * What the model reads of an exit call whose review the log has closed (R146), or undefined while
   * it is open: the outcome when its record says it is told in the result (R87's texts); else the
   * submitted text (R79), since the next boundary tells the outcome (R81: once).
   */
  function closedResult(agent: PlanAgent, call: Call): Messages.ToolMessage | undefined {
    const settled = planMode.callReviews.settled(agent)
    const result = settled.resultOf(call.id, call.args)
    if (result === undefined) return undefined
    if (settled.toldInResult(call.id, call.args) !== true) return toolResult(call, exitTool.submittedText, false)
    return 'output' in result ? toolResult(call, exitTool.resultText, false) : toolResult(call, result.errorText, true)
  }

  /**
   * R149: the model's tool calls a stopped run left without a result are answered where they
   * stand, right after the model's message (which keeps its text): an exit call with its closed
   * review's result (R87) or, open, the submitted text (R79); any other call, and an exit call
   * without a review, with `TOOL_CALL_STOPPED_TEXT`. Null when every call has its result.
   */
  function settleDangling(agent: PlanAgent, messages: readonly Messages.BaseMessage[]): Messages.BaseMessage[] | null {
    let changed = false
    const settled: Messages.BaseMessage[] = []
    for (let i = 0; i < messages.length; i++) {
      const message = messages[i]!
      settled.push(message)
      if (!isAi(message) || (message.tool_calls ?? []).length === 0) continue
      const answered = new Set<string>()
      for (let j = i + 1; j < messages.length && isToolResult(messages[j]); j++) answered.add((messages[j] as Messages.ToolMessage).tool_call_id)
      for (const call of (message.tool_calls ?? []) as Call[]) {
        if (typeof call.id !== 'string' || answered.has(call.id)) continue
        changed = true
        const open = call.name === exitName ? planMode.openReview(agent) : null
        const closed = call.name === exitName ? closedResult(agent, call) : undefined
        if (closed !== undefined) settled.push(closed)
        else if (open !== null && open.callId === call.id) settled.push(toolResult(call, exitTool.submittedText, false))
        else settled.push(toolResult(call, TOOL_CALL_STOPPED_TEXT, true))
      }
    }
    return changed ? settled : null
  }

  const boundary: LangGraphPlanMode['boundary'] = (state, config) =>
    inNode(state, config, async (agent) => {
      const update: PlanGraphUpdate = {}
      const messages: Messages.BaseMessage[] = []
      const dangling = settleDangling(agent, state.messages ?? [])
      if (!isTurnOpen(agent.session.events)) await agent.session.append(TURN_START_EVENT, {})
      const signal = config.signal
      const step = await planMode.step(agent, { ...(signal ? { signal } : {}), pinApprovedPlan })
      // After the boundary, so that its plan/mode append lands first (R17). An aborted run sends no
      // request (R30): no header, and what the boundary did commits with its notices; LangGraph stops the run.
      if (signal?.aborted !== true) await agent.session.append(REQUEST_HEADER_EVENT, { step: stepInTurn(agent.session.events) })
      const notices = step.messages.map((message) => new HumanMessage({ id: message.id, content: message.content.map((part) => ({ ...(part as object) })) as Messages.MessageContent }))
      if (step.handoff !== null) {
        // R102: the fresh context starts with the handoff; the conversation before it is set aside.
        messages.push(new RemoveMessage({ id: REMOVE_ALL_MESSAGES }), new HumanMessage(step.handoff.text), ...notices)
      } else if (dangling !== null) {
        messages.push(new RemoveMessage({ id: REMOVE_ALL_MESSAGES }), ...dangling, ...notices)
      } else {
        messages.push(...notices)
      }
      if (messages.length > 0) update.messages = messages
      update.planSection = step.section
      update.planActive = step.active
      return update
    })

  const tools: LangGraphPlanMode['tools'] = (state, config) =>
    inNode(state, config, async (agent) => {
      const results: Messages.ToolMessage[] = []
      let reviewing = false
      for (const call of unanswered(state.messages).calls) {
        if (call.name === exitName) {
          // R146: a re-run of this node for a call whose review is open opens no second one.
          const open = planMode.openReview(agent)
          if (open !== null && open.callId === call.id && open.plan === planArgument(call.args)) {
            reviewing = true
            continue
          }
          let result: ExitToolResult
          try {
            result = await exitTool.execute(call.args, { agent, callId: call.id, ...(config.signal ? { signal: config.signal } : {}) })
          } catch (error) {
            results.push(toolResult(call, errorText(error), true))
            continue
          }
          if ('submitted' in result) reviewing = true
          else results.push(toolResult(call, exitTool.resultText, false))
          continue
        }
        const tool = byName.get(call.name)
        if (tool === undefined) {
          results.push(toolResult(call, `Tool "${call.name}" is not one of this agent's tools.`, true))
          continue
        }
        try {
          const output: unknown = await tool.invoke(call.args as never, config)
          results.push(toolResult(call, typeof output === 'string' ? output : JSON.stringify(output), false))
        } catch (error) {
          results.push(toolResult(call, errorText(error), true))
        }
      }
      // The run pauses at the review: the agent is idle until the user answers (R5, R10).
      if (reviewing && isTurnOpen(agent.session.events)) await agent.session.append(TURN_END_EVENT, {})
      return results.length > 0 ? { messages: results } : {}
    })

  const review: LangGraphPlanMode['review'] = async (state, config) => {
    const call = waitingExitCall(state)
    if (call === undefined) return {}
    // Before the interrupt this node appends nothing: it runs again from the start when resumed (R146).
    const known = inNode(state, config, async (agent) => {
      const closed = closedResult(agent, call)
      if (closed !== undefined) return { messages: [closed] }
      const open = planMode.openReview(agent)
      if (open === null || open.callId !== call.id) return { messages: [toolResult(call, exitTool.submittedText, false)] }
      return {}
    })
    const settled = await known
    if (settled.messages !== undefined) return settled
    const open = await threadLogs.withLog(planLogOf(state), agentIdOf(config), async (log) => planMode.openReview(log.agent)!)
    const payload: PlanReviewInterrupt = {
      kind: 'plan-review',
      reviewId: open.reviewId,
      callId: call.id,
      title: open.title,
      plan: open.plan,
      version: open.version,
      question: reviewQuestion(open.plan, planMode.decisions),
    }
    // `{ reviewId }`: answered meanwhile, and taken from the log; still open, the run pauses again.
    // An answer naming another review (`reviewId` beside `answers`: a stale card's) answers nothing:
    // the run pauses again at the open review, whose plan the user has not answered.
    // An answer that names no review is refused: it could be any card's (R146).
    const answers = (value: PlanReviewResume) => !isReviewIdOnly(value) && !namesAnotherReview(value, open.reviewId)
    // An answer the service refuses (malformed, a decision not offered: nothing was changed) pauses
    // the run again with the refusal: LangGraph replays every resume value of this node in order on
    // each run, so a refusal thrown here would refuse every later answer too.
    return inNode(state, config, async (agentNow) => {
      let resume = interrupt<PlanReviewInterrupt, PlanReviewResume>(payload)
      for (;;) {
        if (answers(resume)) {
          try {
            if (namedReview(resume) === undefined) throw new Error(UNNAMED_ANSWER_MESSAGE)
            await planMode.answerReview(agentNow, open.reviewId, withoutReviewId(resume), { toldInResult: true })
            break
          } catch (error) {
            if (closedResult(agentNow, call) !== undefined) break
            resume = interrupt<PlanReviewInterrupt, PlanReviewResume>({ ...payload, refused: errorText(error) })
            continue
          }
        }
        if (closedResult(agentNow, call) !== undefined) break
        resume = interrupt<PlanReviewInterrupt, PlanReviewResume>(payload)
      }
      return { messages: [closedResult(agentNow, call) ?? toolResult(call, exitTool.submittedText, false)] }
    })
  }

  const afterModel: LangGraphPlanMode['afterModel'] = (state) => (unanswered(state.messages).calls.length > 0 ? PLAN_GRAPH_NODES.tools : PLAN_GRAPH_NODES.end)
  const afterTools: LangGraphPlanMode['afterTools'] = (state) => (waitingExitCall(state) !== undefined ? PLAN_GRAPH_NODES.review : PLAN_GRAPH_NODES.boundary)

  const endTurn: LangGraphPlanMode['endTurn'] = (state, config) =>
    inNode(state, config, async (agent) => {
      if (isTurnOpen(agent.session.events)) await agent.session.append(TURN_END_EVENT, {})
      return {}
    })

  function graph<M extends string = 'model'>(model: PlanModelNode, options: PlanGraphOptions<M> = {}): PlanStateGraph<M> {
    const modelNode = options.modelNode ?? 'model'
    const { boundary: boundaryNode, tools: toolsNode, review: reviewNode, end: endNode } = PLAN_GRAPH_NODES
    return new StateGraph(State)
      .addNode(boundaryNode, boundary)
      .addNode(modelNode, model)
      .addNode(toolsNode, tools)
      .addNode(reviewNode, review)
      .addNode(endNode, endTurn)
      .addEdge(START, boundaryNode)
      .addEdge(boundaryNode, modelNode)
      .addConditionalEdges(modelNode, afterModel, [toolsNode, endNode])
      .addConditionalEdges(toolsNode, afterTools, [reviewNode, boundaryNode])
      .addEdge(reviewNode, boundaryNode)
      .addEdge(endNode, END) as unknown as PlanStateGraph<M>
  }

  return {
    State,
    channels: channels as unknown as LangGraphPlanMode['channels'],
    toolDefinitions: [...hostTools, exitLangChainTool],
    exitTool: exitLangChainTool,
    boundary,
    tools,
    review,
    endTurn,
    graph,
    afterModel,
    afterTools,
    async agent(graph, config) {
      const snapshot = await graph.getState(config)
      return threadLogs.withLog(planLogOf(snapshot.values), agentIdOf(config), async (log) => {
        log.writer = { graph, config }
        return log.agent
      })
    },
    async resumeClosedReview(graph, config) {
      const snapshot = await graph.getState(config)
      if (!snapshot.next.includes(PLAN_GRAPH_NODES.review)) return null
      const values = snapshot.values as PlanGraphState
      const call = waitingExitCall(values)
      if (call === undefined) return null
      const requested = await threadLogs.withLog(planLogOf(values), agentIdOf(config), async ({ agent }) => {
        if (planMode.callReviews.settled(agent).resultOf(call.id, call.args) === undefined) return null
        return [...agent.session.events].reverse().find((event) => {
          const data = event.data as { outcome?: unknown; callId?: unknown } | null
          return event.type === 'plan/review' && data?.outcome === 'requested' && data.callId === call.id
        })
      })
      if (requested === null) return null
      const reviewId = (requested?.data as { reviewId?: string } | undefined)?.reviewId ?? ''
      return new Command<{ reviewId: string }, Record<string, never>, never>({ resume: { reviewId } })
    },
  }
}

/** `{ reviewId }` alone: a resume that names a review instead of answering it (R146). */
function isReviewIdOnly(value: unknown): value is { reviewId: string } {
  return typeof value === 'object' && value !== null && typeof (value as { reviewId?: unknown }).reviewId === 'string' && !('answers' in value)
}

/** The review a resume value names (`reviewId`), if any. */
function namedReview(value: unknown): unknown {
  return typeof value === 'object' && value !== null ? (value as { reviewId?: unknown }).reviewId : undefined
}

/** An answer that names a review (`reviewId` beside `answers`) other than `reviewId`. */
function namesAnotherReview(value: unknown, reviewId: string): boolean {
  const named = namedReview(value)
  return named !== undefined && named !== reviewId
}

/** The answer as the service takes it (R80): the resume value without the `reviewId` it names. */
function withoutReviewId(value: PlanReviewResume): ReviewAnswer {
  if (typeof value !== 'object' || value === null) return value as ReviewAnswer
  const { reviewId: _named, ...answer } = value as ReviewAnswer & { reviewId?: unknown }
  return answer as ReviewAnswer
}

/** A model message (`getType()`, which every `@langchain/core` 1.x message has). */
function isAi(message: Messages.BaseMessage | undefined): message is Messages.AIMessage {
  return message?.getType() === 'ai'
}

/** A tool call's result. */
function isToolResult(message: Messages.BaseMessage | undefined): message is Messages.ToolMessage {
  return message?.getType() === 'tool'
}

/** An error's message: the text the model reads of a failed call. */
function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
