import {
  createMemorySessionLog,
  createPlanMode,
  type PlanAgent,
  type PlanMode,
  type PlanModeOptions,
  type ReviewAnswer,
  type ReviewChannel,
  type ReviewRequest,
  type SessionEvent,
  type SessionLog,
  type UserMessage,
} from '../src/index.js'

/** What a fault-injecting log does with the next append of a type. */
export type AppendFault = 'throw' | 'reject' | 'hold'

/**
 * A memory log whose appends can be made to fail (sync throw, async reject) or be held until
 * released, and optionally be asynchronous: a stand-in for a database log.
 */
export interface FaultyLog extends SessionLog {
  /** The next append of `type` fails or is held. */
  failNext(type: string, fault: AppendFault): void
  /** Releases every held append, in order. */
  release(): void
  readonly appendErrors: Error[]
  readonly held: number
}

export function createFaultyLog(
  seed: Iterable<{ type: string; data: unknown }> = [],
  { async = false }: { async?: boolean } = {},
): FaultyLog {
  const inner = createMemorySessionLog(seed)
  const faults: { type: string; fault: AppendFault }[] = []
  const heldAppends: (() => void)[] = []
  const appendErrors: Error[] = []
  return {
    get events() {
      return inner.events
    },
    subscribe: (listener) => inner.subscribe(listener),
    appendErrors,
    get held() {
      return heldAppends.length
    },
    failNext(type, fault) {
      faults.push({ type, fault })
    },
    release() {
      for (const release of heldAppends.splice(0)) release()
    },
    append(type, data) {
      const index = faults.findIndex((f) => f.type === type)
      const fault = index >= 0 ? faults.splice(index, 1)[0]!.fault : undefined
      if (fault === 'throw') {
        const error = new Error(`append of ${type} failed`)
        appendErrors.push(error)
        throw error
      }
      if (fault === 'reject') {
        const error = new Error(`append of ${type} rejected`)
        appendErrors.push(error)
        return Promise.reject(error)
      }
      if (fault === 'hold') {
        return new Promise<SessionEvent>((resolve) => heldAppends.push(() => resolve(inner.append(type, data) as SessionEvent)))
      }
      return async ? Promise.resolve().then(() => inner.append(type, data) as SessionEvent) : inner.append(type, data)
    },
  }
}

/** A review channel answered by the test: each `ask` waits until the test answers it. */
export interface ScriptedReview extends ReviewChannel {
  readonly requests: ReviewRequest[]
  /** Resolves the oldest unanswered ask. */
  answer(answer: ReviewAnswer): void
  /** Rejects the oldest unanswered ask. */
  reject(error: unknown): void
  /** Resolves with the n-th request (1-based) once it has been asked. */
  untilAsked(n?: number): Promise<ReviewRequest>
}

export function createScriptedReview(): ScriptedReview {
  const requests: ReviewRequest[] = []
  const waiting: { resolve(a: ReviewAnswer): void; reject(e: unknown): void }[] = []
  const askedWaiters: (() => void)[] = []
  return {
    requests,
    ask(request) {
      requests.push(request)
      for (const w of askedWaiters.splice(0)) w()
      return new Promise((resolve, reject) => waiting.push({ resolve, reject }))
    },
    answer(answer) {
      waiting.shift()!.resolve(answer)
    },
    reject(error) {
      waiting.shift()!.reject(error)
    },
    async untilAsked(n = 1) {
      while (requests.length < n) await new Promise<void>((resolve) => askedWaiters.push(resolve))
      return requests[n - 1]!
    },
  }
}

export const APPROVE: ReviewAnswer = { answers: [{ id: 'plan-review', selected: ['Approve'] }] }
export const KEEP_PLANNING: ReviewAnswer = { answers: [{ id: 'plan-review', selected: ['Keep planning'] }] }
export const PLAN = '# Migrate the database\n\n1. Back up.\n2. Migrate.'
export const SECTION = 'You are in plan mode: explore and design; present the plan with exit_plan_mode.'

export const ENTERING = 'The user switched this session to plan mode.'
export const LEAVING = 'The user switched this session back to the default mode.'

/** A harness: a service over one agent with a fault-injecting log, a scripted review, a logger. */
export function createHarness(
  options: {
    seed?: Iterable<{ type: string; data: unknown }>
    async?: boolean
    review?: ReviewChannel | null
    agent?: Partial<PlanAgent>
    pendingStore?: PlanModeOptions['pendingStore']
  } = {},
) {
  const log = createFaultyLog(options.seed, { async: options.async })
  const review = createScriptedReview()
  const warnings: unknown[][] = []
  const steered: UserMessage[] = []
  const planMode = createPlanMode(
    {
      section: SECTION,
      ...(options.review === null ? {} : { review: options.review ?? review }),
      logger: { warn: (...args: unknown[]) => warnings.push(args) },
      ...(options.pendingStore ? { pendingStore: options.pendingStore } : {}),
    },
  )
  const agent: PlanAgent = { id: 'agent-1', session: log, steer: (m) => steered.push(m), ...options.agent }
  return {
    log,
    review,
    warnings,
    steered,
    planMode,
    agent,
    /** The log's events as `type data` lines, for exact assertions. */
    lines: () => log.events.map((e) => `${e.type} ${JSON.stringify(e.data)}`),
    planModeLines: () => log.events.filter((e) => e.type === 'plan/mode').map((e) => (e.data as { active: boolean }).active),
    startTurn: () => log.append('turn/start', {}),
    endTurn: () => log.append('turn/end', {}),
    header: () => log.append('request/header', {}),
    /** Presents `plan` and has the user approve it; resolves with the tool's result. */
    async approvePlan(plan = PLAN) {
      const asked = review.requests.length + 1
      const call = planMode.exitTool.execute({ plan }, { agent })
      await review.untilAsked(asked)
      review.answer(APPROVE)
      return call
    },
    /** A step as a host runs it: the boundary, then the request header (R17). */
    async step() {
      const result = await planMode.stepBoundary(agent)
      await log.append('request/header', {})
      return { section: result.section, notices: result.messages.map((m) => (m.content[0] as { text: string }).text) }
    },
  }
}

/** Lets pending promise callbacks run. */
export const flush = () => new Promise<void>((resolve) => setTimeout(resolve, 0))

/** A test name carries its rule. */
export type RuleName = `R${number}${string}`

/** A session log over `inner` (shared with other services) whose armed plan/review appends are held and asynchronous. */
export function holdingLog(inner: SessionLog) {
  const held: (() => void)[] = []
  let armed = 0
  const log: SessionLog & { hold(): void; release(): void; readonly held: number } = {
    get events() {
      return inner.events
    },
    subscribe: (listener) => inner.subscribe(listener),
    append(type, data) {
      if (type === 'plan/review' && armed > 0) {
        armed--
        return new Promise<SessionEvent>((resolve) => held.push(() => resolve(inner.append(type, data) as SessionEvent)))
      }
      return inner.append(type, data)
    },
    hold: () => void armed++,
    release: () => {
      for (const release of held.splice(0)) release()
    },
    get held() {
      return held.length
    },
  }
  return log
}

/**
 * A channel service with a scripted review and one agent in plan mode (its memory log), pushed on
 * `services` for the test's `dispose`; `approve()` presents PLAN and approves it.
 */
export async function planningWithReview(services: PlanMode[]) {
  const review = createScriptedReview()
  const planMode = createPlanMode({ section: SECTION, review })
  services.push(planMode)
  const agent: PlanAgent = { id: 'agent-1', session: createMemorySessionLog() }
  await planMode.set(agent, true)
  const approve = async () => {
    const call = planMode.exitTool.execute({ plan: PLAN }, { agent })
    await review.untilAsked(1)
    review.answer(APPROVE)
    await call
  }
  return { planMode, agent, approve }
}
