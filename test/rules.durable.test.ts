import { afterEach, describe, expect, it } from 'vitest'
import { createMemoryCheckpointStore, createMemorySessionLog, createPlanMode, planHistory, replayPlanLog, type PlanAgent, type PlanMode, type PlanModeOptions, type ReviewAnswer, type SessionLog, type StepBoundaryResult } from '../src/index.js'
import { APPROVED_NEWS_TEXT } from '../src/plan/review.js'
import { EXIT_PLAN_MODE_SUBMITTED_TEXT } from '../src/plan/exit-tool.js'
import { PLAN_CHECKPOINT_VERSION } from '../src/log/checkpoint.js'
import { eventDigest } from '../src/log/digest.js'
import { TEXT } from './oracle.js'
import { APPROVE, KEEP_PLANNING, PLAN, SECTION, createFaultyLog, createScriptedReview, flush, holdingLog, type FaultyLog } from './helpers.js'

// Every text below is copied from docs/spec.md (R42, R45, R48, R76, R78–R81).
const SUBMITTED =
  'Your plan is now with the user for review. Stop here: do not call more tools or continue the work. Their answer comes in a later message.'
const APPROVED_NEWS = 'The user approved your plan and plan mode is off; carry out the plan, starting now.'
const REVISE = 'The user chose to keep planning; revise the plan and present it again.'
const FEEDBACK = 'Use SQLite, not Postgres.'
const KEEP_WITH_FEEDBACK = `The user chose to keep planning; their feedback: ${FEEDBACK}`
const SUPERSEDED = 'The user changed the plan mode directly; the review is closed.'
const ENTERING = 'The user switched this session to plan mode.'
const LEAVING = 'The user switched this session back to the default mode.'
const DISPOSED = 'plan-mode service is disposed'
const MALFORMED =
  'answerReview needs a reviewId string and an answer { answers: [{ id: string, selected: string[], custom?: string, comments?: [{ quote, text }] }] }; nothing was changed'
const notOpen = (reviewId: string) => `no plan review ${reviewId} is open for this agent; nothing was changed`
const alreadyClosed = (reviewId: string, outcome: string) => `plan review ${reviewId} is already closed (${outcome}); nothing was changed`
const CHECKPOINT_IGNORED = 'plan-mode: checkpoint ignored; the log is replayed in full'
const NO_VALID_FOLD = 'the checkpoint holds no valid fold (projection, openTurn, told, review, approved, episode)'
/** R42's messages, quoted from the spec in the oracle's table. */
const R42 = TEXT

const TITLE = 'Migrate the database'
const PLAN_2 = '# Migrate the database, v2\n\n1. Back up.\n2. Migrate on SQLite.'
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

const keepPlanning = (custom?: string): ReviewAnswer => ({
  answers: [{ id: 'plan-review', selected: ['Keep planning'], ...(custom === undefined ? {} : { custom }) }],
})

/** Every service a test made: disposed after it. */
const services: PlanMode[] = []
afterEach(async () => {
  await Promise.all(services.splice(0).map((service) => service.dispose()))
})

/** A durable service with a recording logger. */
function durableService(warnings: unknown[][] = [], options: Omit<PlanModeOptions, 'section'> = {}): PlanMode {
  const planMode = createPlanMode({ section: SECTION, review: 'durable', logger: { warn: (...args: unknown[]) => warnings.push(args) }, ...options })
  services.push(planMode)
  return planMode
}

/** A durable service over one agent with a fault-injecting log (no review channel: the log is the channel). */
function harness(options: { async?: boolean; seed?: Iterable<{ type: string; data: unknown }>; agent?: Partial<PlanAgent>; options?: Omit<PlanModeOptions, 'section'> } = {}) {
  const log = createFaultyLog(options.seed, { async: options.async })
  const warnings: unknown[][] = []
  const planMode = durableService(warnings, options.options)
  const agent: PlanAgent = { id: 'agent-1', session: log, ...options.agent }
  const h = {
    log,
    warnings,
    planMode,
    agent,
    /** Another durable service attached to the same log (another process). */
    another: (opts: Omit<PlanModeOptions, 'section'> = {}) => durableService([], opts),
    reviews: () => log.events.filter((e) => e.type === 'plan/review').map((e) => e.data),
    lines: () => log.events.map((e) => `${e.type} ${JSON.stringify(e.data)}`),
    types: () => log.events.map((e) => e.type),
    /** Opens a durable review of `plan`; resolves with its id. */
    async submit(plan = PLAN, callId?: string, on: PlanMode = planMode) {
      const result = await on.exitTool.execute({ plan }, { agent, ...(callId === undefined ? {} : { callId }) })
      return (result as { reviewId: string }).reviewId
    },
    /** A step as a host runs it: the boundary, then the request header (R17). */
    async step(on: PlanMode = planMode, signal?: AbortSignal) {
      const result = await on.stepBoundary(agent, signal ? { signal } : {})
      await log.append('request/header', {})
      return result
    },
  }
  return h
}

/** Plan mode on, a turn open and a step run: F, E and K are active. */
async function planning(h: ReturnType<typeof harness>) {
  expect(await h.planMode.set(h.agent, true)).toBe('committed')
  await h.log.append('turn/start', {})
  await h.step()
}

const texts = (result: StepBoundaryResult) => result.messages.map((m) => (m.content[0] as { text: string }).text)

/** A message of R34's shape. */
const narration = (text: string) => ({
  id: expect.any(String),
  role: 'user',
  content: [{ type: 'text', text }],
  source: { kind: 'plugin', plugin: 'plan-mode', form: 'notice', summary: text },
})

/**
 * Two durable services on one log, the agent in plan mode with a review open: the loser's own log
 * (`slow`) can hold its plan/review records, the winner appends to the shared log directly.
 */
async function racingServices() {
  const shared = createMemorySessionLog()
  const slow = holdingLog(shared)
  const loser = durableService()
  const winner = durableService()
  const loserAgent: PlanAgent = { id: 'agent-1', session: slow }
  const winnerAgent: PlanAgent = { id: 'agent-1', session: shared }
  await loser.set(loserAgent, true)
  const { reviewId } = (await loser.exitTool.execute({ plan: PLAN }, { agent: loserAgent, callId: 'call-1' })) as { reviewId: string }
  return { shared, slow, loser, winner, loserAgent, winnerAgent, reviewId }
}

const settle = <T>(promise: Promise<T>) =>
  promise.then(
    (value) => ({ value }),
    (error: Error) => ({ error: error.message }),
  )


describe('R78: the review option', () => {
  it("R78: any value but a review channel or 'durable' makes createPlanMode throw the exact TypeError", () => {
    for (const value of ['Durable', 'channel', 'log', null, 1, false, {}, { ask: 'yes' }]) {
      expect(() => createPlanMode({ section: SECTION, review: value as never })).toThrow(
        new TypeError(`plan mode option review must be a review channel (an object with an ask method) or 'durable'; got ${String(value)}`),
      )
    }
    expect(() => createPlanMode({ section: SECTION, review: 'durable' })).not.toThrow()
    expect(() => createPlanMode({ section: SECTION, review: createScriptedReview() })).not.toThrow()
  })

  it("R78: exitTool.reviews says which kind the service uses ('channel' by default)", () => {
    expect(createPlanMode({ section: SECTION }).exitTool.reviews).toBe('channel')
    expect(createPlanMode({ section: SECTION, review: createScriptedReview() }).exitTool.reviews).toBe('channel')
    expect(createPlanMode({ section: SECTION, review: 'durable' }).exitTool.reviews).toBe('durable')
  })

  it("R78, R42: the default 'channel' keeps R42: without a review channel the call fails check 8 and nothing is logged", async () => {
    const planMode = createPlanMode({ section: SECTION })
    services.push(planMode)
    const log = createMemorySessionLog()
    const agent: PlanAgent = { id: 'agent-1', session: log }
    await planMode.set(agent, true)
    await expect(planMode.exitTool.execute({ plan: PLAN }, { agent, callId: 'call-1' })).rejects.toThrow(new Error(R42.noChannel))
    expect(log.events.map((e) => e.type)).toEqual(['plan/mode'])
    expect(planMode.openReview(agent)).toBeNull()
  })

  it('R78, R80: a channel service attached to the same log sees a durable review another service opened and answers it', async () => {
    const log = createMemorySessionLog()
    const agent: PlanAgent = { id: 'agent-1', session: log }
    const durable = durableService()
    const channel = createPlanMode({ section: SECTION, review: createScriptedReview(), logger: { warn() {} } })
    services.push(channel)
    expect(await durable.set(agent, true)).toBe('committed')
    expect(channel.get(agent)).toEqual({ active: true }) // attached before the request: it hears it
    const { reviewId } = (await durable.exitTool.execute({ plan: PLAN }, { agent, callId: 'call-1' })) as { reviewId: string }
    const view = { reviewId, title: TITLE, plan: PLAN, version: 1, seq: 2, callId: 'call-1' }
    expect(channel.openReview(agent)).toEqual(view)
    // A channel service attached after the request rebuilds it from the log.
    const late = createPlanMode({ section: SECTION, logger: { warn() {} } })
    services.push(late)
    expect(late.openReview(agent)).toEqual(view)

    expect(await channel.answerReview(agent, reviewId, APPROVE)).toBe('approved')
    expect(log.events.at(-1)!.data).toEqual({ outcome: 'approved', reviewId, title: TITLE, plan: PLAN })
    for (const service of [durable, channel, late]) {
      expect(service.openReview(agent)).toBeNull()
      expect(service.get(agent)).toEqual({ active: true, pending: false })
    }
  })
})

describe('R79: a durable exit call', () => {
  it('R79: appends plan/review requested with the call id and resolves { submitted: true, reviewId }; submittedText is exact', async () => {
    const h = harness()
    await planning(h)
    const before = h.log.events.length
    const result = await h.planMode.exitTool.execute({ plan: PLAN }, { agent: h.agent, callId: 'call-1' })
    expect(result).toEqual({ submitted: true, reviewId: expect.stringMatching(UUID) })
    const { reviewId } = result as { reviewId: string }
    expect(h.log.events).toHaveLength(before + 1)
    expect(h.log.events.at(-1)!.type).toBe('plan/review')
    expect(h.log.events.at(-1)!.data).toStrictEqual({ outcome: 'requested', reviewId, title: TITLE, plan: PLAN, callId: 'call-1' })
    expect(h.planMode.exitTool.submittedText).toBe(SUBMITTED)
    expect(EXIT_PLAN_MODE_SUBMITTED_TEXT).toBe(SUBMITTED)
    // Nothing changed the mode: the plan is with the user.
    expect(h.planMode.get(h.agent)).toEqual({ active: true })
    expect(h.planMode.section(h.agent)).toBe(SECTION)
  })

  it('R79: the reviewId is a fresh UUID each time; callId is recorded only when it is a string', async () => {
    const h = harness()
    await planning(h)
    const ids: string[] = []
    for (const callId of ['call-1', 42, undefined, 'call-2'] as unknown[]) {
      const result = (await h.planMode.exitTool.execute({ plan: PLAN }, { agent: h.agent, callId } as never)) as { reviewId: string }
      ids.push(result.reviewId)
      expect(result.reviewId).toMatch(UUID)
      const data = h.log.events.at(-1)!.data
      expect(data).toStrictEqual({
        outcome: 'requested',
        reviewId: result.reviewId,
        title: TITLE,
        plan: PLAN,
        ...(typeof callId === 'string' ? { callId } : {}),
      })
      expect(await h.planMode.answerReview(h.agent, result.reviewId, KEEP_PLANNING)).toBe('keep-planning')
    }
    expect(new Set(ids).size).toBe(4)
  })

  it('R79, R42: checks 1–7 refuse a durable call with their exact messages and log nothing; check 8 does not apply', async () => {
    const h = harness()
    const refused = async (args: unknown, context: Parameters<PlanMode['exitTool']['execute']>[1], message: string) => {
      const before = h.lines()
      await expect(h.planMode.exitTool.execute(args, context)).rejects.toThrow(new Error(message))
      expect(h.lines()).toEqual(before)
      expect(h.planMode.openReview(h.agent)).toBeNull()
    }
    await refused({ plan: PLAN }, {}, R42.noAgent)
    await refused({ plan: 42 }, { agent: h.agent }, R42.planNotString)
    await refused({ plan: PLAN }, { agent: h.agent }, R42.notInPlanMode)
    await planning(h)
    await refused({ plan: 'Migrate the database' }, { agent: h.agent }, R42.noHeading)
    await refused({ plan: `# Big\n${'x'.repeat(256 * 1024)}` }, { agent: h.agent }, R42.tooLarge)
    await refused({ plan: PLAN }, { agent: { ...h.agent, owner: 'parent-agent' } }, R42.owned)
    // Check 6 counts a review another service opened on the same log.
    const other = h.another()
    const { reviewId } = (await other.exitTool.execute({ plan: PLAN }, { agent: h.agent })) as { reviewId: string }
    const open = h.planMode.openReview(h.agent)
    expect(open?.reviewId).toBe(reviewId)
    await expect(h.planMode.exitTool.execute({ plan: PLAN_2 }, { agent: h.agent })).rejects.toThrow(new Error(R42.alreadyOpen))
    expect(h.reviews()).toHaveLength(1)
    expect(h.planMode.openReview(h.agent)).toEqual(open)
    // Check 8 does not apply: neither service has a review channel, and the review opened.
    expect(h.warnings).toEqual([])
  })

  it('R79: a request whose append fails fails the call with the log’s message, and no review is open', async () => {
    for (const fault of ['throw', 'reject'] as const) {
      const h = harness({ async: fault === 'reject' })
      await planning(h)
      h.log.failNext('plan/review', fault)
      await expect(h.submit(PLAN, 'call-1')).rejects.toThrow(new Error(`append of plan/review ${fault === 'throw' ? 'failed' : 'rejected'}`))
      expect(h.reviews()).toEqual([])
      expect(h.planMode.openReview(h.agent)).toBeNull()
      await expect(h.planMode.answerReview(h.agent, 'any', APPROVE)).rejects.toThrow(new Error(notOpen('any')))
      // Nothing is open: the next call opens its review.
      const reviewId = await h.submit(PLAN, 'call-2')
      expect(h.planMode.openReview(h.agent)).toMatchObject({ reviewId, callId: 'call-2' })
    }
  })

  it('R79, R46: an abort before the call’s turn fails it and logs nothing; once its turn came the request is the log’s and an abort changes nothing', async () => {
    const h = harness({ async: true })
    await planning(h)
    // An already aborted signal fails the call before the checks.
    const aborted = new AbortController()
    aborted.abort(new Error('the user left'))
    await expect(h.planMode.exitTool.execute({ plan: 42 }, { signal: aborted.signal })).rejects.toThrow(new Error('the user left'))

    h.log.failNext('plan/review', 'hold')
    const first = new AbortController()
    const second = new AbortController()
    const opening = settle(h.planMode.exitTool.execute({ plan: PLAN }, { agent: h.agent, signal: first.signal, callId: 'call-1' }))
    await flush()
    expect(h.log.held).toBe(1) // the first call's request is being appended: its turn came
    // The second call waits for its turn behind that append; its abort fails it at once.
    const waiting = settle(h.planMode.exitTool.execute({ plan: PLAN_2 }, { agent: h.agent, signal: second.signal, callId: 'call-2' }))
    second.abort('gone')
    expect(await waiting).toEqual({ error: 'the plan review was aborted' })
    first.abort(new Error('too late'))
    h.log.release()
    const result = await opening
    expect(result).toEqual({ value: { submitted: true, reviewId: expect.stringMatching(UUID) } })
    const { reviewId } = (result as { value: { reviewId: string } }).value
    await flush()
    expect(h.reviews()).toEqual([{ outcome: 'requested', reviewId, title: TITLE, plan: PLAN, callId: 'call-1' }])
    expect(h.planMode.openReview(h.agent)).toMatchObject({ reviewId, callId: 'call-1' })
  })

  it('R79, R138: openReview returns { reviewId, title, plan, version, seq } (plus callId): version the plan’s version in its episode, seq the request’s; or null', async () => {
    const h = harness()
    await planning(h)
    expect(h.planMode.openReview(h.agent)).toBeNull()
    const first = await h.submit(PLAN, 'call-1')
    const seq = h.log.events.at(-1)!.seq
    expect(h.planMode.openReview(h.agent)).toStrictEqual({ reviewId: first, title: TITLE, plan: PLAN, version: 1, seq, callId: 'call-1' })
    await h.planMode.answerReview(h.agent, first, keepPlanning(FEEDBACK))
    expect(h.planMode.openReview(h.agent)).toBeNull()
    h.log.append('message', { text: 'noise moves the seq on' })
    const second = await h.submit(PLAN_2)
    expect(h.planMode.openReview(h.agent)).toStrictEqual({
      reviewId: second,
      title: 'Migrate the database, v2',
      plan: PLAN_2,
      version: 2,
      seq: h.log.events.at(-1)!.seq,
    })
    expect(h.planMode.openReview(h.agent)!.seq).toBe(seq + 3)
    expect(planHistory(h.log.events).map((plan) => plan.version)).toEqual([1, 2])
  })

  it('R79: a review the channel asks about is not a durable review: openReview is null', async () => {
    const review = createScriptedReview()
    const planMode = createPlanMode({ section: SECTION, review, logger: { warn() {} } })
    services.push(planMode)
    const agent: PlanAgent = { id: 'agent-1', session: createMemorySessionLog() }
    await planMode.set(agent, true)
    const call = settle(planMode.exitTool.execute({ plan: PLAN }, { agent, callId: 'call-1' }))
    await review.untilAsked(1)
    expect(planMode.openReview(agent)).toBeNull()
    review.answer(APPROVE)
    expect(await call).toEqual({ value: { approved: true } })
  })

  it('R79, R60, R63: the open review survives detach and re-attach, dispose, and a new service on the same log; nothing is recorded reloaded', async () => {
    const h = harness()
    await planning(h)
    const reviewId = await h.submit(PLAN, 'call-1')
    const view = h.planMode.openReview(h.agent)
    const actor = h.planMode.actor(h.agent)
    h.planMode.detach(h.agent)
    await flush()
    expect(h.planMode.openReview(h.agent)).toEqual(view)
    expect(h.planMode.actor(h.agent)).not.toBe(actor)
    await h.planMode.dispose()
    await expect(h.planMode.answerReview(h.agent, reviewId, APPROVE)).rejects.toThrow(new Error(DISPOSED))
    expect(h.reviews()).toEqual([{ outcome: 'requested', reviewId, title: TITLE, plan: PLAN, callId: 'call-1' }])
    const next = h.another()
    expect(next.openReview(h.agent)).toEqual(view)
    expect(await next.answerReview(h.agent, reviewId, APPROVE)).toBe('approved')
  })

  it('R79, R77: an agent whose only open review is durable may leave memory, and finds it open again', async () => {
    const log = createMemorySessionLog()
    const planMode = durableService([], { limits: { maxAttachedAgents: 1 } })
    const a: PlanAgent = { id: 'a', session: log }
    const b: PlanAgent = { id: 'b', session: createMemorySessionLog() }
    await planMode.set(a, true)
    await planMode.exitTool.execute({ plan: PLAN }, { agent: a, callId: 'call-1' })
    const view = planMode.openReview(a)
    const actor = planMode.actor(a)
    await flush() // the exit call's turn has settled
    planMode.get(b) // attaching b makes a leave memory
    await flush()
    expect(actor.getSnapshot().status).toBe('stopped')
    expect(planMode.openReview(a)).toEqual(view)
    expect(log.events.map((e) => (e.data as { outcome?: string }).outcome ?? e.type)).toEqual(['plan/mode', 'requested'])
  })

  it('R79, R76: a checkpoint carries the open review; a service attached from the checkpoint and the tail sees it', async () => {
    const store = createMemoryCheckpointStore()
    const h = harness({ options: { checkpoints: { store, every: 1 } } })
    await planning(h)
    const reviewId = await h.submit(PLAN, 'call-1')
    const version = h.log.events.at(-1)!.seq
    h.log.append('turn/end', {})
    await h.planMode.dispose() // waits for the checkpoint's write
    const checkpoint = store.saved.get('agent-1')!
    expect(PLAN_CHECKPOINT_VERSION).toBe('xstate-plan-mode/checkpoint@3')
    expect(checkpoint).toEqual({
      version: 'xstate-plan-mode/checkpoint@3',
      agentId: 'agent-1',
      seq: version + 1,
      type: 'turn/end',
      digest: eventDigest({ seq: version + 1, type: 'turn/end', data: {} }),
      // R58: the projection keeps the open durable review, whose first closing record is the one that counts
      projection: { active: true, runs: {}, kept: null, openReview: reviewId },
      openTurn: false,
      told: true,
      review: { open: { reviewId, title: TITLE, plan: PLAN, version, callId: 'call-1' }, closed: null, news: null },
      // R96: the request presented v1 of this episode, and its review is still open
      episode: { version: 1, plan: PLAN, open: [{ reviewId, version: 1 }] },
    })
    h.log.append('turn/start', {})
    // The loader's events: the checkpoint's own, then those after it.
    const tail = createMemorySessionLog(
      h.log.events.slice(checkpoint.seq - 1).map(({ type, data }) => ({ type, data })),
      { checkpoint: await store.load('agent-1'), agentId: 'agent-1' },
    )
    const agent: PlanAgent = { id: 'agent-1', session: tail }
    const next = durableService()
    // The checkpoint keeps the request's seq under its own name (compatible); the view gives the plan's version beside it (R138).
    expect(next.openReview(agent)).toEqual({ reviewId, title: TITLE, plan: PLAN, version: 1, seq: version, callId: 'call-1' })
    expect(await next.answerReview(agent, reviewId, keepPlanning(FEEDBACK))).toBe('keep-planning')
    expect(tail.events.at(-1)!.data).toEqual({ outcome: 'keep-planning', reviewId, title: TITLE, plan: PLAN, feedback: FEEDBACK })
  })

  it('R79, R81, R76: a checkpoint carries the last durable review closed and the outcome not told yet', async () => {
    const store = createMemoryCheckpointStore()
    const h = harness({ options: { checkpoints: { store, every: 1 } } })
    await planning(h)
    const reviewId = await h.submit(PLAN)
    await h.planMode.answerReview(h.agent, reviewId, keepPlanning(FEEDBACK))
    h.log.append('turn/end', {})
    await h.planMode.dispose()
    const checkpoint = store.saved.get('agent-1')!
    expect(checkpoint.review).toEqual({
      open: null,
      closed: { reviewId, outcome: 'keep-planning' },
      news: { outcome: 'keep-planning', feedback: FEEDBACK },
    })
    const tail = createMemorySessionLog([{ type: 'turn/end', data: {} }, { type: 'turn/start', data: {} }], { checkpoint: await store.load('agent-1'), agentId: 'agent-1' })
    const agent: PlanAgent = { id: 'agent-1', session: tail }
    const next = durableService()
    await expect(next.answerReview(agent, reviewId, APPROVE)).rejects.toThrow(new Error(alreadyClosed(reviewId, 'keep-planning')))
    const step = await next.stepBoundary(agent)
    expect(step.messages).toEqual([narration(KEEP_WITH_FEEDBACK)])
  })

  it('R79, R76: a checkpoint without a valid review is ignored: the whole log is replayed after the exact warning, and a tail alone cannot attach', async () => {
    const full = createMemorySessionLog()
    const writer = durableService()
    const agent: PlanAgent = { id: 'agent-1', session: full }
    await writer.set(agent, true)
    const reviewId = ((await writer.exitTool.execute({ plan: PLAN }, { agent, callId: 'call-1' })) as { reviewId: string }).reviewId
    full.append('turn/start', {})
    const view = writer.openReview(agent)
    const fold = replayPlanLog(full.events.slice(0, 2))
    const { review: _review, ...withoutReview } = {
      version: PLAN_CHECKPOINT_VERSION,
      agentId: 'agent-1',
      seq: 2,
      type: 'plan/review',
      digest: eventDigest(full.events[1]!),
      projection: fold.projection,
      openTurn: fold.openTurn,
      told: fold.told,
      review: fold.review,
    }
    for (const checkpoint of [withoutReview, { ...withoutReview, review: { open: { reviewId: 7 }, closed: null, news: null } }]) {
      const warnings: unknown[][] = []
      const whole: SessionLog = { events: full.events, checkpoint, append: full.append, subscribe: full.subscribe }
      const next = durableService(warnings)
      expect(next.openReview({ id: 'agent-1', session: whole })).toEqual(view)
      expect(warnings).toEqual([[CHECKPOINT_IGNORED, new Error(NO_VALID_FOLD)]])
      expect((warnings[0]![1] as Error).message).toBe(NO_VALID_FOLD)

      const tail: SessionLog = { events: full.events.slice(2), checkpoint, append: full.append, subscribe: full.subscribe }
      expect(() => durableService().openReview({ id: 'agent-1', session: tail })).toThrow(
        new Error(`plan-mode: the session log holds no event from seq 1 and its checkpoint cannot be used (${NO_VALID_FOLD}); load the whole log`),
      )
    }
    expect(view?.reviewId).toBe(reviewId)
  })
})

describe('R80: answerReview', () => {
  it('R80: after dispose it rejects with the disposed message', async () => {
    const h = harness()
    await planning(h)
    const reviewId = await h.submit()
    await h.planMode.dispose()
    await expect(h.planMode.answerReview(h.agent, reviewId, APPROVE)).rejects.toThrow(new Error(DISPOSED))
    expect(h.reviews()).toHaveLength(1)
  })

  it('R80: a reviewId that is not a string or an answer of the wrong shape is refused with the exact message and changes nothing', async () => {
    const h = harness()
    await planning(h)
    const reviewId = await h.submit()
    const open = h.planMode.openReview(h.agent)
    const before = h.lines()
    const cases: [unknown, unknown][] = [
      [42, APPROVE],
      [undefined, APPROVE],
      [reviewId, null],
      [reviewId, 'Approve'],
      [reviewId, {}],
      [reviewId, { answers: 'Approve' }],
      [reviewId, { answers: [null] }],
      [reviewId, { answers: ['Approve'] }],
      [reviewId, { answers: [{ id: 7, selected: ['Approve'] }] }],
      [reviewId, { answers: [{ selected: ['Approve'] }] }],
      [reviewId, { answers: [{ id: 'plan-review', selected: 'Approve' }] }],
      [reviewId, { answers: [{ id: 'plan-review', selected: [1] }] }],
      [reviewId, { answers: [{ id: 'plan-review', selected: ['Approve'], custom: 3 }] }],
      [reviewId, { answers: [{ id: 'plan-review', selected: ['Approve'] }, { id: 'other' }] }],
    ]
    for (const [id, answer] of cases) {
      await expect(h.planMode.answerReview(h.agent, id as string, answer as ReviewAnswer)).rejects.toThrow(new Error(MALFORMED))
    }
    expect(h.lines()).toEqual(before)
    expect(h.planMode.openReview(h.agent)).toEqual(open)
    expect(h.planMode.get(h.agent)).toEqual({ active: true })
  })

  it('R80, R62: a hostile answer (a getter that throws on a later read) is refused with the exact message; the actor keeps working and the review stays open', async () => {
    const h = harness()
    await planning(h)
    const reviewId = await h.submit()
    let reads = 0
    // Well formed on the first reading, throwing on every one after: the answer is read once, outside the chart.
    const item = {
      id: 'plan-review',
      get selected(): string[] {
        if (++reads > 1) throw new Error('gone')
        return ['Approve']
      },
    }
    await expect(h.planMode.answerReview(h.agent, reviewId, { answers: [item] })).rejects.toThrow(new Error(MALFORMED))
    expect(h.planMode.actor(h.agent).getSnapshot().status).toBe('active')
    expect(h.planMode.openReview(h.agent)).toMatchObject({ reviewId })
    expect(await h.planMode.answerReview(h.agent, reviewId, APPROVE)).toBe('approved')
  })

  it('R80: an id that names no open review is refused: the last one closed with its recorded outcome, any other as not open', async () => {
    const h = harness()
    await planning(h)
    await expect(h.planMode.answerReview(h.agent, 'nope', APPROVE)).rejects.toThrow(new Error(notOpen('nope')))
    const first = await h.submit()
    await expect(h.planMode.answerReview(h.agent, 'nope', APPROVE)).rejects.toThrow(new Error(notOpen('nope')))
    expect(h.planMode.openReview(h.agent)?.reviewId).toBe(first)
    expect(await h.planMode.answerReview(h.agent, first, KEEP_PLANNING)).toBe('keep-planning')
    const before = h.lines()
    await expect(h.planMode.answerReview(h.agent, first, APPROVE)).rejects.toThrow(new Error(alreadyClosed(first, 'keep-planning')))
    const second = await h.submit(PLAN_2)
    await h.planMode.set(h.agent, false) // supersedes it
    await expect(h.planMode.answerReview(h.agent, second, APPROVE)).rejects.toThrow(new Error(alreadyClosed(second, 'superseded')))
    // Only the last one closed is named.
    await expect(h.planMode.answerReview(h.agent, first, APPROVE)).rejects.toThrow(new Error(notOpen(first)))
    expect(h.lines().slice(0, before.length)).toEqual(before)
  })

  it('R80, R47: Approve resolves approved once recorded; with F active P becomes leaving and get is { active: true, pending: false }', async () => {
    const h = harness()
    await planning(h)
    const reviewId = await h.submit(PLAN, 'call-1')
    expect(await h.planMode.answerReview(h.agent, reviewId, APPROVE)).toBe('approved')
    expect(h.log.events.at(-1)!.type).toBe('plan/review')
    expect(h.log.events.at(-1)!.data).toStrictEqual({ outcome: 'approved', reviewId, title: TITLE, plan: PLAN })
    expect(h.planMode.get(h.agent)).toEqual({ active: true, pending: false })
    expect(h.planMode.section(h.agent)).toBe('')
    expect(h.planMode.openReview(h.agent)).toBeNull()
    // An approval with blank custom text is consent too (R44).
    await h.planMode.set(h.agent, true) // cancels the leave
    const again = await h.submit(PLAN_2)
    const blank = { answers: [{ id: 'plan-review', selected: ['Approve'], custom: '  \n' }] }
    expect(await h.planMode.answerReview(h.agent, again, blank)).toBe('approved')
    expect(h.planMode.get(h.agent)).toEqual({ active: true, pending: false })
    const step = await h.step()
    expect(step.section).toBe('')
    expect(h.log.events.filter((e) => e.type === 'plan/mode').map((e) => e.data)).toEqual([{ active: true }, { active: false }])
  })

  it('R80, R64: an approval resolves only once the pending store has the leave it implies', async () => {
    const written: boolean[] = []
    const pendingStore = {
      get: () => undefined,
      set: (_id: string, value: boolean) => new Promise<void>((resolve) => setTimeout(() => (written.push(value), resolve()), 20)),
      delete: () => Promise.resolve(),
    }
    const h = harness({ async: true, options: { pendingStore } })
    await planning(h)
    const reviewId = await h.submit()
    expect(await h.planMode.answerReview(h.agent, reviewId, APPROVE)).toBe('approved')
    expect(written).toEqual([false])
  })

  it('R80, R47: with F inactive (a pending entry) an approval removes P', async () => {
    const h = harness()
    await h.log.append('turn/start', {})
    expect(await h.planMode.set(h.agent, true)).toBe('queued')
    const reviewId = await h.submit()
    expect(await h.planMode.answerReview(h.agent, reviewId, APPROVE)).toBe('approved')
    expect(h.planMode.get(h.agent)).toEqual({ active: false })
    expect(h.types()).toEqual(['turn/start', 'plan/review', 'plan/review'])
  })

  it('R80, R44, R45: anything but a clean Approve keeps planning; non-blank custom text is the feedback', async () => {
    const h = harness()
    await planning(h)
    const cases: [ReviewAnswer, string | undefined][] = [
      [keepPlanning(FEEDBACK), FEEDBACK],
      [keepPlanning(' \t '), undefined],
      [keepPlanning(), undefined],
      [{ answers: [{ id: 'plan-review', selected: ['Approve'], custom: FEEDBACK }] }, FEEDBACK],
      [{ answers: [{ id: 'plan-review', selected: [], custom: FEEDBACK }] }, FEEDBACK],
      [{ answers: [{ id: 'plan-review', selected: ['Approve', 'Keep planning'] }] }, undefined],
      [{ answers: [{ id: 'other', selected: ['Approve'] }] }, undefined],
      [{ answers: [APPROVE.answers[0]!, APPROVE.answers[0]!] }, undefined],
      [{ answers: [] }, undefined],
    ]
    for (const [answer, feedback] of cases) {
      const reviewId = await h.submit()
      expect(await h.planMode.answerReview(h.agent, reviewId, answer)).toBe('keep-planning')
      expect(h.log.events.at(-1)!.data).toStrictEqual({
        outcome: 'keep-planning',
        reviewId,
        title: TITLE,
        plan: PLAN,
        ...(feedback === undefined ? {} : { feedback }),
      })
      expect(h.planMode.get(h.agent)).toEqual({ active: true })
    }
  })

  it('R80: when the record cannot be appended, answerReview rejects with the log’s error and the review stays open', async () => {
    for (const fault of ['throw', 'reject'] as const) {
      const h = harness({ async: fault === 'reject' })
      await planning(h)
      const reviewId = await h.submit(PLAN, 'call-1')
      const open = h.planMode.openReview(h.agent)
      const before = h.lines()
      h.log.failNext('plan/review', fault)
      const failure = await h.planMode.answerReview(h.agent, reviewId, APPROVE).catch((error: unknown) => error)
      expect(failure).toBe(h.log.appendErrors[0])
      expect(h.lines()).toEqual(before)
      expect(h.planMode.openReview(h.agent)).toEqual(open)
      expect(h.planMode.get(h.agent)).toEqual({ active: true })
      // Nothing was changed: the review takes the next answer.
      expect(await h.planMode.answerReview(h.agent, reviewId, APPROVE)).toBe('approved')
      expect(h.planMode.get(h.agent)).toEqual({ active: true, pending: false })
    }
  })

  it('R80, R48, R13: a selection that is not a noop closes the open review as superseded, recorded before the selection follows', async () => {
    // Idle: the selection commits after the record.
    const idle = harness()
    await planning(idle)
    idle.log.append('turn/end', {})
    const first = await idle.submit()
    expect(await idle.planMode.set(idle.agent, true)).toBe('noop') // a noop leaves it open
    expect(idle.planMode.openReview(idle.agent)?.reviewId).toBe(first)
    expect(await idle.planMode.set(idle.agent, false)).toBe('committed')
    expect(idle.lines().slice(-2)).toEqual([
      `plan/review ${JSON.stringify({ outcome: 'superseded', reviewId: first, title: TITLE, plan: PLAN })}`,
      'plan/mode {"active":false}',
    ])
    expect(idle.planMode.openReview(idle.agent)).toBeNull()

    // In an open turn: recorded, then the selection queues; the boundary appends plan/mode.
    const open = harness()
    await planning(open)
    const second = await open.submit()
    expect(await open.planMode.set(open.agent, false)).toBe('queued')
    expect(open.log.events.at(-1)!.data).toStrictEqual({ outcome: 'superseded', reviewId: second, title: TITLE, plan: PLAN })
    expect(open.planMode.get(open.agent)).toEqual({ active: true, pending: false })
    await open.step()
    expect(open.types().slice(-3)).toEqual(['plan/review', 'plan/mode', 'request/header'])
  })

  it('R80, R42: a second durable exit call while one is open fails as R42.6 (before R42.7 for an owned agent)', async () => {
    const h = harness()
    await planning(h)
    const reviewId = await h.submit()
    await expect(h.submit(PLAN_2)).rejects.toThrow(new Error(R42.alreadyOpen))
    await expect(h.planMode.exitTool.execute({ plan: PLAN_2 }, { agent: { ...h.agent, owner: 'parent' } })).rejects.toThrow(
      new Error(R42.alreadyOpen),
    )
    expect(h.reviews()).toHaveLength(1)
    expect(h.planMode.openReview(h.agent)?.reviewId).toBe(reviewId)
  })

  it('R80: two services on one memory log: the first answer wins, the second is refused as already closed before it appends anything', async () => {
    const h = harness()
    await planning(h)
    const other = h.another()
    const reviewId = await h.submit(PLAN, 'call-1')
    expect(other.openReview(h.agent)?.reviewId).toBe(reviewId)
    expect(await other.answerReview(h.agent, reviewId, APPROVE)).toBe('approved')
    const before = h.lines()
    await expect(h.planMode.answerReview(h.agent, reviewId, keepPlanning(FEEDBACK))).rejects.toThrow(new Error(alreadyClosed(reviewId, 'approved')))
    expect(h.lines()).toEqual(before)
    for (const service of [h.planMode, other]) {
      expect(service.openReview(h.agent)).toBeNull()
      expect(service.get(h.agent)).toEqual({ active: true, pending: false })
    }
  })

  it('R80: racing answers on an async log: the record that lands first wins, the loser rejects naming its outcome, and every service agrees', async () => {
    const { shared, slow, loser, winner, loserAgent, winnerAgent, reviewId } = await racingServices()
    await shared.append('turn/start', {})
    expect(winner.openReview(winnerAgent)?.reviewId).toBe(reviewId)

    slow.hold()
    const losing = settle(loser.answerReview(loserAgent, reviewId, APPROVE))
    await flush()
    expect(slow.held).toBe(1) // the loser's record is on its way
    // Another process's record lands first.
    expect(await winner.answerReview(winnerAgent, reviewId, keepPlanning(FEEDBACK))).toBe('keep-planning')
    slow.release()
    expect(await losing).toEqual({ error: alreadyClosed(reviewId, 'keep-planning') })

    expect(shared.events.filter((e) => e.type === 'plan/review').map((e) => (e.data as { outcome: string }).outcome)).toEqual([
      'requested',
      'keep-planning',
      'approved',
    ])
    const replayed = durableService()
    for (const [service, agent] of [
      [loser, loserAgent],
      [winner, winnerAgent],
      [replayed, { id: 'agent-1', session: shared }],
    ] as const) {
      expect(service.openReview(agent)).toBeNull()
      expect(service.get(agent)).toEqual({ active: true })
      await expect(service.answerReview(agent, reviewId, APPROVE)).rejects.toThrow(new Error(alreadyClosed(reviewId, 'keep-planning')))
    }
    // Each tells the model the outcome the log holds.
    expect(texts(await loser.stepBoundary(loserAgent))).toEqual([KEEP_WITH_FEEDBACK])
    expect(texts(await replayed.stepBoundary({ id: 'agent-1', session: shared }))).toEqual([KEEP_WITH_FEEDBACK])
  })

  it('R79, R80: a request another process logs while this one records a losing answer is the open review here too, as a replay reads it (regression: the request was dropped, openReview was null and answers were refused until the agent reattached)', async () => {
    const { shared, slow, loser, winner, loserAgent, winnerAgent, reviewId } = await racingServices()
    slow.hold()
    const losing = settle(loser.answerReview(loserAgent, reviewId, APPROVE))
    await flush()
    expect(slow.held).toBe(1) // the loser's record is on its way
    // The other process closes the review first, and its model presents a revised plan at once.
    expect(await winner.answerReview(winnerAgent, reviewId, keepPlanning(FEEDBACK))).toBe('keep-planning')
    const revised = (await winner.exitTool.execute({ plan: PLAN_2 }, { agent: winnerAgent, callId: 'call-2' })) as { reviewId: string }
    slow.release()
    expect(await losing).toEqual({ error: alreadyClosed(reviewId, 'keep-planning') })

    const replayed = durableService()
    const open = { reviewId: revised.reviewId, plan: PLAN_2, callId: 'call-2' }
    expect(replayed.openReview({ id: 'agent-1', session: shared })).toMatchObject(open)
    expect(winner.openReview(winnerAgent)).toMatchObject(open)
    expect(loser.openReview(loserAgent)).toMatchObject(open)
    expect(await loser.answerReview(loserAgent, revised.reviewId, APPROVE)).toBe('approved')
  })

  it('R48, R79: a request another process logs while this one records the review a user\'s switch superseded is the open review here too, after the switch followed (regression: the request was dropped, openReview was null)', async () => {
    const { shared, slow, loser, winner, loserAgent, winnerAgent, reviewId } = await racingServices()
    await shared.append('turn/start', {})
    slow.hold()
    const leaving = loser.set(loserAgent, false) // closes the review as superseded (R48); its record is held
    await flush()
    expect(slow.held).toBe(1)
    expect(await winner.answerReview(winnerAgent, reviewId, keepPlanning(FEEDBACK))).toBe('keep-planning')
    const revised = (await winner.exitTool.execute({ plan: PLAN_2 }, { agent: winnerAgent, callId: 'call-2' })) as { reviewId: string }
    slow.release()
    expect(await leaving).toBe('queued') // the switch followed: P waits for the boundary (R9)
    expect(loser.get(loserAgent)).toEqual({ active: true, pending: false })

    const open = { reviewId: revised.reviewId, plan: PLAN_2, callId: 'call-2' }
    expect(durableService().openReview({ id: 'agent-1', session: shared })).toMatchObject(open)
    expect(winner.openReview(winnerAgent)).toMatchObject(open)
    expect(loser.openReview(loserAgent)).toMatchObject(open)
  })

  it('R80, R79, R31: at attach a lost answer’s record changes nothing: no leave is kept and K is not moved', async () => {
    const log = createMemorySessionLog([
      { type: 'plan/mode', data: { active: true } },
      { type: 'turn/start', data: {} },
      { type: 'request/header', data: {} },
      { type: 'plan/review', data: { outcome: 'requested', reviewId: 'r1', title: TITLE, plan: PLAN } },
      { type: 'plan/review', data: { outcome: 'keep-planning', reviewId: 'r1', title: TITLE, plan: PLAN, feedback: FEEDBACK, toldInResult: true } },
      { type: 'plan/review', data: { outcome: 'approved', reviewId: 'r1', title: TITLE, plan: PLAN, toldInResult: true } },
    ])
    const agent: PlanAgent = { id: 'agent-1', session: log }
    const planMode = durableService()
    expect(planMode.get(agent)).toEqual({ active: true })
    expect(planMode.openReview(agent)).toBeNull()
    await expect(planMode.answerReview(agent, 'r1', APPROVE)).rejects.toThrow(new Error(alreadyClosed('r1', 'keep-planning')))
    // K is still active (the header), so nothing is announced; the outcome was told in the result.
    expect(await planMode.stepBoundary(agent)).toEqual({ section: SECTION, messages: [] })
  })

  it('R80, R47: a closing record another process appended closes the review here with that outcome; an approval is consent', async () => {
    const h = harness()
    await planning(h)
    const first = await h.submit()
    h.log.append('plan/review', { outcome: 'keep-planning', reviewId: first, title: TITLE, plan: PLAN, feedback: FEEDBACK })
    expect(h.planMode.openReview(h.agent)).toBeNull()
    expect(h.planMode.get(h.agent)).toEqual({ active: true })
    await expect(h.planMode.answerReview(h.agent, first, APPROVE)).rejects.toThrow(new Error(alreadyClosed(first, 'keep-planning')))
    const second = await h.submit(PLAN_2)
    h.log.append('plan/review', { outcome: 'approved', reviewId: second, title: 'Migrate the database, v2', plan: PLAN_2 })
    expect(h.planMode.openReview(h.agent)).toBeNull()
    expect(h.planMode.get(h.agent)).toEqual({ active: true, pending: false })
    expect(h.planMode.section(h.agent)).toBe('')
  })
})

describe('R81: the model learns a durable review’s outcome exactly once', () => {
  it('R81, R34: an approval is told at the next boundary, first and without a leaving notice; exactly once', async () => {
    const h = harness()
    await planning(h)
    const reviewId = await h.submit()
    await h.planMode.answerReview(h.agent, reviewId, APPROVE)
    const step = await h.step()
    expect(step).toEqual({ section: '', messages: [narration(APPROVED_NEWS)] })
    expect(APPROVED_NEWS_TEXT).toBe(APPROVED_NEWS)
    expect(h.types().slice(-3)).toEqual(['plan/review', 'plan/mode', 'request/header'])
    expect(h.log.events.at(-2)!.data).toEqual({ active: false })
    expect(await h.step()).toEqual({ section: '', messages: [] })
  })

  it('R81, R45: keep planning is told with R45’s text, and no notice follows', async () => {
    const h = harness()
    await planning(h)
    await h.planMode.answerReview(h.agent, await h.submit(), keepPlanning(FEEDBACK))
    expect(await h.step()).toEqual({ section: SECTION, messages: [narration(KEEP_WITH_FEEDBACK)] })
    expect(await h.step()).toEqual({ section: SECTION, messages: [] })
    await h.planMode.answerReview(h.agent, await h.submit(), KEEP_PLANNING)
    expect(await h.step()).toEqual({ section: SECTION, messages: [narration(REVISE)] })
  })

  it('R81, R48, R32: a supersede is told with R48’s text, then the leaving notice', async () => {
    const h = harness()
    await planning(h)
    await h.submit()
    expect(await h.planMode.set(h.agent, false)).toBe('queued')
    const step = await h.step()
    expect(step).toEqual({ section: '', messages: [narration(SUPERSEDED), narration(LEAVING)] })
    expect(await h.step()).toEqual({ section: '', messages: [] })
  })

  it('R81: an approval is not told when the user entered plan mode again: R32 alone applies', async () => {
    const h = harness()
    await planning(h)
    await h.planMode.answerReview(h.agent, await h.submit(), APPROVE)
    expect(await h.planMode.set(h.agent, true)).toBe('cancelled')
    expect(await h.step()).toEqual({ section: SECTION, messages: [] })
    expect(await h.step()).toEqual({ section: SECTION, messages: [] })
    expect(h.log.events.filter((e) => e.type === 'plan/mode')).toHaveLength(1)

    // The model was told the default mode: the entry is announced (R32), the approval is not.
    const told = harness()
    await told.log.append('turn/start', {})
    await told.step() // K := inactive
    expect(await told.planMode.set(told.agent, true)).toBe('queued')
    await told.planMode.answerReview(told.agent, await told.submit(), APPROVE)
    expect(told.planMode.get(told.agent)).toEqual({ active: false }) // F inactive: the approval removed P (R47)
    expect(await told.planMode.set(told.agent, true)).toBe('queued')
    expect(await told.step()).toEqual({ section: SECTION, messages: [narration(ENTERING)] })
    expect(await told.step()).toEqual({ section: SECTION, messages: [] })
  })

  it('R81, R15, R19: an aborted boundary or a failed flush tells nothing and keeps the outcome for the next boundary', async () => {
    const h = harness()
    await planning(h)
    await h.planMode.answerReview(h.agent, await h.submit(), APPROVE)
    const controller = new AbortController()
    controller.abort()
    expect(await h.planMode.stepBoundary(h.agent, { signal: controller.signal })).toEqual({ section: SECTION, messages: [] })
    h.log.failNext('plan/mode', 'throw')
    expect(await h.planMode.stepBoundary(h.agent)).toEqual({ section: SECTION, messages: [] })
    expect(h.warnings).toEqual([['plan-mode: step-boundary flush failed', h.log.appendErrors[0]]])
    expect(await h.planMode.stepBoundary(h.agent)).toEqual({ section: '', messages: [narration(APPROVED_NEWS)] })
    expect(await h.planMode.stepBoundary(h.agent)).toEqual({ section: '', messages: [] })
  })

  it('R81, R30: told in the result: the record carries toldInResult, an approval sets K inactive, and no boundary tells anything', async () => {
    const h = harness()
    await planning(h)
    const approved = await h.submit()
    expect(await h.planMode.answerReview(h.agent, approved, APPROVE, { toldInResult: true })).toBe('approved')
    expect(h.log.events.at(-1)!.data).toStrictEqual({ outcome: 'approved', reviewId: approved, title: TITLE, plan: PLAN, toldInResult: true })
    expect(h.planMode.get(h.agent)).toEqual({ active: true, pending: false })
    expect(await h.step()).toEqual({ section: '', messages: [] }) // K is inactive: no leaving notice either
    expect(h.log.events.filter((e) => e.type === 'plan/mode').map((e) => e.data)).toEqual([{ active: true }, { active: false }])

    // A new service on the log agrees: nothing to tell, K inactive.
    await h.planMode.set(h.agent, true)
    const kept = await h.submit()
    await h.planMode.answerReview(h.agent, kept, keepPlanning(FEEDBACK), { toldInResult: true })
    expect(h.log.events.at(-1)!.data).toStrictEqual({
      outcome: 'keep-planning',
      reviewId: kept,
      title: TITLE,
      plan: PLAN,
      feedback: FEEDBACK,
      toldInResult: true,
    })
    const fresh = h.another()
    expect(await h.step()).toEqual({ section: SECTION, messages: [narration(ENTERING)] })
    expect((await fresh.stepBoundary(h.agent)).messages).toEqual([])
  })

  it('R81, R64: a fresh service on the log after the answer tells it at its first boundary', async () => {
    const h = harness()
    await planning(h)
    const reviewId = await h.submit()
    await h.planMode.answerReview(h.agent, reviewId, APPROVE)
    await h.planMode.dispose()
    const next = h.another()
    expect(next.get(h.agent)).toEqual({ active: true, pending: false })
    expect(await h.step(next)).toEqual({ section: '', messages: [narration(APPROVED_NEWS)] })
    expect(h.log.events.at(-2)!.data).toEqual({ active: false })
    expect(await h.step(next)).toEqual({ section: '', messages: [] })
  })

  it('R81: at attach, a request/header after the record means it was told; a record with nothing after it is told', async () => {
    const request = { outcome: 'requested', reviewId: 'r1', title: TITLE, plan: PLAN }
    const base = [
      { type: 'plan/mode', data: { active: true } },
      { type: 'turn/start', data: {} },
      { type: 'request/header', data: {} },
      { type: 'plan/review', data: request },
      { type: 'plan/review', data: { outcome: 'keep-planning', reviewId: 'r1', title: TITLE, plan: PLAN, feedback: FEEDBACK } },
    ]
    const attach = (events: typeof base) => {
      const planMode = durableService()
      return planMode.stepBoundary({ id: 'agent-1', session: createMemorySessionLog(events) })
    }
    expect(texts(await attach(base))).toEqual([KEEP_WITH_FEEDBACK])
    expect(texts(await attach([...base, { type: 'request/header', data: {} }]))).toEqual([])
    // Noise after the record changes nothing.
    expect(texts(await attach([...base, { type: 'message', data: {} }, { type: 'turn/end', data: {} }]))).toEqual([KEEP_WITH_FEEDBACK])
  })

  it('R81: a new durable request drops an untold outcome, live and at attach', async () => {
    const h = harness()
    await planning(h)
    await h.planMode.answerReview(h.agent, await h.submit(), keepPlanning(FEEDBACK))
    const second = await h.submit(PLAN_2)
    const fresh = h.another()
    expect(await h.step()).toEqual({ section: SECTION, messages: [] })
    expect((await fresh.stepBoundary(h.agent)).messages).toEqual([])
    expect(fresh.openReview(h.agent)?.reviewId).toBe(second)

    const seeded = createMemorySessionLog([
      { type: 'plan/mode', data: { active: true } },
      { type: 'plan/review', data: { outcome: 'requested', reviewId: 'r1', title: TITLE, plan: PLAN } },
      { type: 'plan/review', data: { outcome: 'keep-planning', reviewId: 'r1', title: TITLE, plan: PLAN, feedback: FEEDBACK } },
      { type: 'plan/review', data: { outcome: 'requested', reviewId: 'r2', title: TITLE, plan: PLAN_2 } },
    ])
    const attached = durableService()
    const agent: PlanAgent = { id: 'agent-1', session: seeded }
    expect(attached.openReview(agent)).toEqual({ reviewId: 'r2', title: TITLE, plan: PLAN_2, version: 2, seq: 4 })
    expect(await attached.stepBoundary(agent)).toEqual({ section: SECTION, messages: [] })
  })
})
