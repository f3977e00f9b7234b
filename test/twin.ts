/**
 * Drives the real service and the oracle with the same operations, and compares them.
 * Used by the model-based test (paths generated from the statechart) and the property tests
 * (random operation sequences). Each operation is a method; `check()` compares, after the
 * microtasks ran, everything a host can observe:
 * `get`, `section`, the log, every call's settlement, the notices (R34 shape included), the
 * review questions and their signals, the steered messages, the warnings, and that every
 * attached actor is still active (R62).
 */
import { isDeepStrictEqual } from 'node:util'
import {
  createPlanMode,
  foldPlanMode,
  type PlanAgent,
  type PlanMode,
  type PlanModeActor,
  type ReviewAnswer,
  type StepBoundaryResult,
  type UserMessage,
} from '../src/index.js'
import {
  PlanModeOracle,
  TEXT,
  expectedQuestion,
  foldApprovedPlan,
  type AppendFate,
  type ExpectedAsk,
  type LogEntry,
  type OracleCall,
} from './oracle.js'
import {
  createControlledChannel,
  createControlledLog,
  entries,
  noticeText,
  settle,
  track,
  type ControlledChannel,
  type ControlledLog,
  type HeldLogAppend,
  type Tracked,
} from './sut.js'

/** The configured plan section of every twin. */
export const SECTION = 'PLAN MODE: explore, then present the plan with exit_plan_mode.'

/** One call made to both, paired. */
interface PairedCall {
  label: string
  oracle: OracleCall
  sut: Tracked<unknown>
  /** The exit-tool call's signal. */
  controller?: AbortController
}

/** Options of a twin. */
export interface TwinOptions {
  agents: { id: string; seed?: LogEntry[] }[]
  hasChannel?: boolean
  /** What the service's appends do unless told otherwise: land at once, a moment later, or wait for the test. */
  defaultFate?: 'ok' | 'async' | 'hold'
  /** An XState inspection observer passed to `createPlanMode`. */
  inspect?: unknown
  /** The service's `closeTimeoutMs` (R73); the service's default (5000) when absent. */
  closeTimeoutMs?: number
  /** R78: the service's reviews (the service's default, `'channel'`, when absent). */
  reviews?: 'channel' | 'durable'
  /** R101: the decisions the service's reviews offer (the service's default, `'approve-or-keep'`, when absent). */
  decisions?: 'approve-or-keep' | 'all'
  /**
   * The agents' logs, shared with another twin (two services on one log, like two processes):
   * each agent's log is taken from here instead of made from its seed, and the oracle starts from
   * what the log holds. The other twin's appends reach this twin's oracle as another writer's,
   * told by the test (`oracle.hostAppend`).
   */
  logs?: ReadonlyMap<string, ControlledLog>
  /** The prefix of the review ids this twin lets its service draw (default `review`): two twins on one log need their own. */
  reviewIdPrefix?: string
  /** The trace to write to (shared by two twins on one log, so that a failure shows both); a new one when absent. */
  trace?: string[]
}

/** Command ids, unique across every twin of the process. */
let commandIds = 0

/** The real service and the oracle, side by side. */
export class Twin {
  readonly oracle: PlanModeOracle
  service!: PlanMode
  readonly channel: ControlledChannel
  readonly warnings: unknown[][] = []
  readonly logs = new Map<string, ControlledLog>()
  readonly agents = new Map<string, PlanAgent>()
  readonly steered = new Map<string, UserMessage[]>()
  readonly calls: PairedCall[] = []
  /** A trace of the operations, for failure messages. */
  readonly trace: string[]
  private readonly oracleFates = new Map<string, AppendFate[]>()
  private readonly options: TwinOptions
  /** The durable review ids the twin lets the service draw (R79), one per exit call. */
  private reviewIds = 0
  private holding = false

  constructor(options: TwinOptions) {
    this.options = options
    this.trace = options.trace ?? []
    this.oracle = new PlanModeOracle({
      section: SECTION,
      hasChannel: options.hasChannel ?? true,
      ...(options.closeTimeoutMs === undefined ? {} : { closeTimeoutMs: options.closeTimeoutMs }),
      ...(options.reviews === undefined ? {} : { reviews: options.reviews }),
      ...(options.decisions === undefined ? {} : { decisions: options.decisions }),
      appendFate: (id) => this.oracleFates.get(id)!.shift() ?? (this.holding ? { kind: 'hold' } : { kind: 'ok' }),
    })
    this.holding = options.defaultFate === 'hold'
    this.channel = createControlledChannel()
    for (const { id, seed = [] } of options.agents) {
      const shared = options.logs?.get(id)
      const log = shared ?? createControlledLog(seed)
      log.defaultFate = options.defaultFate ?? 'ok'
      this.logs.set(id, log)
      this.steered.set(id, [])
      this.agents.set(id, { id, session: log, steer: (message) => this.steered.get(id)!.push(message) })
      this.oracleFates.set(id, [])
      this.oracle.addAgent(id, shared ? entries(shared) : seed)
    }
    this.service = this.createService()
  }

  private createService(): PlanMode {
    return createPlanMode(
      {
        section: SECTION,
        ...(this.options.reviews === 'durable' ? { review: 'durable' as const } : this.options.hasChannel === false ? {} : { review: this.channel }),
        logger: { warn: (...args: unknown[]) => this.warnings.push(args) },
        ...(this.options.inspect ? { inspect: this.options.inspect } : {}),
        ...(this.options.closeTimeoutMs === undefined ? {} : { limits: { closeTimeoutMs: this.options.closeTimeoutMs } }),
        ...(this.options.decisions === undefined ? {} : { decisions: this.options.decisions }),
      },
    )
  }

  agent(id: string): PlanAgent {
    return this.agents.get(id)!
  }

  log(id: string): ControlledLog {
    return this.logs.get(id)!
  }

  private pair(label: string, oracle: OracleCall, sut: Tracked<unknown>, controller?: AbortController): PairedCall {
    const paired: PairedCall = { label, oracle, sut, ...(controller ? { controller } : {}) }
    this.calls.push(paired)
    return paired
  }

  // ----- operations --------------------------------------------------------------------------------

  /** The service's next append to `id`'s log fails (synchronous throw or asynchronous rejection). */
  failNextAppend(id: string, how: 'throw' | 'reject'): Error {
    const error = new Error(`the log is down (${how})`)
    this.trace.push(`failNextAppend(${id}, ${how})`)
    this.log(id).fates.push({ fate: how, error })
    this.oracleFates.get(id)!.push({ kind: 'fail', error })
    return error
  }

  /** The service's next append to `id`'s log is held until the test releases it (`releaseOldest`). */
  holdNextAppend(id: string): void {
    this.trace.push(`holdNextAppend(${id})`)
    this.log(id).fates.push({ fate: 'hold' })
    this.oracleFates.get(id)!.push({ kind: 'hold' })
  }

  /**
   * Forgets the fates told for `id`'s next appends (`failNextAppend`, `holdNextAppend`) that no
   * append took: with a log shared by two twins, the other service must not take them.
   */
  clearFates(id: string): void {
    const log = this.log(id).fates.length
    const oracle = this.oracleFates.get(id)!.length
    if (log !== oracle) this.mismatch(`fates left for ${id}'s appends`, log, oracle)
    if (log > 0) this.trace.push(`clearFates(${id})`)
    this.log(id).fates.length = 0
    this.oracleFates.get(id)!.length = 0
  }

  set(id: string, active: boolean): PairedCall {
    this.trace.push(`set(${id}, ${active})`)
    return this.pair(`set(${id}, ${active})`, this.oracle.set(id, active), track(() => this.service.set(this.agent(id), active)))
  }

  boundary(id: string, aborted = false): PairedCall {
    this.trace.push(`stepBoundary(${id}${aborted ? ', aborted' : ''})`)
    const signal = aborted ? AbortSignal.abort() : undefined
    return this.pair(
      `stepBoundary(${id}${aborted ? ', aborted' : ''})`,
      this.oracle.boundary(id, { aborted }),
      track(() => this.service.stepBoundary(this.agent(id), signal ? { signal } : {})),
    )
  }

  /** A host step: the boundary, then (when the step runs) the request header (R14, R17, R30). */
  async step(id: string, aborted = false): Promise<PairedCall> {
    const call = this.boundary(id, aborted)
    await settle()
    if (!aborted && call.sut.state.status === 'resolved') this.hostAppend(id, 'request/header', { model: 'm' })
    return call
  }

  hostAppend(id: string, type: string, data: unknown): void {
    this.trace.push(`hostAppend(${id}, ${type} ${JSON.stringify(data)})`)
    this.oracle.hostAppend(id, type, data)
    this.log(id).hostAppend(type, data)
  }

  /** `/plan`, logged by the host as `command/run` … `command/done` (R58, R64). */
  async command(id: string, rawInput: string, { attachments, canSteer = true }: { attachments?: unknown[]; canSteer?: boolean } = {}) {
    // Unique across twins: several services may share one log, and a host's ids are (R58, R86).
    const commandId = `c${++commandIds}`
    this.hostAppend(id, 'command/run', { commandId, name: 'plan', args: rawInput })
    this.trace.push(`/plan ${JSON.stringify(rawInput)}${attachments ? ` +${attachments.length} attachments` : ''}${canSteer ? '' : ' (no steer)'} on ${id}`)
    const base = this.agent(id)
    const agent: PlanAgent = canSteer ? base : { id: base.id, session: base.session }
    const call = this.pair(
      `/plan ${JSON.stringify(rawInput)} on ${id}`,
      this.oracle.command({ agentId: id, rawInput, ...(attachments ? { attachments } : {}), canSteer }),
      track(() => this.service.command.run({ agent, rawInput, ...(attachments ? { attachments } : {}) })),
    )
    await settle()
    if (call.sut.state.status === 'resolved') {
      this.hostAppend(id, 'command/done', { commandId, kind: (call.sut.state.value as { kind: string }).kind })
    }
    return call
  }

  /**
   * `exitTool.execute`. In a durable service the review id the service draws with
   * `crypto.randomUUID` (R79) is the twin's, told to the oracle: ids are the one thing the
   * oracle cannot decide.
   */
  execute(
    id: string | undefined,
    args: unknown,
    { owned = false, preAborted, askThrows, callId }: { owned?: boolean; preAborted?: unknown; askThrows?: Error; callId?: string } = {},
  ): PairedCall {
    const controller = new AbortController()
    if (preAborted !== undefined) controller.abort(preAborted === 'plain' ? undefined : preAborted)
    if (askThrows) this.channel.throwNext = askThrows
    const reviewId = this.options.reviews === 'durable' ? `${this.options.reviewIdPrefix ?? 'review'}-${++this.reviewIds}` : undefined
    const label = `execute(${id ?? 'no agent'}, ${JSON.stringify(args).slice(0, 40)}${owned ? ', owned' : ''}${preAborted !== undefined ? ', pre-aborted' : ''}${askThrows ? ', ask throws' : ''}${callId !== undefined ? `, callId ${callId}` : ''}${reviewId !== undefined ? `, draws ${reviewId}` : ''})`
    this.trace.push(label)
    const base = id === undefined ? undefined : this.agent(id)
    const agent = base && owned ? { ...base, owner: 'parent-agent' } : base
    const oracle = this.oracle.execute({
      agentId: id,
      args,
      owned,
      ...(preAborted !== undefined ? { preAborted: { reason: controller.signal.reason } } : {}),
      ...(askThrows ? { askThrows } : {}),
      ...(reviewId !== undefined ? { reviewId } : {}),
      ...(callId !== undefined ? { callId } : {}),
    })
    const context = { ...(agent ? { agent } : {}), signal: controller.signal, ...(callId !== undefined ? { callId } : {}) }
    const sut = track(() => withReviewId(reviewId, () => this.service.exitTool.execute(args, context)))
    return this.pair(label, oracle, sut, controller)
  }

  /** `answerReview` (R80, R81; R101: `'left'` for a leave). */
  answerReview(id: string, reviewId: string, answer: unknown, options: { toldInResult?: boolean } = {}): PairedCall {
    const label = `answerReview(${id}, ${reviewId}, ${JSON.stringify(answer)}${options.toldInResult ? ', toldInResult' : ''})`
    this.trace.push(label)
    return this.pair(
      label,
      this.oracle.answerReview(id, reviewId, answer, options),
      track(() => this.service.answerReview(this.agent(id), reviewId, answer as ReviewAnswer, options)),
    )
  }

  /**
   * `answerReviewByPolicy` (R95): a headless policy closes the durable review open now, if any.
   * `policy` is passed as given (anything but `'stop'` and `'approve'` is refused, R94).
   */
  answerReviewByPolicy(id: string, policy: unknown, options: { toldInResult?: boolean } = {}): PairedCall {
    const label = `answerReviewByPolicy(${id}, ${JSON.stringify(policy)}${options.toldInResult ? ', toldInResult' : ''})`
    this.trace.push(label)
    return this.pair(
      label,
      this.oracle.answerReviewByPolicy(id, policy, options),
      track(() => this.service.answerReviewByPolicy(this.agent(id), policy as 'stop' | 'approve', options)),
    )
  }

  /** The channel answers ask `index` (an answer after the review closed is ignored, R46; `by: 'policy'`, R94). */
  answer(index: number, answer: ReviewAnswer): void {
    this.trace.push(`answer(#${index}, ${JSON.stringify(answer)})`) // `by: 'policy'` shows in the JSON (R94)
    this.oracle.answer(this.oracle.asks[index]!, answer)
    this.channel.asks[index]!.resolve(answer)
  }

  /** The channel rejects ask `index` (a dismissal with `by: 'policy'` is a headless policy's, R94). */
  rejectAsk(index: number, error: Error & { code?: string; by?: string }): void {
    this.trace.push(`rejectAsk(#${index}, ${error.code ?? error.message}${error.by === undefined ? '' : `, by ${error.by}`})`)
    this.oracle.rejectAsk(this.oracle.asks[index]!, error)
    this.channel.asks[index]!.reject(error)
  }

  /** The exit-tool call's own signal aborts (`'plain'`: `abort()` without a reason). */
  abort(call: PairedCall, reason: unknown): void {
    this.trace.push(`abort(${call.label}, ${reason instanceof Error ? reason.message : String(reason)})`)
    call.controller!.abort(reason === 'plain' ? undefined : reason)
    this.oracle.abortCall(call.oracle, call.controller!.signal.reason)
  }

  detach(id: string): void {
    this.trace.push(`detach(${id})`)
    this.oracle.detach(id)
    this.service.detach(this.agent(id))
  }

  /**
   * The service's clock reaches every close timeout started so far (R73): the wait of every
   * operation for appends a close abandoned gives up, and every detached attachment still waiting
   * for its work abandons it. `advance` moves the service's clock by that many ms (fake timers,
   * e.g. `vi.advanceTimersByTime`): the chart's delayed transition and the service's own timer of
   * that second wait fire on the real service. Every timer lasts `closeTimeoutMs` and the clock
   * moves only here, so each expiry fires exactly the timers started since the one before.
   */
  expireCloseTimeouts(advance: (ms: number) => void): void {
    this.trace.push('close timeout expires')
    this.oracle.expireCloseTimeouts()
    advance(this.oracle.closeTimeoutMs)
  }

  /** A restart: the service is disposed and a new one serves the same logs (R60, R64). */
  async restart(): Promise<void> {
    this.trace.push('restart')
    this.oracle.restart()
    await this.service.dispose()
    this.service = this.createService()
  }

  async dispose(): Promise<void> {
    this.trace.push('dispose')
    this.oracle.dispose()
    await this.service.dispose()
  }

  // ----- held appends --------------------------------------------------------------------------------

  /** The held service append of `type` to `id`'s log, paired with the oracle's. */
  held(id: string, type: 'plan/mode' | 'plan/review'): { sut: HeldLogAppend; oracle: number } {
    const sut = this.log(id).held.filter((h) => !h.settled && h.type === type)
    const oracle = this.oracle.heldAppends().filter((h) => h.agentId === id && h.type === type)
    if (sut.length !== 1 || oracle.length !== 1) {
      throw new Error(`expected one held ${type} append on ${id}: service ${sut.length}, oracle ${oracle.length}\n${this.trace.join('\n')}`)
    }
    return { sut: sut[0]!, oracle: oracle[0]!.handle }
  }

  publish(id: string, type: 'plan/mode' | 'plan/review'): void {
    this.trace.push(`publish held ${type}`)
    const { sut, oracle } = this.held(id, type)
    this.oracle.publish(oracle)
    this.log(id).publish(sut)
  }

  resolveHeld(id: string, type: 'plan/mode' | 'plan/review'): void {
    this.trace.push(`resolve held ${type}`)
    const { sut, oracle } = this.held(id, type)
    this.oracle.resolve(oracle)
    this.log(id).resolveHeld(sut)
  }

  rejectHeld(id: string, type: 'plan/mode' | 'plan/review'): Error {
    this.trace.push(`reject held ${type}`)
    const error = new Error(`held ${type} append failed`)
    const { sut, oracle } = this.held(id, type)
    this.oracle.reject(oracle, error)
    this.log(id).rejectHeld(sut, error)
    return error
  }

  /** From now on the service's appends land at once (a held twin before its dispose). */
  stopHolding(): void {
    this.holding = false
    for (const log of this.logs.values()) log.defaultFate = 'ok'
  }

  /** Settles the oldest held service append of `id` (publish only, resolve, or reject); false when none is held. */
  releaseOldest(id: string, how: 'publish' | 'resolve' | 'reject'): boolean {
    const sut = this.log(id).held.filter((h) => !h.settled)
    const oracle = this.oracle.heldAppends().filter((h) => h.agentId === id)
    if (sut.length !== oracle.length || sut.some((h, i) => h.type !== oracle[i]!.type)) {
      this.mismatch(`held appends of ${id}`, sut.map((h) => h.type), oracle.map((h) => h.type))
    }
    const [first] = sut
    if (!first) return false
    const handle = oracle[0]!.handle
    this.trace.push(`${how} held ${first.type} of ${id}`)
    if (how === 'publish') {
      this.oracle.publish(handle)
      this.log(id).publish(first)
    } else if (how === 'resolve') {
      this.oracle.resolve(handle)
      this.log(id).resolveHeld(first)
    } else {
      if (first.published) return this.releaseOldest(id, 'resolve')
      const error = new Error(`held ${first.type} append failed`)
      this.oracle.reject(handle, error)
      this.log(id).rejectHeld(first, error)
    }
    return true
  }

  /** The oracle's pending ask of agent `id` that the channel still waits on, if any. */
  openAskIndex(id: string): number | undefined {
    for (let i = this.oracle.asks.length - 1; i >= 0; i--) {
      const ask = this.oracle.asks[i]!
      if (ask.agentId === id && !ask.stale) return i
    }
    return undefined
  }

  // ----- comparison ------------------------------------------------------------------------------------

  private mismatch(what: string, actual: unknown, expected: unknown): never {
    const show = (v: unknown) => JSON.stringify(v, (_k, x) => (x instanceof Error ? `Error(${x.message})` : x))
    throw new Error(
      `${what}\n  service: ${show(actual)}\n  oracle:  ${show(expected)}\nafter:\n  ${this.trace.join('\n  ')}`,
    )
  }

  private expectEqual(what: string, actual: unknown, expected: unknown): void {
    if (!isDeepStrictEqual(actual, expected)) this.mismatch(what, actual, expected)
  }

  /** The service's settlement of a call, in the oracle's terms. */
  private observed(call: PairedCall): unknown {
    const state = call.sut.state
    if (state.status === 'pending') return { status: 'pending' }
    if (state.status === 'rejected') {
      return { status: 'rejected', message: state.error instanceof Error ? state.error.message : String(state.error) }
    }
    if (call.oracle.kind === 'boundary') {
      const { section, messages } = state.value as StepBoundaryResult
      return { status: 'resolved', value: { section, notices: messages.map(noticeText) } }
    }
    return { status: 'resolved', value: state.value }
  }

  /** Compares everything observable; throws a readable mismatch. Run after `await settle()`. */
  check(): void {
    // A sync-throwing channel applies to the call that asked; a refused call never asked.
    this.channel.throwNext = null
    for (const id of this.agents.keys()) this.checkAgent(id)
    for (const call of this.calls) this.expectEqual(`call ${call.label}`, this.observed(call), call.oracle.state)
    this.checkAsks()
    // Warnings of different agents may interleave either way (a dispose closes them at once).
    const order = (list: { message: unknown; error: unknown }[]) =>
      [...list].sort((x, y) => key(x).localeCompare(key(y)))
    const key = ({ message, error }: { message: unknown; error: unknown }) =>
      `${String(message)}|${error instanceof Error ? error.message : String(error)}`
    this.expectEqual(
      'warnings',
      order(this.warnings.map(([message, error]) => ({ message, error }))),
      order(this.oracle.warnings.map(({ message, error }) => ({ message, error }))),
    )
  }

  private checkAgent(id: string): void {
    const log = this.log(id)
    const events = entries(log)
    this.expectEqual(`log of ${id}`, events, this.oracle.log(id))
    // Byte for byte, keys in order too (R49; R94: `by: 'policy'` is a record's last key, and a
    // user's record is what it was without it). Deep equality above ignores key order.
    this.expectEqual(`R49, R94: the log of ${id} byte for byte`, events.map((e) => JSON.stringify(e)), this.oracle.log(id).map((e) => JSON.stringify(e)))
    // R3: the service never appends a plan/mode equal to F (the fold when it appends)...
    for (const { type, data, logLength } of log.serviceAppends) {
      if (type !== 'plan/mode') continue
      const active = (data as { active: boolean }).active
      if (active === foldPlanMode(log.events, logLength)) {
        this.mismatch(`R3: the service appended plan/mode {active: ${active}} with F already ${active} on ${id}`, events.slice(0, logLength), null)
      }
    }
    // ...so every plan/mode in the log flips F. An append abandoned by a close (R73) may land
    // late, but the agent's next operation waits for it: only when that wait itself gave up (or a
    // new service took over) before it landed may it repeat a flip made meanwhile, or a flip
    // started before it landed repeat it.
    const late = this.oracle.modesThatMayRepeat(id)
    let F = false
    events.forEach(({ type, data }, index) => {
      if (type !== 'plan/mode') return
      const active = (data as { active: boolean }).active
      if (active === F && !late.has(index)) this.mismatch(`R3: a redundant plan/mode {active: ${active}} at index ${index} in the log of ${id}`, events, null)
      F = active
    })
    if (this.oracle.disposed) {
      this.expectEqual(`R60: get(${id}) after dispose`, thrown(() => this.service.get(this.agent(id))), TEXT.disposed)
      this.expectEqual(`R60: section(${id}) after dispose`, thrown(() => this.service.section(this.agent(id))), TEXT.disposed)
      this.expectEqual('R60: section() after dispose', this.service.section(), '')
      return
    }
    const got = this.service.get(this.agent(id))
    this.expectEqual(`R7: get(${id})`, got, this.oracle.get(id))
    this.expectEqual(`R2: get(${id}).active is the fold of the log`, got.active, foldPlanMode(log.events))
    this.expectEqual(`R21: section(${id})`, this.service.section(this.agent(id)), this.oracle.sectionOf(id))
    this.expectEqual(`R79: openReview(${id})`, this.service.openReview(this.agent(id)), this.oracle.openReview(id))
    // R98, R101: the plan approved last, read from the log (a fresh approval carries `fresh: true`).
    this.expectEqual(`R98: approvedPlan(${id})`, this.service.approvedPlan(this.agent(id)), foldApprovedPlan(events))
    this.expectEqual(`R62: the actor of ${id} is active`, this.service.actor(this.agent(id)).getSnapshot().status, 'active')
    const steered = this.steered.get(id)!.map((m) => {
      if (typeof m.id !== 'string' || m.role !== 'user' || !isDeepStrictEqual(m.source, { kind: 'user' })) {
        this.mismatch(`R56: steered message shape on ${id}`, m, null)
      }
      return { agentId: id, content: m.content }
    })
    this.expectEqual(`R56: steered messages of ${id}`, steered, this.oracle.steers.filter((s) => s.agentId === id))
  }

  private checkAsks(): void {
    this.expectEqual('R43: how many reviews were asked', this.channel.asks.length, this.oracle.asks.length)
    this.channel.asks.forEach((received, i) => {
      const expected: ExpectedAsk = this.oracle.asks[i]!
      this.expectEqual(`R43, R101: question #${i}`, received.request.questions, [expectedQuestion(expected.plan, this.oracle.decisions)])
      this.expectEqual(`R43: agent of ask #${i}`, received.request.agent.id, expected.agentId)
      if (expected.aborted) this.expectEqual(`R43: the signal of ask #${i} aborted`, received.request.signal.aborted, true)
      else if (!expected.stale) this.expectEqual(`R43: the signal of open ask #${i} is live`, received.request.signal.aborted, false)
    })
  }

  /** The actor of `id` (attaching it). */
  actor(id: string): PlanModeActor {
    const actor = this.service.actor(this.agent(id))
    this.oracle.attachNow(id) // the service attached: R86's runs are heard from here on
    return actor
  }
}

/**
 * Runs `run` with `crypto.randomUUID` answering `reviewId` (when given): the id a durable exit
 * call draws synchronously for its review (R79). Restored before `run`'s promise settles.
 */
function withReviewId<T>(reviewId: string | undefined, run: () => T): T {
  if (reviewId === undefined) return run()
  const crypto = globalThis.crypto as Crypto & { randomUUID: () => string }
  const own = Object.hasOwn(crypto, 'randomUUID')
  const previous = crypto.randomUUID
  crypto.randomUUID = () => reviewId as ReturnType<Crypto['randomUUID']>
  try {
    return run()
  } finally {
    if (own) crypto.randomUUID = previous
    else delete (crypto as { randomUUID?: unknown }).randomUUID
  }
}

/** The message a synchronous call throws, or `'did not throw'`. */
export function thrown(run: () => unknown): string {
  try {
    run()
    return 'did not throw'
  } catch (error) {
    return error instanceof Error ? error.message : String(error)
  }
}
