import { afterEach, describe, expect, it } from 'vitest'
import { createMemorySessionLog, createPlanMode, type PlanAgent, type PlanMode, type ReviewAnswer, type SessionEvent, type SessionLog, type StepBoundaryResult } from '../src/index.js'
import { APPROVE, PLAN, SECTION } from './helpers.js'

/**
 * R79, R80: the races of a durable review's closing in which another process closes the review
 * while this one's answer is being recorded, and then requests the next review, also before our
 * record settles. Our record then lands (it lost: `lost`) or fails (`answerFailed`), and the review
 * concludes with the other record and a request heard meanwhile. These are the transitions the
 * model's alphabet cannot take (test/model.test.ts, `UNREACHABLE`); each test here drives one of
 * them through the public API: two services on one memory log, the first one's next `plan/review`
 * append held until the test lands it or fails it. Then the regressions these races found: the
 * closing record the log held first concludes the review as a replay reads it, before the
 * `plan/mode` and request headers the log reported after it while our record was in flight.
 */

// Every text below is copied from docs/spec.md (R32, R80, R81, R84).
const LEAVING = 'The user switched this session back to the default mode.'
const ENTERING = 'The user switched this session to plan mode.'
const APPROVED_NEWS = 'The user approved your plan and plan mode is off; carry out the plan, starting now.'
const FEEDBACK = 'Use SQLite, not Postgres.'
const alreadyClosed = (reviewId: string, outcome: string) => `plan review ${reviewId} is already closed (${outcome}); nothing was changed`
const notOpen = (reviewId: string) => `no plan review ${reviewId} is open for this agent; nothing was changed`
/** R84's refusal, as the PostgreSQL log rejects a decision another instance's append outran. */
const seqTaken = (seq: number) =>
  `plan-mode postgres: session s-1 already has seq ${seq} (another instance appended first); the plan/review event was not written`

const TITLE = 'Migrate the database'
const TITLE_2 = 'Migrate the database, v2'
const PLAN_2 = '# Migrate the database, v2\n\n1. Back up.\n2. Migrate on SQLite.'
const keepPlanning = (custom: string): ReviewAnswer => ({ answers: [{ id: 'plan-review', selected: ['Keep planning'], custom }] })

const services: PlanMode[] = []
afterEach(async () => {
  await Promise.all(services.splice(0).map((service) => service.dispose()))
})

function durableService(warnings: unknown[][] = []): PlanMode {
  const planMode = createPlanMode({ section: SECTION, review: 'durable', logger: { warn: (...args: unknown[]) => warnings.push(args) } })
  services.push(planMode)
  return planMode
}

/**
 * A session log over `inner` (shared with other services) whose next `plan/review` append, once
 * `hold()` armed it, waits: `appended` resolves when the service has called it, then `land()`
 * appends it to `inner` or `fail(error)` rejects it with nothing appended.
 */
function gatedLog(inner: SessionLog) {
  let gate: { called: () => void; decided: Promise<Error | null> } | undefined
  const log = {
    get events() {
      return inner.events
    },
    subscribe: (listener: (event: SessionEvent) => void) => inner.subscribe(listener),
    append(type: string, data: unknown): SessionEvent | Promise<SessionEvent> {
      if (type !== 'plan/review' || gate === undefined) return inner.append(type, data)
      const { called, decided } = gate
      gate = undefined
      called()
      return decided.then((error) => {
        if (error !== null) throw error
        return inner.append(type, data)
      })
    },
    hold() {
      let called!: () => void
      let decide!: (error: Error | null) => void
      const appended = new Promise<void>((resolve) => (called = resolve))
      gate = { called, decided: new Promise<Error | null>((resolve) => (decide = resolve)) }
      return { appended, land: () => decide(null), fail: (error: Error) => decide(error) }
    },
  } satisfies SessionLog & { hold(): unknown }
  return log
}

const settle = <T>(promise: Promise<T>) =>
  promise.then(
    (value) => ({ value }),
    (error: Error) => ({ error: error.message }),
  )

const texts = (result: StepBoundaryResult) => result.messages.map((m) => (m.content[0] as { text: string }).text)

/**
 * Two services on one log, the agent in plan mode with a turn open, a step run (K active) and a
 * durable review open, requested by `slow` (this process, whose log holds its next record);
 * `other` is another process on the same log.
 */
async function race() {
  const shared = createMemorySessionLog()
  const log = gatedLog(shared)
  const warnings: unknown[][] = []
  const slow = durableService(warnings)
  const other = durableService()
  const agent: PlanAgent = { id: 'agent-1', session: log }
  const otherAgent: PlanAgent = { id: 'agent-1', session: shared }
  expect(await slow.set(agent, true)).toBe('committed')
  await shared.append('turn/start', {})
  expect(await slow.stepBoundary(agent)).toEqual({ section: SECTION, messages: [] })
  await shared.append('request/header', {})
  const { reviewId } = (await slow.exitTool.execute({ plan: PLAN }, { agent, callId: 'call-1' })) as { reviewId: string }
  return {
    shared,
    log,
    warnings,
    slow,
    other,
    agent,
    otherAgent,
    reviewId,
    /** Our answer, its record held: resolves once the record's append was called. */
    async answerHeld(answer: ReviewAnswer) {
      const gate = log.hold()
      const answering = settle(slow.answerReview(agent, reviewId, answer))
      await gate.appended
      return { answering, gate }
    },
    /** The other process's model presents the revised plan: its request lands; resolves with its id. */
    async otherRequests() {
      const result = (await other.exitTool.execute({ plan: PLAN_2 }, { agent: otherAgent, callId: 'call-2' })) as { submitted: boolean; reviewId: string }
      expect(result.submitted).toBe(true)
      return result.reviewId
    },
    records: () => shared.events.filter((e) => e.type === 'plan/review').map((e) => e.data),
    /** A third service attached to a copy of the log as it is now: what a replay reads (R64, R80). */
    replay() {
      const copy = createMemorySessionLog(shared.events.map(({ type, data }) => ({ type, data })))
      return { service: durableService(), agent: { id: 'agent-1', session: copy } satisfies PlanAgent }
    },
  }
}

type Race = Awaited<ReturnType<typeof race>>

/** The plan/review records the race leaves before ours (if it landed): r1's request, the other's closing record, r2's request. */
function recordsBefore(r: Race, closing: Record<string, unknown>, next: string) {
  return [
    { outcome: 'requested', reviewId: r.reviewId, title: TITLE, plan: PLAN, callId: 'call-1' },
    { ...closing, reviewId: r.reviewId, title: TITLE, plan: PLAN, ...(closing.feedback === undefined ? {} : { feedback: closing.feedback }), ...(closing.toldInResult ? { toldInResult: true } : {}) },
    { outcome: 'requested', reviewId: next, title: TITLE_2, plan: PLAN_2, callId: 'call-2' },
  ].map((record) => JSON.parse(JSON.stringify(record)) as unknown)
}

/**
 * What this service shows after the race, which a replay of the log shows alike: the next review
 * open, the mode and P, the refusals of answers to both reviews' ids, and what the next step
 * boundary tells the model (on the copy for the replay, so the two boundaries do not meet).
 */
async function expectAsReplayed(r: Race, next: string, shown: { get: unknown; told: string[]; version?: number }) {
  const replayed = r.replay()
  const seq = r.shared.events.find((e) => e.type === 'plan/review' && (e.data as { reviewId: string }).reviewId === next && (e.data as { outcome: string }).outcome === 'requested')!.seq
  // R96: the second plan of the episode, unless a plan/mode began a new one.
  const open = { reviewId: next, title: TITLE_2, plan: PLAN_2, version: shown.version ?? 2, seq, callId: 'call-2' }
  for (const [service, agent] of [
    [r.slow, r.agent],
    [replayed.service, replayed.agent],
  ] as const) {
    expect(service.openReview(agent)).toEqual(open)
    expect(service.get(agent)).toEqual(shown.get)
    // A review was requested since the first closed: an answer to it names no open review (R80).
    await expect(service.answerReview(agent, r.reviewId, APPROVE)).rejects.toThrow(new Error(notOpen(r.reviewId)))
  }
  const told = await r.slow.stepBoundary(r.agent)
  expect(texts(told)).toEqual(shown.told)
  expect(texts(await replayed.service.stepBoundary(replayed.agent))).toEqual(shown.told)
  // The next review is still open, and this service answers it.
  expect(r.slow.openReview(r.agent)?.reviewId).toBe(next)
  return told
}

describe('R79, R80: our answer\'s record lands after another process closed the review and requested the next one (our answer lost)', () => {
  it('R79, R80, R47, R81: another process\'s approval told in the result outran our keep-planning, and the user re-entered plan mode there before its model presented again: our answer rejects as already closed (approved); the next review is open; the consent\'s leave waits here as in a replay, and the model is told nothing', async () => {
    const r = await race()
    const { answering, gate } = await r.answerHeld(keepPlanning(FEEDBACK))
    expect(await r.other.answerReview(r.otherAgent, r.reviewId, APPROVE, { toldInResult: true })).toBe('approved')
    // The user turns plan mode back on in that process before its boundary flushed the leave (R9).
    expect(await r.other.set(r.otherAgent, true)).toBe('cancelled')
    const next = await r.otherRequests()
    gate.land()
    expect(await answering).toEqual({ error: alreadyClosed(r.reviewId, 'approved') })

    expect(r.records()).toEqual([
      ...recordsBefore(r, { outcome: 'approved', toldInResult: true }, next),
      { outcome: 'keep-planning', reviewId: r.reviewId, title: TITLE, plan: PLAN, feedback: FEEDBACK },
    ])
    // The approval is consent (R47): the log keeps its leave (R58, R64: a replay has P leaving);
    // the model heard it in the result (K inactive), so the boundary that leaves tells nothing.
    const told = await expectAsReplayed(r, next, { get: { active: true, pending: false }, told: [] })
    expect(told.section).toBe('')
    expect(r.warnings).toEqual([])
  })

  it('R79, R80, R47, R81: another process\'s approval, not told in the result, outran our keep-planning, and the user re-entered plan mode there before its model presented again: our answer rejects as already closed (approved); the next review is open; the request dropped the untold approval, so the leave\'s boundary tells only the leaving notice', async () => {
    const r = await race()
    const { answering, gate } = await r.answerHeld(keepPlanning(FEEDBACK))
    expect(await r.other.answerReview(r.otherAgent, r.reviewId, APPROVE)).toBe('approved')
    expect(await r.other.set(r.otherAgent, true)).toBe('cancelled')
    const next = await r.otherRequests()
    gate.land()
    expect(await answering).toEqual({ error: alreadyClosed(r.reviewId, 'approved') })

    expect(r.records()).toEqual([
      ...recordsBefore(r, { outcome: 'approved' }, next),
      { outcome: 'keep-planning', reviewId: r.reviewId, title: TITLE, plan: PLAN, feedback: FEEDBACK },
    ])
    // R81: a new durable request drops an untold outcome; K is still active, so the leave is told.
    await expectAsReplayed(r, next, { get: { active: true, pending: false }, told: [LEAVING] })
    expect(r.warnings).toEqual([])
  })

  it('R79, R80, R81: another process\'s keep-planning outran our approval, and its model presented the revised plan: our answer rejects as already closed (keep-planning); the revised plan\'s review is open, plan mode stays, and the model is told nothing', async () => {
    const r = await race()
    const { answering, gate } = await r.answerHeld(APPROVE)
    expect(await r.other.answerReview(r.otherAgent, r.reviewId, keepPlanning(FEEDBACK))).toBe('keep-planning')
    const next = await r.otherRequests()
    gate.land()
    expect(await answering).toEqual({ error: alreadyClosed(r.reviewId, 'keep-planning') })

    expect(r.records()).toEqual([
      ...recordsBefore(r, { outcome: 'keep-planning', feedback: FEEDBACK }, next),
      { outcome: 'approved', reviewId: r.reviewId, title: TITLE, plan: PLAN },
    ])
    // Our lost approval is no consent (R80); the request dropped the untold keep-planning (R81).
    const told = await expectAsReplayed(r, next, { get: { active: true }, told: [] })
    expect(told.section).toBe(SECTION)
    expect(r.warnings).toEqual([])
  })
})

describe('R79, R80: our answer\'s record fails after another process closed the review and requested the next one', () => {
  it('R79, R80, R84, R47, R81: another process\'s approval told in the result outran our keep-planning, and the user re-entered plan mode there before its model presented again: our answer rejects with the log\'s error, unwarned; the next review is open; the consent\'s leave waits as in a replay, and the model is told nothing', async () => {
    const r = await race()
    const { answering, gate } = await r.answerHeld(keepPlanning(FEEDBACK))
    expect(await r.other.answerReview(r.otherAgent, r.reviewId, APPROVE, { toldInResult: true })).toBe('approved')
    expect(await r.other.set(r.otherAgent, true)).toBe('cancelled')
    const next = await r.otherRequests()
    gate.fail(new Error(seqTaken(6)))
    expect(await answering).toEqual({ error: seqTaken(6) })

    expect(r.records()).toEqual(recordsBefore(r, { outcome: 'approved', toldInResult: true }, next))
    const told = await expectAsReplayed(r, next, { get: { active: true, pending: false }, told: [] })
    expect(told.section).toBe('')
    expect(r.warnings).toEqual([])
  })

  it('R79, R80, R84, R47, R81: another process\'s approval, not told in the result, outran our keep-planning, and the user re-entered plan mode there before its model presented again: our answer rejects with the log\'s error, unwarned; the next review is open; the leave\'s boundary tells only the leaving notice', async () => {
    const r = await race()
    const { answering, gate } = await r.answerHeld(keepPlanning(FEEDBACK))
    expect(await r.other.answerReview(r.otherAgent, r.reviewId, APPROVE)).toBe('approved')
    expect(await r.other.set(r.otherAgent, true)).toBe('cancelled')
    const next = await r.otherRequests()
    gate.fail(new Error(seqTaken(6)))
    expect(await answering).toEqual({ error: seqTaken(6) })

    expect(r.records()).toEqual(recordsBefore(r, { outcome: 'approved' }, next))
    await expectAsReplayed(r, next, { get: { active: true, pending: false }, told: [LEAVING] })
    expect(r.warnings).toEqual([])
  })

  it('R79, R80, R84, R81: another process\'s keep-planning outran our approval, and its model presented the revised plan: our answer rejects with the log\'s error, unwarned; the revised plan\'s review is open, plan mode stays, and the model is told nothing', async () => {
    const r = await race()
    const { answering, gate } = await r.answerHeld(APPROVE)
    expect(await r.other.answerReview(r.otherAgent, r.reviewId, keepPlanning(FEEDBACK))).toBe('keep-planning')
    const next = await r.otherRequests()
    gate.fail(new Error(seqTaken(6)))
    expect(await answering).toEqual({ error: seqTaken(6) })

    expect(r.records()).toEqual(recordsBefore(r, { outcome: 'keep-planning', feedback: FEEDBACK }, next))
    const told = await expectAsReplayed(r, next, { get: { active: true }, told: [] })
    expect(told.section).toBe(SECTION)
    expect(r.warnings).toEqual([])
  })
})

/**
 * Found by the races above: an outcome that outran our answer is the log's from its record on, and
 * what the log reported after that record (the other process's boundary, its request header, the
 * user's switch back to plan mode) came after it. A replay reads it so (R64, R80); so must the
 * service whose answer lost, when its record finally settles.
 */
describe('R80, R81, R47: an outcome that outran our answer is applied as the log holds it, before what followed it', () => {
  it('R80, R81: an approval that outran our keep-planning, which the other process\'s boundary told, is not told again here when our record lands (regression: it was told a second time)', async () => {
    const r = await race()
    const { answering, gate } = await r.answerHeld(keepPlanning(FEEDBACK))
    expect(await r.other.answerReview(r.otherAgent, r.reviewId, APPROVE)).toBe('approved')
    expect(texts(await r.other.stepBoundary(r.otherAgent))).toEqual([APPROVED_NEWS])
    await r.shared.append('request/header', {})
    gate.land()
    expect(await answering).toEqual({ error: alreadyClosed(r.reviewId, 'approved') })

    const replayed = r.replay()
    for (const [service, agent] of [
      [r.slow, r.agent],
      [replayed.service, replayed.agent],
    ] as const) {
      expect(service.get(agent)).toEqual({ active: false })
      expect(service.openReview(agent)).toBeNull()
      await expect(service.answerReview(agent, r.reviewId, APPROVE)).rejects.toThrow(new Error(alreadyClosed(r.reviewId, 'approved')))
      expect(await service.stepBoundary(agent)).toEqual({ section: '', messages: [] })
    }
  })

  for (const end of ['lands', 'fails'] as const) {
    it(`R80, R47, R16, R30: an approval told in the result that outran our keep-planning, whose leave the other process flushed before the user entered plan mode again and its model presented again, leaves no leave here and K active when our record ${end} (regression: the consent was taken again, and the next boundary left plan mode)`, async () => {
      const r = await race()
      const { answering, gate } = await r.answerHeld(keepPlanning(FEEDBACK))
      expect(await r.other.answerReview(r.otherAgent, r.reviewId, APPROVE, { toldInResult: true })).toBe('approved')
      expect(await r.other.stepBoundary(r.otherAgent)).toEqual({ section: '', messages: [] }) // flushes the leave
      await r.shared.append('request/header', {})
      expect(await r.other.set(r.otherAgent, true)).toBe('queued')
      expect(texts(await r.other.stepBoundary(r.otherAgent))).toEqual([ENTERING])
      await r.shared.append('request/header', {})
      const next = await r.otherRequests()
      if (end === 'lands') gate.land()
      else gate.fail(new Error(seqTaken(10)))
      expect(await answering).toEqual({ error: end === 'lands' ? alreadyClosed(r.reviewId, 'approved') : seqTaken(10) })

      expect(r.shared.events.map((e) => e.type === 'plan/mode' ? `plan/mode ${JSON.stringify(e.data)}` : e.type).slice(3)).toEqual([
        'plan/review',
        'plan/review',
        'plan/mode {"active":false}',
        'request/header',
        'plan/mode {"active":true}',
        'request/header',
        'plan/review',
        ...(end === 'lands' ? ['plan/review'] : []),
      ])
      const told = await expectAsReplayed(r, next, { get: { active: true }, told: [], version: 1 })
      expect(told.section).toBe(SECTION)
      expect(r.warnings).toEqual([])
    })
  }
})

describe('R80, R81, R48: a record identical to ours that the log holds first is the outcome as the log holds it, before what followed it', () => {
  it('R80, R47, R16, R30: another process\'s approval told in the result, identical to ours, whose leave it flushed before the user entered plan mode again: ours resolves approved when it lands, and leaves no leave here and K active', async () => {
    const r = await race()
    const approving = r.log.hold()
    const answering = settle(r.slow.answerReview(r.agent, r.reviewId, APPROVE, { toldInResult: true }))
    await approving.appended
    expect(await r.other.answerReview(r.otherAgent, r.reviewId, APPROVE, { toldInResult: true })).toBe('approved')
    expect(await r.other.stepBoundary(r.otherAgent)).toEqual({ section: '', messages: [] }) // flushes the leave
    await r.shared.append('request/header', {})
    expect(await r.other.set(r.otherAgent, true)).toBe('queued')
    expect(texts(await r.other.stepBoundary(r.otherAgent))).toEqual([ENTERING])
    await r.shared.append('request/header', {})
    approving.land()
    // R80: identical to the first record, it cannot be told from it: it resolves as the first did.
    expect(await answering).toEqual({ value: 'approved' })

    const replayed = r.replay()
    for (const [service, agent] of [
      [r.slow, r.agent],
      [replayed.service, replayed.agent],
    ] as const) {
      expect(service.get(agent)).toEqual({ active: true })
      expect(service.openReview(agent)).toBeNull()
      expect(await service.stepBoundary(agent)).toEqual({ section: SECTION, messages: [] })
    }
    expect(r.warnings).toEqual([])
  })

  for (const active of [true, false]) {
    it(`R80, R48, R81: the user's switch ${active ? 'into' : 'out of'} plan mode in another process superseded the review first with the record ours repeats, and a step ran there after its switch followed: ours lands, our switch is a noop, and the supersede is not told again`, async () => {
      const shared = createMemorySessionLog()
      const log = gatedLog(shared)
      const warnings: unknown[][] = []
      const slow = durableService(warnings)
      const other = durableService()
      const agent: PlanAgent = { id: 'agent-1', session: log }
      const otherAgent: PlanAgent = { id: 'agent-1', session: shared }
      if (!active) expect(await slow.set(agent, true)).toBe('committed')
      // A review the log holds open (another writer's request); no turn is open: a switch commits (R10).
      await shared.append('plan/review', { outcome: 'requested', reviewId: 'r-1', title: TITLE, plan: PLAN })
      expect(slow.openReview(agent)?.reviewId).toBe('r-1')
      const superseding = log.hold()
      const switching = settle(slow.set(agent, active))
      await superseding.appended
      expect(await other.set(otherAgent, active)).toBe('committed') // its supersede record, then its plan/mode
      await shared.append('turn/start', {})
      expect(await other.stepBoundary(otherAgent)).toEqual({ section: active ? SECTION : '', messages: [expect.objectContaining({ role: 'user' })] })
      await shared.append('request/header', {})
      superseding.land()
      expect(await switching).toEqual({ value: 'noop' })

      const superseded = { outcome: 'superseded', reviewId: 'r-1', title: TITLE, plan: PLAN }
      expect(shared.events.map((e) => [e.type, e.data])).toEqual([
        ...(active ? [] : [['plan/mode', { active: true }]]),
        ['plan/review', { outcome: 'requested', reviewId: 'r-1', title: TITLE, plan: PLAN }],
        ['plan/review', superseded],
        ['plan/mode', { active }],
        ['turn/start', {}],
        ['request/header', {}],
        ['plan/review', superseded],
      ])
      const copy: PlanAgent = { id: 'agent-1', session: createMemorySessionLog(shared.events.map(({ type, data }) => ({ type, data }))) }
      const replayed = durableService()
      for (const [service, a] of [
        [slow, agent],
        [replayed, copy],
      ] as const) {
        expect(service.get(a)).toEqual({ active })
        expect(service.openReview(a)).toBeNull()
        // R81: the other process's step told the supersede; nothing is left to tell here.
        expect(await service.stepBoundary(a)).toEqual({ section: active ? SECTION : '', messages: [] })
      }
      expect(warnings).toEqual([])
    })
  }
})
