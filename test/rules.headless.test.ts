/**
 * Headless review policies (R94, R95): a review decided by nobody is decided by a fixed policy,
 * `'stop'` or `'approve'`, and its record says so (`by: 'policy'`), on a channel service and on a
 * durable one. Every text below is copied from docs/spec.md.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { formatReport, inspectEvents } from '../apps/cli/inspect.js'
import { styles } from '../apps/cli/io.js'
import { createLogReader } from '../apps/shared/visualizer/log-reading.js'
import { createMemorySessionLog, createPlanMode, describePlanLogEvent, headlessReview, replayPlanLog, type PlanAgent, type PlanMode, type ReviewAnswer, type ReviewChannel, type ReviewRequest, type SessionLog, type StepBoundaryResult } from '../src/index.js'
import { HEADLESS_STOP_MESSAGE } from '../src/plan/headless.js'
import { APPROVE, PLAN, SECTION, createHarness, flush, holdingLog } from './helpers.js'

const DISMISSED = 'The user dismissed the plan review to speak instead; stay in plan mode, stop here, and wait for their message.'
const STOP_MESSAGE = "the headless review policy 'stop' dismissed the plan review"
const APPROVED_NEWS = 'The user approved your plan and plan mode is off; carry out the plan, starting now.'
const DISPOSED = 'plan-mode service is disposed'
const badPolicy = (shown: string) => `headless review policy must be 'stop' or 'approve'; got ${shown}`
const alreadyClosed = (reviewId: string, outcome: string) => `plan review ${reviewId} is already closed (${outcome}); nothing was changed`

const TITLE = 'Migrate the database'
const PLAN_JSON = JSON.stringify(PLAN)
/** The exact log lines of a channel review's records. */
const channelRecord = (outcome: string, by: boolean) =>
  `plan/review {"outcome":"${outcome}","title":"${TITLE}","plan":${PLAN_JSON}${by ? ',"by":"policy"' : ''}}`
/** The exact log lines of a durable review's records. */
const durableRecord = (outcome: string, reviewId: string, extra = '') =>
  `plan/review {"outcome":"${outcome}","reviewId":"${reviewId}","title":"${TITLE}","plan":${PLAN_JSON}${extra}}`

const settle = <T>(promise: Promise<T>) =>
  promise.then(
    (value) => ({ value }),
    (error: Error) => ({ error: error.message }),
  )

const texts = (result: StepBoundaryResult) => result.messages.map((m) => (m.content[0] as { text: string }).text)

/** Every service a test made: disposed after it. */
const services: PlanMode[] = []
afterEach(async () => {
  await Promise.all(services.splice(0).map((service) => service.dispose()))
})

/** A channel service (the harness) in plan mode, a turn open and a step run, reviewing through `review` (the scripted review when undefined). */
async function channelPlanning(review: ReviewChannel | undefined) {
  const h = createHarness({ review })
  services.push(h.planMode)
  expect(await h.planMode.set(h.agent, true)).toBe('committed')
  h.startTurn()
  await h.step()
  return h
}

/** A durable service over `log`, with a recording logger. */
function durableService(warnings: unknown[][] = []): PlanMode {
  const planMode = createPlanMode({ section: SECTION, review: 'durable', logger: { warn: (...args: unknown[]) => warnings.push(args) } })
  services.push(planMode)
  return planMode
}

/** A durable service in plan mode with a durable review of PLAN open; `lines` are the log's events as `type data`. */
async function durablePlanning(log: SessionLog = createMemorySessionLog()) {
  const warnings: unknown[][] = []
  const planMode = durableService(warnings)
  const agent: PlanAgent = { id: 'agent-1', session: log }
  expect(await planMode.set(agent, true)).toBe('committed')
  await log.append('turn/start', {})
  await planMode.stepBoundary(agent)
  await log.append('request/header', {})
  const submitted = (await planMode.exitTool.execute({ plan: PLAN }, { agent })) as { submitted: true; reviewId: string }
  expect(submitted.submitted).toBe(true)
  await log.append('turn/end', {})
  const lines = () => log.events.map((e) => `${e.type} ${JSON.stringify(e.data)}`)
  return { planMode, agent, log, warnings, reviewId: submitted.reviewId, lines }
}


const request = (): ReviewRequest => ({
  questions: [
    {
      id: 'plan-review',
      header: 'Plan review',
      question: 'Approve this plan and leave plan mode?',
      detail: PLAN,
      options: [],
      intent: { kind: 'plan-review', approve: 'Approve' },
    },
  ],
  agent: { id: 'agent-1', session: createMemorySessionLog() },
  signal: new AbortController().signal,
})

describe('R94: headlessReview, a ready review channel for runs with nobody to ask', () => {
  it("R94: policy 'stop': ask rejects with the exact dismissal error; the call fails with R46's text, recorded dismissed by: 'policy', and the run stays in plan mode", async () => {
    const channel = headlessReview({ policy: 'stop' })
    const error = (await channel.ask(request()).then(
      () => undefined,
      (e: unknown) => e,
    )) as Error & { code?: unknown; by?: unknown }
    expect(error).toBeInstanceOf(Error)
    expect(error.message).toBe(STOP_MESSAGE)
    expect(HEADLESS_STOP_MESSAGE).toBe(STOP_MESSAGE)
    expect(error.code).toBe('ASK_CANCELLED')
    expect(error.by).toBe('policy')

    const h = await channelPlanning(channel)
    expect(await settle(h.planMode.exitTool.execute({ plan: PLAN }, { agent: h.agent }))).toEqual({ error: DISMISSED })
    expect(h.lines()).toEqual([
      'plan/mode {"active":true}',
      'turn/start {}',
      'request/header {}',
      channelRecord('dismissed', true),
    ])
    // The run ends in plan mode, the plan in the log: nothing pending, nothing to flush or tell.
    expect(h.planMode.get(h.agent)).toEqual({ active: true })
    expect(await h.step()).toEqual({ section: SECTION, notices: [] })
    h.endTurn()
    expect(h.lines().filter((l) => l.startsWith('plan/'))).toEqual(['plan/mode {"active":true}', channelRecord('dismissed', true)])
    expect(replayPlanLog(h.log.events).projection).toMatchObject({ active: true, kept: null })
    expect(h.warnings).toEqual([])
  })

  it("R94: policy 'approve': the call is approved as a user's consent is (R47), recorded approved by: 'policy'", async () => {
    const channel = headlessReview({ policy: 'approve' })
    expect(await channel.ask(request())).toStrictEqual({ answers: [{ id: 'plan-review', selected: ['Approve'] }], by: 'policy' })

    const h = await channelPlanning(channel)
    expect(await h.planMode.exitTool.execute({ plan: PLAN }, { agent: h.agent })).toEqual({ approved: true })
    expect(h.lines()).toEqual([
      'plan/mode {"active":true}',
      'turn/start {}',
      'request/header {}',
      channelRecord('approved', true),
    ])
    // R47: the leave waits for the next boundary, which tells nothing (K is inactive already).
    expect(h.planMode.get(h.agent)).toEqual({ active: true, pending: false })
    expect(h.planMode.section(h.agent)).toBe('')
    expect(await h.step()).toEqual({ section: '', notices: [] })
    expect(h.lines().slice(4)).toEqual(['plan/mode {"active":false}', 'request/header {}'])
    expect(h.warnings).toEqual([])
  })

  it("R94: a user's Approve is recorded without `by`, byte for byte as before; only the policy's carries by: 'policy'", async () => {
    const user = await channelPlanning(undefined)
    const call = user.planMode.exitTool.execute({ plan: PLAN }, { agent: user.agent })
    await user.review.untilAsked(1)
    user.review.answer(APPROVE)
    expect(await call).toEqual({ approved: true })
    const policy = await channelPlanning(headlessReview({ policy: 'approve' }))
    expect(await policy.planMode.exitTool.execute({ plan: PLAN }, { agent: policy.agent })).toEqual({ approved: true })

    const userRecord = user.log.events.find((e) => e.type === 'plan/review')!
    const policyRecord = policy.log.events.find((e) => e.type === 'plan/review')!
    expect(JSON.stringify(userRecord.data)).toBe(`{"outcome":"approved","title":"${TITLE}","plan":${PLAN_JSON}}`)
    expect(Object.hasOwn(userRecord.data as object, 'by')).toBe(false)
    expect(JSON.stringify(policyRecord.data)).toBe(`{"outcome":"approved","title":"${TITLE}","plan":${PLAN_JSON},"by":"policy"}`)
    // Apart from `by`, the two approvals fold alike (R31, R58, R64).
    const { approved: policyApproved, ...policyFold } = replayPlanLog(policy.log.events)
    const { approved: userApproved, ...userFold } = replayPlanLog(user.log.events)
    expect(policyFold).toEqual(userFold)
    expect(policyApproved).toEqual({ ...userApproved, by: 'policy' }) // R98: the approved plan says who approved it
  })

  it("R94: provenance travels from any channel: an answer or a dismissal with by: 'policy' is recorded with it; any other `by` is not read", async () => {
    const answers: (ReviewAnswer | Error)[] = [
      { answers: [{ id: 'plan-review', selected: ['Keep planning'], custom: 'Add a rollback.' }], by: 'policy' },
      { answers: [{ id: 'plan-review', selected: ['Approve'] }], by: 'user' as 'policy' },
      Object.assign(new Error('gone'), { code: 'ASK_CANCELLED' }),
    ]
    const h = await channelPlanning({
      ask: () => {
        const next = answers.shift()!
        return next instanceof Error ? Promise.reject(next) : Promise.resolve(next)
      },
    })
    expect(await settle(h.planMode.exitTool.execute({ plan: PLAN }, { agent: h.agent }))).toEqual({
      error: 'The user chose to keep planning; their feedback: Add a rollback.',
    })
    expect(await h.planMode.exitTool.execute({ plan: PLAN }, { agent: h.agent })).toEqual({ approved: true })
    await h.step()
    await h.planMode.set(h.agent, true)
    await h.step()
    expect(await settle(h.planMode.exitTool.execute({ plan: PLAN }, { agent: h.agent }))).toEqual({ error: DISMISSED })
    expect(h.lines().filter((l) => l.startsWith('plan/review'))).toEqual([
      `plan/review {"outcome":"keep-planning","title":"${TITLE}","plan":${PLAN_JSON},"feedback":"Add a rollback.","by":"policy"}`,
      channelRecord('approved', false),
      channelRecord('dismissed', false),
    ])
  })

  it("R94: any policy but 'stop' or 'approve' throws the exact TypeError", () => {
    const make = (options: unknown) => () => headlessReview(options as Parameters<typeof headlessReview>[0])
    expect(make({})).toThrow(new TypeError(badPolicy('undefined')))
    expect(make(undefined)).toThrow(new TypeError(badPolicy('undefined')))
    expect(make({ policy: 'Stop' })).toThrow(new TypeError(badPolicy('Stop')))
    expect(make({ policy: 'ask' })).toThrow(new TypeError(badPolicy('ask')))
    expect(make({ policy: true })).toThrow(new TypeError(badPolicy('true')))
    expect(make({ policy: null })).toThrow(new TypeError(badPolicy('null')))
    expect(make({ policy: ['stop'] })).toThrow(new TypeError(badPolicy('stop')))
    expect(make({ policy: { policy: 'stop' } })).toThrow(new TypeError(badPolicy('[object Object]')))
    expect(make({ policy: Object.create(null) })).toThrow(new TypeError(badPolicy('[object Object]')))
    expect(make({ policy: Symbol('stop') })).toThrow(new TypeError(badPolicy('Symbol(stop)')))
    let thrown: unknown
    try {
      headlessReview({ policy: 'maybe' as 'stop' })
    } catch (error) {
      thrown = error
    }
    expect(thrown).toBeInstanceOf(TypeError)
    expect((thrown as TypeError).message).toBe("headless review policy must be 'stop' or 'approve'; got maybe")
  })

  it("R94: the timeline line, the visualizer's story and plan-mode inspect show a policy's decision as `(by policy)`; a user's as before", async () => {
    const user = await channelPlanning(undefined)
    const call = user.planMode.exitTool.execute({ plan: PLAN }, { agent: user.agent })
    await user.review.untilAsked(1)
    user.review.answer(APPROVE)
    await call
    const stop = await channelPlanning(headlessReview({ policy: 'stop' }))
    await settle(stop.planMode.exitTool.execute({ plan: PLAN }, { agent: stop.agent }))
    const approve = await channelPlanning(headlessReview({ policy: 'approve' }))
    await approve.planMode.exitTool.execute({ plan: PLAN }, { agent: approve.agent })

    const record = (h: { log: SessionLog }) => h.log.events.find((e) => e.type === 'plan/review')!
    expect(describePlanLogEvent(record(user))).toEqual({ tone: 'review', label: 'plan/review approved', detail: `approved "${TITLE}"` })
    expect(describePlanLogEvent(record(approve))).toEqual({
      tone: 'review',
      label: 'plan/review approved (by policy)',
      detail: `approved (by policy) "${TITLE}"`,
    })
    expect(describePlanLogEvent(record(stop))).toEqual({
      tone: 'review',
      label: 'plan/review dismissed (by policy)',
      detail: `dismissed (by policy) "${TITLE}"`,
    })

    // The visualizer's story of the session says the same.
    const reader = createLogReader()
    expect([user, approve, stop].map((h, i) => reader.read(`agent-${i}`, record(h)).story?.label)).toEqual([
      'Review answered: approved',
      'Review answered: approved (by policy)',
      'Review dismissed (by policy)',
    ])

    // One log holding all three, as `plan-mode inspect` shows it.
    const log = createMemorySessionLog([
      { type: 'plan/mode', data: { active: true } },
      { type: 'plan/review', data: record(stop).data },
      { type: 'plan/review', data: record(user).data },
      { type: 'plan/review', data: record(approve).data },
    ])
    const report = inspectEvents('session.jsonl', log.events)
    expect(report.reviews).toEqual([
      { seq: 2, version: 1, title: TITLE, outcome: 'dismissed', by: 'policy' },
      { seq: 3, version: 2, title: TITLE, outcome: 'approved', changes: [] },
      { seq: 4, version: 3, title: TITLE, outcome: 'approved', by: 'policy', changes: [] },
    ])
    const lines = formatReport(report, styles(false)).split('\n')
    expect(lines.slice(1, 5)).toEqual([
      '  1  plan/mode    on            -    active: true',
      `  2  plan/review  on            -    dismissed (by policy) "${TITLE}"`,
      `  3  plan/review  on   yes      off  approved "${TITLE}"`,
      `  4  plan/review  on   yes      off  approved (by policy) "${TITLE}"`,
    ])
    const history = lines.indexOf('Plan reviews:')
    expect(lines.slice(history, history + 7)).toEqual([
      'Plan reviews:',
      `  v1 #2 "${TITLE}": dismissed (by policy)`,
      `  v2 #3 "${TITLE}": approved`,
      '      (no change from v1)',
      `  v3 #4 "${TITLE}": approved (by policy)`,
      '      (no change from v2)',
      '',
    ])
  })
})

describe('R95: answerReviewByPolicy, the same policies for durable reviews', () => {
  it("R95: policy 'approve' closes the open durable review approved by: 'policy'; the next boundary tells the approval", async () => {
    const d = await durablePlanning()
    const { reviewId } = d
    expect(await d.planMode.answerReviewByPolicy(d.agent, 'approve')).toEqual({ reviewId, outcome: 'approved' })
    expect(d.lines()).toEqual([
      'plan/mode {"active":true}',
      'turn/start {}',
      'request/header {}',
      durableRecord('requested', reviewId),
      'turn/end {}',
      durableRecord('approved', reviewId, ',"by":"policy"'),
    ])
    expect(d.planMode.openReview(d.agent)).toBeNull()
    expect(d.planMode.get(d.agent)).toEqual({ active: true, pending: false })
    await d.log.append('turn/start', {})
    const boundary = await d.planMode.stepBoundary(d.agent)
    expect(boundary.section).toBe('')
    expect(texts(boundary)).toEqual([APPROVED_NEWS])
    expect(d.lines().at(-1)).toBe('plan/mode {"active":false}')
    // The approval is R80's: a second answer is refused naming it.
    await expect(d.planMode.answerReview(d.agent, reviewId, APPROVE)).rejects.toThrow(new Error(alreadyClosed(reviewId, 'approved')))
    expect(d.warnings).toEqual([])
  })

  it("R95: policy 'approve' with toldInResult: true records it before `by` and tells nothing at the boundary", async () => {
    const d = await durablePlanning()
    expect(await d.planMode.answerReviewByPolicy(d.agent, 'approve', { toldInResult: true })).toEqual({ reviewId: d.reviewId, outcome: 'approved' })
    expect(d.lines().at(-1)).toBe(durableRecord('approved', d.reviewId, ',"toldInResult":true,"by":"policy"'))
    await d.log.append('turn/start', {})
    expect(texts(await d.planMode.stepBoundary(d.agent))).toEqual([])
  })

  it("R95: policy 'stop' closes the open durable review dismissed by: 'policy'; the run stays in plan mode with the plan in the log", async () => {
    const d = await durablePlanning()
    const { reviewId } = d
    expect(await d.planMode.answerReviewByPolicy(d.agent, 'stop')).toEqual({ reviewId, outcome: 'dismissed' })
    expect(d.lines()).toEqual([
      'plan/mode {"active":true}',
      'turn/start {}',
      'request/header {}',
      durableRecord('requested', reviewId),
      'turn/end {}',
      durableRecord('dismissed', reviewId, ',"by":"policy"'),
    ])
    expect(d.planMode.openReview(d.agent)).toBeNull()
    expect(d.planMode.get(d.agent)).toEqual({ active: true })
    // No boundary tells a dismissal (R81); plan mode stays in force.
    await d.log.append('turn/start', {})
    const boundary = await d.planMode.stepBoundary(d.agent)
    expect(boundary).toEqual({ section: SECTION, messages: [] })
    await expect(d.planMode.answerReview(d.agent, reviewId, APPROVE)).rejects.toThrow(new Error(alreadyClosed(reviewId, 'dismissed')))
    // Another process attached to the log sees the same.
    const other = durableService()
    expect(other.openReview({ id: 'agent-1', session: d.log })).toBeNull()
    expect(other.get({ id: 'agent-1', session: d.log })).toEqual({ active: true })
    expect(d.warnings).toEqual([])
  })

  it("R95: a user's answerReview is recorded without `by`; an answer carrying by: 'policy' is recorded with it", async () => {
    const user = await durablePlanning()
    expect(await user.planMode.answerReview(user.agent, user.reviewId, APPROVE)).toBe('approved')
    expect(user.lines().at(-1)).toBe(durableRecord('approved', user.reviewId))
    const policy = await durablePlanning()
    expect(await policy.planMode.answerReview(policy.agent, policy.reviewId, { ...APPROVE, by: 'policy' })).toBe('approved')
    expect(policy.lines().at(-1)).toBe(durableRecord('approved', policy.reviewId, ',"by":"policy"'))
  })

  it('R95: with no durable review open it resolves null and changes nothing; a bad policy rejects with the TypeError, before the disposed check', async () => {
    const log = createMemorySessionLog()
    const planMode = durableService()
    const agent: PlanAgent = { id: 'agent-1', session: log }
    expect(await planMode.answerReviewByPolicy(agent, 'approve')).toBeNull()
    expect(await planMode.set(agent, true)).toBe('committed')
    expect(await planMode.answerReviewByPolicy(agent, 'stop')).toBeNull()
    expect(log.events.map((e) => e.type)).toEqual(['plan/mode'])
    const bad = (policy: unknown) => planMode.answerReviewByPolicy(agent, policy as 'stop')
    await expect(bad('Approve')).rejects.toThrow(new TypeError(badPolicy('Approve')))
    await expect(bad(undefined)).rejects.toThrow(new TypeError(badPolicy('undefined')))
    await expect(bad(1)).rejects.toThrow(new TypeError(badPolicy('1')))
    await expect(bad('keep-planning')).rejects.toBeInstanceOf(TypeError)
    await planMode.dispose()
    await expect(bad('nope')).rejects.toThrow(new TypeError(badPolicy('nope')))
    await expect(planMode.answerReviewByPolicy(agent, 'stop')).rejects.toThrow(new Error(DISPOSED))
  })

  it("R95: by is part of an outcome: a user's approval that lands after a policy's approval lost, and every service holds the policy's record", async () => {
    const shared = createMemorySessionLog()
    const slow = holdingLog(shared)
    const userSide = durableService()
    const policySide = durableService()
    const userAgent: PlanAgent = { id: 'agent-1', session: slow }
    const policyAgent: PlanAgent = { id: 'agent-1', session: shared }
    await userSide.set(userAgent, true)
    await shared.append('turn/start', {})
    const { reviewId } = (await userSide.exitTool.execute({ plan: PLAN }, { agent: userAgent })) as { reviewId: string }
    expect(policySide.openReview(policyAgent)?.reviewId).toBe(reviewId)

    slow.hold()
    const losing = settle(userSide.answerReview(userAgent, reviewId, APPROVE))
    await flush()
    expect(slow.held).toBe(1) // the user's record is on its way
    expect(await policySide.answerReviewByPolicy(policyAgent, 'approve')).toEqual({ reviewId, outcome: 'approved' })
    slow.release()
    expect(await losing).toEqual({ error: alreadyClosed(reviewId, 'approved') })
    expect(shared.events.filter((e) => e.type === 'plan/review').map((e) => JSON.stringify(e.data))).toEqual([
      `{"outcome":"requested","reviewId":"${reviewId}","title":"${TITLE}","plan":${PLAN_JSON}}`,
      `{"outcome":"approved","reviewId":"${reviewId}","title":"${TITLE}","plan":${PLAN_JSON},"by":"policy"}`,
      `{"outcome":"approved","reviewId":"${reviewId}","title":"${TITLE}","plan":${PLAN_JSON}}`,
    ])
    for (const [service, agent] of [
      [userSide, userAgent],
      [policySide, policyAgent],
    ] as const) {
      expect(service.openReview(agent)).toBeNull()
      expect(service.get(agent)).toEqual({ active: true, pending: false })
    }
  })
})
