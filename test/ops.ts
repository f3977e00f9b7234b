/**
 * The operations of the property tests, as data (so fast-check can generate, shrink and print
 * them), and how each one runs on a twin (service + oracle).
 */
import { isDeepStrictEqual } from 'node:util'
import fc from 'fast-check'
import { createMemorySessionLog, createPlanMode, foldPlanMode, planProjection, replayFromCheckpoint, replayPlanLog, type PlanCheckpoint, type ReviewAnswer, type SessionEvent, type SessionLog } from '../src/index.js'
import { type PlanModeState } from '../src/types.js'
import {
  foldF,
  foldK,
  foldKept,
  foldOpenTurn,
  foldP,
  foldReviews,
  presentedVersionIn,
  newsMessage,
  readAnswer,
  TEXT,
  type AnswerLike,
  type LogEntry,
  type OpenReviewExpectation,
} from './oracle.js'
import { createCheckpoint } from '../src/log/checkpoint.js'
import { noticeText, settle } from './sut.js'
import { SECTION, Twin } from './twin.js'

/** Plans the exit tool is called with: valid ones, refused ones (R42.4, R42.5). */
export const PLANS = {
  simple: '# Ship the importer\n\n1. Parse.\n2. Store.',
  deep: '## Deep title  \nbody',
  indented: '  # Indented title\n- step',
  blankFirst: '\n\n###### Six\t \ntext',
  tabbed: '#\tTabbed title',
  noSpace: '#NoSpace',
  noHeading: 'Just do it.',
  empty: '',
  blank: '   ',
  sevenHashes: '####### Seven',
  headingLater: 'Intro\n# Later heading',
  tooLarge: '# Big\n' + 'x'.repeat(256 * 1024),
} as const

/** Answers to a review (R44, R45). */
export const REVIEW_ANSWERS: Record<string, unknown> = {
  approve: { answers: [{ id: 'plan-review', selected: ['Approve'] }] },
  approveBlankCustom: { answers: [{ id: 'plan-review', selected: ['Approve'], custom: '  \n ' }] },
  approveWithCustom: { answers: [{ id: 'plan-review', selected: ['Approve'], custom: 'but use SQLite' }] },
  keep: { answers: [{ id: 'plan-review', selected: ['Keep planning'] }] },
  keepWithFeedback: { answers: [{ id: 'plan-review', selected: ['Keep planning'], custom: '  Split step 2.  ' }] },
  customOnly: { answers: [{ id: 'plan-review', selected: [], custom: 'What about tests?' }] },
  noItems: { answers: [] },
  duplicates: {
    answers: [
      { id: 'plan-review', selected: ['Approve'] },
      { id: 'plan-review', selected: ['Approve'] },
    ],
  },
  otherIdThenApprove: {
    answers: [
      { id: 'other', selected: ['Keep planning'] },
      { id: 'plan-review', selected: ['Approve'] },
    ],
  },
  severalSelections: { answers: [{ id: 'plan-review', selected: ['Approve', 'Keep planning'] }] },
  malformed: { answers: 'yes' },
}

/** Answers to a durable review (R80): R44's and R45's, and shapes `answerReview` refuses. */
export const DURABLE_ANSWERS: Record<string, unknown> = {
  ...REVIEW_ANSWERS,
  selectedNotArray: { answers: [{ id: 'plan-review', selected: 'Approve' }] },
  selectedNotStrings: { answers: [{ id: 'plan-review', selected: [1] }] },
  customNotString: { answers: [{ id: 'plan-review', selected: ['Approve'], custom: 7 }] },
  idMissing: { answers: [{ selected: ['Approve'] }] },
  itemNull: { answers: [null] },
  nullAnswer: null,
}

/** The plan of a durable review another writer (another process on the log) requests. */
const OTHER_PLAN = '# Migrate the schema\n\n1. Add the column.'
const OTHER_TITLE = 'Migrate the schema'
/** The feedback of another writer's keep-planning record: no answer of the runs carries it. */
const OTHER_FEEDBACK = 'Ask the DBA first.'

/** One operation of a property run. `a` picks the agent (modulo the run's agent count). */
export type Op =
  | { kind: 'set'; a: number; active: boolean }
  | { kind: 'command'; a: number; raw: string; attachments: boolean; canSteer: boolean }
  | { kind: 'step'; a: number }
  | { kind: 'abortedStep'; a: number }
  | { kind: 'header'; a: number }
  | { kind: 'turnStart'; a: number }
  | { kind: 'turnEnd'; a: number }
  | { kind: 'foreignFlip'; a: number }
  | { kind: 'open'; a: number; plan: keyof typeof PLANS; owned: boolean; preAborted: boolean; askThrows: boolean; callId?: string }
  | { kind: 'openBadArgs'; a: number; args: 'number' | 'missing' | 'null' | 'noAgent' }
  | { kind: 'answer'; a: number; answer: string }
  | { kind: 'rejectAsk'; a: number; dismiss: boolean }
  | { kind: 'abort'; a: number; reason: 'error' | 'string' | 'plain' }
  | { kind: 'lateAnswer'; a: number; answer: string }
  | { kind: 'failNext'; a: number; how: 'throw' | 'reject' }
  | { kind: 'detach'; a: number }
  | { kind: 'restart' }
  | { kind: 'release'; a: number; how: 'publish' | 'resolve' | 'reject' }
  | { kind: 'boundary'; a: number }
  /**
   * R80: `answerReview` of the review the log holds open, of the last one closed, of an id no
   * review has, or with an id that is not a string; `answer` names one of `DURABLE_ANSWERS`.
   */
  | { kind: 'answerReview'; a: number; target: 'open' | 'closed' | 'unknown' | 'notString'; answer: string; toldInResult?: boolean }
  /**
   * Another writer's durable record (another process on the same log, R79, R80): a request, a
   * closing record of the open review, or one of the review closed last (a lost answer's).
   */
  | { kind: 'foreignReview'; a: number; record: 'request' | 'approve' | 'keep' | 'supersede' | 'stray'; toldInResult: boolean }

/** Mostly the first agent, so that one agent's story gets long; sometimes the others. */
const agentIndex = fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, { weight: 2, arbitrary: fc.nat({ max: 2 }) })

/**
 * The operation generator; `foreign` adds a second writer that flips F; `held` is for a log whose
 * service appends wait for a `release` (no restart then: a dispose waits for them; a step is a
 * bare boundary, the header its own operation).
 */
export function opArbitrary({ foreign, held = false }: { foreign: boolean; held?: boolean }): fc.Arbitrary<Op> {
  const weighted: fc.WeightedArbitrary<Op>[] = [
    // Entering plan mode more often than leaving, so that reviews can open.
    { weight: 6, arbitrary: fc.record({ kind: fc.constant('set' as const), a: agentIndex, active: fc.oneof({ weight: 2, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }) }) },
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant('command' as const),
        a: agentIndex,
        raw: fc.constantFrom('', 'off', 'OFF', ' Off ', 'draft the migration', '  '),
        attachments: fc.boolean(),
        canSteer: fc.boolean(),
      }),
    },
    { weight: 6, arbitrary: fc.record({ kind: fc.constant('step' as const), a: agentIndex }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('abortedStep' as const), a: agentIndex }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('header' as const), a: agentIndex }) },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('turnStart' as const), a: agentIndex }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('turnEnd' as const), a: agentIndex }) },
    {
      // Mostly a valid plan; sometimes another plan, an owned agent, a pre-aborted signal or a channel that throws.
      weight: 8,
      arbitrary: fc
        .tuple(agentIndex, fc.constantFrom(...(Object.keys(PLANS) as (keyof typeof PLANS)[])), fc.nat({ max: 9 }))
        .map(([a, plan, variant]) => ({
          kind: 'open' as const,
          a,
          plan: variant < 5 ? ('simple' as const) : plan,
          owned: variant === 9,
          preAborted: variant === 8,
          askThrows: variant === 7,
        })),
    },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('openBadArgs' as const), a: agentIndex, args: fc.constantFrom('number' as const, 'missing' as const, 'null' as const, 'noAgent' as const) }) },
    {
      weight: 6,
      arbitrary: fc.record({
        kind: fc.constant('answer' as const),
        a: agentIndex,
        // Consent often enough that approvals meet everything else.
        answer: fc.oneof(
          { weight: 4, arbitrary: fc.constantFrom('approve', 'approveBlankCustom', 'otherIdThenApprove') },
          { weight: 3, arbitrary: fc.constantFrom(...Object.keys(REVIEW_ANSWERS)) },
        ),
      }),
    },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('rejectAsk' as const), a: agentIndex, dismiss: fc.boolean() }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('abort' as const), a: agentIndex, reason: fc.constantFrom('error' as const, 'string' as const, 'plain' as const) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('lateAnswer' as const), a: agentIndex, answer: fc.constantFrom('approve', 'keep') }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('failNext' as const), a: agentIndex, how: fc.constantFrom('throw' as const, 'reject' as const) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('detach' as const), a: agentIndex }) },
    { weight: 1, arbitrary: fc.constant({ kind: 'restart' as const }) },
  ]
  if (foreign) weighted.push({ weight: 2, arbitrary: fc.record({ kind: fc.constant('foreignFlip' as const), a: agentIndex }) })
  if (!held) return fc.oneof(...weighted)
  const kept = [...weighted]
  kept.push(
    { weight: 8, arbitrary: fc.record({ kind: fc.constant('release' as const), a: agentIndex, how: fc.constantFrom('publish' as const, 'resolve' as const, 'resolve' as const, 'reject' as const) }) },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('boundary' as const), a: agentIndex }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('header' as const), a: agentIndex }) },
  )
  // A channel that throws is told so per call; with queued calls the tests cannot tell which ask it is.
  return fc
    .oneof(...kept)
    .filter((op) => op.kind !== 'restart' && op.kind !== 'step')
    .map((op) => (op.kind === 'open' ? { ...op, askThrows: false } : op))
}

/** The operations that only a channel service's review knows (a channel's ask): none in a durable run. */
const CHANNEL_ONLY: Op['kind'][] = ['answer', 'rejectAsk', 'lateAnswer']

/** A durable exit call: as `opArbitrary`'s, with a framework call id now and then (R79). */
const durableOpen = fc
  .tuple(agentIndex, fc.constantFrom(...(Object.keys(PLANS) as (keyof typeof PLANS)[])), fc.nat({ max: 9 }), fc.constantFrom(undefined, undefined, 'call-1', 'call-2'))
  .map(([a, plan, variant, callId]): Op => ({
    kind: 'open',
    a,
    plan: variant < 5 ? 'simple' : plan,
    owned: variant === 9,
    preAborted: variant === 8,
    askThrows: false,
    ...(callId === undefined ? {} : { callId }),
  }))

/** R80: an answer to a durable review, mostly to the open one, mostly well-formed. */
export const answerReviewArbitrary: fc.Arbitrary<Op> = fc.record({
  kind: fc.constant('answerReview' as const),
  a: agentIndex,
  target: fc.oneof(
    { weight: 8, arbitrary: fc.constant('open' as const) },
    { weight: 2, arbitrary: fc.constantFrom('closed' as const, 'unknown' as const) },
    { weight: 1, arbitrary: fc.constant('notString' as const) },
  ),
  answer: fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom('approve', 'keep', 'keepWithFeedback', 'approveBlankCustom') },
    { weight: 3, arbitrary: fc.constantFrom(...Object.keys(DURABLE_ANSWERS)) },
  ),
  toldInResult: fc.constantFrom(undefined, false, true, true),
}, { requiredKeys: ['kind', 'a', 'target', 'answer'] })

/**
 * The operation generator of a durable service (R78–R81): `opArbitrary`'s, without a channel's
 * asks, with exit calls that may carry a call id, `answerReview`, and (`foreign`) another
 * writer's records: `plan/mode` flips and durable review records.
 */
export function durableOpArbitrary({ foreign, held = false }: { foreign: boolean; held?: boolean }): fc.Arbitrary<Op> {
  // With held appends another writer's plan/mode may repeat a flip in flight (R3 needs conditional appends, R73).
  const base = opArbitrary({ foreign, held }).filter((op) => !CHANNEL_ONLY.includes(op.kind) && op.kind !== 'open' && !(held && op.kind === 'foreignFlip'))
  const weighted: fc.WeightedArbitrary<Op>[] = [
    { weight: 40, arbitrary: base },
    { weight: 8, arbitrary: durableOpen },
    { weight: 9, arbitrary: answerReviewArbitrary },
  ]
  if (foreign) {
    weighted.push({
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant('foreignReview' as const),
        a: agentIndex,
        record: fc.constantFrom('request' as const, 'approve' as const, 'keep' as const, 'supersede' as const, 'stray' as const),
        toldInResult: fc.boolean(),
      }),
    })
  }
  return fc.oneof(...weighted)
}

/** What an `answerReview` call of the runs asked: the review, and the record it means to make (R80). */
export interface AnswerAsked {
  reviewId: unknown
  outcome: 'approved' | 'keep-planning'
  feedback?: string
  toldInResult: boolean
}

/** Each `answerReview` call of the runs (a twin's paired call), and what it asked. */
const answerVerdicts = new WeakMap<object, AnswerAsked>()

/** What the `answerReview` call `call` (a twin's paired call) asked, if it is one `runOp` made. */
export function answerAsked(call: object): AnswerAsked | undefined {
  return answerVerdicts.get(call)
}

/** Another writer's review ids are its own: never one the service draws. */
let foreignReviews = 0

/**
 * Settles the oldest held append of `id` (`twin.releaseOldest`), but fails instead a durable
 * request that a close abandoned (R73) while the agent's current attachment records a review's
 * outcome: its landing then is a window the chart does not follow (see `foreignReview`).
 */
export function releaseHeld(twin: Twin, id: string, how: 'publish' | 'resolve' | 'reject'): boolean {
  const [oldest] = twin.log(id).held.filter((h) => !h.settled)
  const request = oldest !== undefined && !oldest.published && (oldest.data as { outcome?: unknown }).outcome === 'requested'
  if (request && process.env.PLAN_MODE_FC_FOREIGN_ANYTIME !== '1' && twin.oracle.ownRecordInFlight(id)) return twin.releaseOldest(id, 'reject')
  return twin.releaseOldest(id, how)
}

/** Runs one operation on the twin, then compares everything (twin.check). */
export async function runOp(twin: Twin, op: Op, ids: string[]): Promise<void> {
  const id = op.kind === 'restart' ? '' : ids[op.a % ids.length]!
  switch (op.kind) {
    case 'set':
      twin.set(id, op.active)
      break
    case 'command':
      await twin.command(id, op.raw, {
        ...(op.attachments ? { attachments: [{ type: 'image', url: 'file://shot.png' }] } : {}),
        canSteer: op.canSteer,
      })
      break
    case 'step':
      await twin.step(id)
      break
    case 'abortedStep':
      await twin.step(id, true)
      break
    case 'header':
      twin.hostAppend(id, 'request/header', { model: 'm' })
      break
    case 'turnStart':
      twin.hostAppend(id, 'turn/start', {})
      break
    case 'turnEnd':
      twin.hostAppend(id, 'turn/end', {})
      break
    case 'foreignFlip':
      twin.hostAppend(id, 'plan/mode', { active: !foldPlanMode(twin.log(id).events) })
      break
    case 'open':
      twin.execute(id, { plan: PLANS[op.plan] }, {
        owned: op.owned,
        ...(op.preAborted ? { preAborted: new Error('the turn was cancelled') } : {}),
        ...(op.askThrows ? { askThrows: new Error('the review UI is not mounted') } : {}),
        ...(op.callId === undefined ? {} : { callId: op.callId }),
      })
      break
    case 'answerReview': {
      const open = twin.oracle.reviewHeldOpen(id)?.reviewId
      const closed = twin.oracle.lastClosedReview(id)?.reviewId
      const reviewId =
        op.target === 'notString' ? 42 : op.target === 'unknown' ? 'no-such-review' : op.target === 'closed' ? (closed ?? 'review-0') : (open ?? closed ?? 'no-such-review')
      const answer = DURABLE_ANSWERS[op.answer]
      const call = twin.answerReview(id, reviewId as string, answer, op.toldInResult === undefined ? {} : { toldInResult: op.toldInResult })
      const verdict = readAnswer(answer as AnswerLike)
      answerVerdicts.set(call, {
        reviewId,
        outcome: verdict.approved ? 'approved' : 'keep-planning',
        ...(!verdict.approved && verdict.feedback !== undefined ? { feedback: verdict.feedback } : {}),
        toldInResult: op.toldInResult === true,
      })
      break
    }
    case 'foreignReview': {
      // While an append of the service is in flight, another writer's request lands unless our
      // closing record is in flight, and its closing record lands only while ours of the same
      // review is (two answers racing, R80). The other cases are windows the chart does not
      // follow (`PLAN_MODE_FC_FOREIGN_ANYTIME=1` lets them land: see properties.test.ts).
      if (process.env.PLAN_MODE_FC_FOREIGN_ANYTIME !== '1' && twin.oracle.isBusy(id)) {
        const racing = twin.oracle.ownRecordInFlight(id)
        if (op.record === 'request' ? racing : op.record !== 'stray' && !racing) break
      }
      if (op.record === 'request') {
        const reviewId = `other-${++foreignReviews}`
        twin.hostAppend(id, 'plan/review', { outcome: 'requested', reviewId, title: OTHER_TITLE, plan: OTHER_PLAN, ...(op.toldInResult ? { callId: 'call-9' } : {}) })
        break
      }
      const open = twin.oracle.reviewHeldOpen(id)
      const target = op.record === 'stray' ? twin.oracle.lastClosedReview(id) : open
      if (!target) break
      const outcome = op.record === 'approve' || op.record === 'stray' ? 'approved' : op.record === 'keep' ? 'keep-planning' : 'superseded'
      const record = {
        outcome,
        reviewId: target.reviewId,
        title: op.record === 'stray' ? OTHER_TITLE : open!.title,
        plan: op.record === 'stray' ? OTHER_PLAN : open!.plan,
        ...(outcome === 'keep-planning' ? { feedback: OTHER_FEEDBACK } : {}),
        ...(op.toldInResult && outcome !== 'superseded' ? { toldInResult: true } : {}),
      }
      // R80: even one identical to an answer of this service still on its way (it resolves as the first did).
      twin.hostAppend(id, 'plan/review', record)
      break
    }
    case 'openBadArgs':
      if (op.args === 'noAgent') twin.execute(undefined, { plan: PLANS.simple })
      else twin.execute(id, op.args === 'number' ? { plan: 42 } : op.args === 'missing' ? {} : null)
      break
    case 'answer': {
      const index = twin.openAskIndex(id)
      if (index !== undefined) twin.answer(index, REVIEW_ANSWERS[op.answer] as ReviewAnswer)
      break
    }
    case 'rejectAsk': {
      const index = twin.openAskIndex(id)
      if (index === undefined) break
      twin.rejectAsk(index, op.dismiss ? Object.assign(new Error('dismissed'), { code: 'ASK_CANCELLED' }) : new Error('the review UI crashed'))
      break
    }
    case 'abort': {
      const call = [...twin.calls].reverse().find(
        (c) => c.oracle.kind === 'review' && c.oracle.agentId === id && c.oracle.state.status === 'pending' && !c.controller!.signal.aborted,
      )
      if (call) twin.abort(call, op.reason === 'error' ? new Error('stopped by the host') : op.reason === 'string' ? 'user left' : 'plain')
      break
    }
    case 'lateAnswer': {
      const index = twin.oracle.asks.findIndex((ask, i) => ask.agentId === id && ask.stale && !twin.channel.asks[i]!.answered)
      if (index >= 0) twin.answer(index, REVIEW_ANSWERS[op.answer] as ReviewAnswer)
      break
    }
    case 'failNext':
      twin.failNextAppend(id, op.how)
      break
    case 'detach':
      twin.detach(id)
      break
    case 'restart':
      await twin.restart()
      break
    case 'release':
      releaseHeld(twin, id, op.how)
      break
    case 'boundary':
      twin.boundary(id)
      break
  }
  await settle()
  twin.check()
}

/**
 * What a fresh service over a copy of `events` reads: `get().active`, and K, observed through
 * notices (R31, R32): a copy with `plan/mode {!F}` appended narrates iff K = F, one with
 * `plan/mode {F}` narrates iff K = !F (a `plan/mode` clears any kept selection, R58), neither
 * when K is undefined.
 */
export async function reattachProbe(events: readonly SessionEvent[]): Promise<{ active: boolean; told: boolean | undefined }> {
  const F = foldPlanMode(events)
  const copy = events.map(({ type, data }) => ({ type, data }))
  const run = async (extra: { type: string; data: unknown }[]) => {
    const planMode = createPlanMode({ section: SECTION, logger: { warn: () => {} } })
    const agent = { id: 'probe', session: createMemorySessionLog([...copy, ...extra]) }
    const active = planMode.get(agent).active
    const { messages } = await planMode.stepBoundary(agent)
    await planMode.dispose()
    return { active, narrates: messages.length > 0 }
  }
  const plain = await run([])
  const flipped = await run([{ type: 'plan/mode', data: { active: !F } }])
  const same = await run([{ type: 'plan/mode', data: { active: F } }])
  if (flipped.narrates && same.narrates) throw new Error('R32: both probes narrated')
  return { active: plain.active, told: flipped.narrates ? F : same.narrates ? !F : undefined }
}

// ----- attach, from the whole log or from a checkpoint and its tail (R64, R76, R79, R81) -----------

/** The agent `observeAttach` attaches. */
const PROBE = 'probe'

/**
 * The checkpoint the probe agent's service would save after the first `k` events of `events`
 * (R76), or null where it makes none (a handoff due, a review open since before the episode).
 */
export function checkpointAt(events: readonly SessionEvent[], k: number): PlanCheckpoint | null {
  return createCheckpoint(PROBE, replayPlanLog(events.slice(0, k)), events.slice(0, k))
}

/** What a fresh durable service attached to a log shows, read through its public calls. */
export interface AttachView {
  get: PlanModeState
  section: string
  openReview: OpenReviewExpectation | null
  /** Its first step boundary: the section, and the texts of its messages (R34's shape checked). */
  boundary: { section: string; texts: string[] }
  /** A selection of the other state than E, made instead of the boundary (on another fresh service): it reads the open turn (R9, R10). */
  select: { outcome: string; get: PlanModeState }
  warnings: unknown[][]
}

/**
 * A fresh durable service over `session()` (called once per service): what it shows (`AttachView`).
 * Nothing is appended to the caller's log: each `session()` is a new log.
 */
export async function observeAttach(session: () => SessionLog): Promise<AttachView> {
  const warnings: unknown[][] = []
  const options = { section: SECTION, review: 'durable' as const, logger: { warn: (...args: unknown[]) => warnings.push(args) } }
  const first = createPlanMode(options)
  const agent = { id: PROBE, session: session() }
  const get = first.get(agent)
  const view = { get, section: first.section(agent), openReview: first.openReview(agent) }
  const { section, messages } = await first.stepBoundary(agent)
  await first.dispose()
  const second = createPlanMode(options)
  const other = { id: PROBE, session: session() }
  const outcome = await second.set(other, !(get.pending ?? get.active))
  const select = { outcome, get: second.get(other) }
  await second.dispose()
  return { ...view, boundary: { section, texts: messages.map(noticeText) }, select, warnings }
}

/**
 * What a fresh durable service attached to `log` must show, from the oracle's folds alone: F and
 * P (R64), the section under E (R21), the open review (R79), its first boundary (R16's flush, then
 * R81's untold outcome and R32's notice against K, R31), and a selection of !E (R9, R10; an open
 * review is superseded first, R80, which changes neither).
 */
export function expectedAttach(log: readonly LogEntry[]): AttachView {
  const F = foldF(log)
  const P = foldP(log)
  const K = foldK(log)
  const reviews = foldReviews(log)
  const E = P ?? F
  const get: PlanModeState = P === undefined ? { active: F } : { active: F, pending: P }
  const news = reviews.news?.outcome === 'approved' && E ? null : reviews.news
  const texts = news ? [newsMessage(news)] : []
  if (K !== undefined && K !== E && news?.outcome !== 'approved') texts.push(E ? TEXT.entering : TEXT.leaving)
  const x = !E
  const select =
    x === F
      ? { outcome: 'cancelled', get: { active: F } }
      : foldOpenTurn(log)
        ? { outcome: 'queued', get: { active: F, pending: x } }
        : { outcome: 'committed', get: { active: x } }
  return {
    get,
    section: E ? SECTION : '',
    // R138: openReview shows the plan's version in its episode, and the request's seq beside it.
    openReview: reviews.open === null ? null : { ...reviews.open, version: presentedVersionIn(log, reviews.open.version), seq: reviews.open.version },
    boundary: { section: E ? SECTION : '', texts },
    select,
    warnings: [],
  }
}

/**
 * R76, R64, R79: a fresh durable service attached to the whole log (plus `extra` events) and one
 * attached to the checkpoint after the first `k` events plus the tail (plus `extra`) show the
 * same, and that is what the oracle's folds say; the checkpoint's replay of the tail is the full
 * replay (projection, open turn, K, the durable reviews), and that agrees with the oracle's folds
 * and with the projection folded event by event (R58). `k` = 0: no checkpoint (a null one).
 */
export async function checkAttach(events: readonly SessionEvent[], k: number, extra: LogEntry[] = [], where = ''): Promise<void> {
  const log = [...events.map(({ type, data }) => ({ type, data })), ...extra]
  const full = createMemorySessionLog(log)
  const fold = replayPlanLog(full.events)
  const checkpoint = k === 0 ? null : checkpointAt(full.events, k)
  const expected = expectedAttach(log)
  const problem = (what: string, actual: unknown, wanted: unknown) =>
    new Error(`${what} (checkpoint after ${k} of ${log.length} events)\n  actual:   ${JSON.stringify(actual)}\n  expected: ${JSON.stringify(wanted)}\nlog:\n  ${log.map((e) => `${e.type} ${JSON.stringify(e.data)}`).join('\n  ')}${where}`)
  const same = (what: string, actual: unknown, wanted: unknown) => {
    if (!isDeepStrictEqual(actual, wanted)) throw problem(what, actual, wanted)
  }
  // The fold, against the oracle's (R2, R5, R31, R58, R79, R81) and the projection's own fold (R58).
  same('R2, R58: the replay\'s F', fold.projection.active, foldF(log))
  same('R58, R64: the replay\'s kept selection', fold.projection.kept, foldKept(log))
  same('R5: the replay\'s open turn', fold.openTurn, foldOpenTurn(log))
  same('R31: the replay\'s K', fold.told, foldK(log) ?? null)
  same('R79, R81: the replay\'s durable reviews', fold.review, foldReviews(log))
  // A lost answer's approval or leave (R80) changes the projection no more than attach (R58).
  same('R58: the replay\'s projection is the projection folded event by event', fold.projection, full.events.reduce(planProjection.apply, planProjection.init()))
  if (checkpoint !== null) {
    // The loader's events: the checkpoint's own, then those after it.
    const tail = () => createMemorySessionLog(log.slice(k - 1), { checkpoint, agentId: PROBE })
    const restored = replayFromCheckpoint(tail().events, checkpoint)
    same('R76: the checkpoint and the tail replay as the whole log', restored, fold)
    same('R76, R64, R79, R81: a fresh service on the checkpoint and the tail', await observeAttach(tail), expected)
  }
  same('R64, R79, R81: a fresh service on the whole log', await observeAttach(() => createMemorySessionLog(log)), expected)
}
