import { describe, expect, expectTypeOf, it } from 'vitest'
import { PLAN_MODE_TEXTS, createMemoryCheckpointStore, createMemorySessionLog, createPlanMode, describePlanLogEvent, planHistory, type PlanAgent, type ReviewAnswer } from '../src/index.js'
import { PLAN, SECTION, disposeAfterTest, presented } from './presented-review.js'

/**
 * What hosts on other frameworks needed and guessed (issue #26): each test names the rule it pins.
 */
const MALFORMED =
  "answerReview needs a reviewId string and an answer { answers: [{ id: string, selected: string[], custom?: string, comments?: [{ quote, text }] }] }; nothing was changed"

describe('answerReview typed with ReviewAnswer', () => {
  it('R80: answerReview takes a ReviewAnswer (tsc refuses another shape) and still refuses a malformed answer at run time', async () => {
    const { planMode, agent, reviewId } = await presented()
    expectTypeOf(planMode.answerReview).parameter(2).toEqualTypeOf<ReviewAnswer>()
    // @ts-expect-error `answers` must be an array of items: tsc says so before the call runs
    const typeError = () => planMode.answerReview(agent, reviewId, { answers: 'Approve' })
    await expect(typeError()).rejects.toThrow(new Error(MALFORMED))
    // From a client the answer is untrusted: cast or not, it is checked when the call runs.
    const fromClient: unknown = JSON.parse('{"answers":[{"id":"plan-review","selected":"Approve"}]}')
    await expect(planMode.answerReview(agent, reviewId, fromClient as ReviewAnswer)).rejects.toThrow(new Error(MALFORMED))
    expect(planMode.openReview(agent)).toMatchObject({ reviewId })
    expect(await planMode.answerReview(agent, reviewId, { answers: [{ id: 'plan-review', selected: ['Approve'] }] })).toBe('approved')
  })
})

describe('a user’s dismissal of a durable review', () => {
  const DISMISSED = 'The user dismissed the plan review to speak instead; stay in plan mode, stop here, and wait for their message.'
  const TITLE = 'Migrate the users table'

  it('R136: dismissReview records the user’s dismissal (no by), plan mode stays, no boundary tells it, and the history reads it as the user’s', async () => {
    const { session, planMode, agent, reviewId } = await presented()
    expect(await planMode.dismissReview(agent, reviewId)).toBe('dismissed')
    const record = session.events.at(-1)!
    expect({ type: record.type, data: record.data }).toEqual({ type: 'plan/review', data: { outcome: 'dismissed', reviewId, title: TITLE, plan: PLAN } })
    expect(planMode.openReview(agent)).toBeNull()
    expect(planMode.get(agent)).toEqual({ active: true })
    expect((await planMode.stepBoundary(agent)).messages).toEqual([])
    const [entry] = planHistory(session.events)
    expect(entry).toMatchObject({ outcome: 'dismissed', reviewId })
    expect(entry!.by).toBeUndefined()
    // A policy's stop is told apart: its record and its history entry carry by: 'policy' (R95).
    const policy = await presented()
    expect(await policy.planMode.answerReviewByPolicy(policy.agent, 'stop')).toEqual({ reviewId: policy.reviewId, outcome: 'dismissed' })
    expect(planHistory(policy.session.events)[0]).toMatchObject({ outcome: 'dismissed', by: 'policy' })
    expect(describePlanLogEvent(record)).not.toEqual(describePlanLogEvent(policy.session.events.at(-1)!))
  })

  it('R136, R135: told in the result, the record carries toldInResult and the waiting call gets R46’s text', async () => {
    const { session, planMode, agent, reviewId } = await presented()
    expect(await planMode.dismissReview(agent, reviewId, { toldInResult: true })).toBe('dismissed')
    expect(session.events.at(-1)!.data).toEqual({ outcome: 'dismissed', reviewId, title: TITLE, plan: PLAN, toldInResult: true })
    const entry = planHistory(session.events).find((plan) => plan.reviewId === reviewId)!
    expect(PLAN_MODE_TEXTS.review.toldInResult(entry)).toEqual({ outcome: 'dismissed', isError: true, text: DISMISSED })
    expect(planMode.callReviews.settled(agent).resultOf('call-1', { plan: PLAN })).toEqual({ errorText: DISMISSED })
  })

  it('R136, R80: a review is dismissed once; a second dismissal, an answer after it, an unknown id and a reviewId that is not a string are refused', async () => {
    const { session, planMode, agent, reviewId } = await presented()
    await planMode.dismissReview(agent, reviewId)
    const length = session.events.length
    await expect(planMode.dismissReview(agent, reviewId)).rejects.toThrow(`plan review ${reviewId} is already closed (dismissed); nothing was changed`)
    await expect(planMode.answerReview(agent, reviewId, { answers: [{ id: 'plan-review', selected: ['Approve'] }] })).rejects.toThrow(
      `plan review ${reviewId} is already closed (dismissed); nothing was changed`,
    )
    await expect(planMode.dismissReview(agent, 'no-such-review')).rejects.toThrow('no plan review no-such-review is open for this agent; nothing was changed')
    await expect(planMode.dismissReview(agent, 7 as unknown as string)).rejects.toThrow('dismissReview needs a reviewId string; nothing was changed')
    expect(session.events.length).toBe(length)
  })

  it('R136, R60: after dispose dismissReview rejects with the disposed message', async () => {
    const { planMode, agent, reviewId } = await presented()
    await planMode.dispose()
    await expect(planMode.dismissReview(agent, reviewId)).rejects.toThrow('plan-mode service is disposed')
  })
})

describe('one meaning of version', () => {
  const KEEP = { answers: [{ id: 'plan-review', selected: ['Keep planning'], custom: 'Split step 2.' }] }
  const V2 = '# Migrate the users table\n\n1. Add the column.\n2. Backfill in batches.'

  it('R138: openReview’s version is the plan’s version as planHistory numbers it; seq is its request’s log position, from a whole log and from a checkpoint’s tail', async () => {
    const store = createMemoryCheckpointStore()
    const session = createMemorySessionLog([{ type: 'plan/mode', data: { active: true } }])
    const first = createPlanMode({ section: SECTION, review: 'durable', checkpoints: { store, every: 1 }, logger: { warn: () => {} } })
    disposeAfterTest(first)
    const agent: PlanAgent = { id: 'agent-1', session }
    const { reviewId: v1 } = (await first.exitTool.execute({ plan: PLAN }, { agent, callId: 'call-1' })) as { reviewId: string }
    expect(first.openReview(agent)).toEqual({ reviewId: v1, title: 'Migrate the users table', plan: PLAN, version: 1, seq: 2, callId: 'call-1' })
    await first.answerReview(agent, v1, KEEP)
    session.append('turn/end', {})
    await first.dispose() // the checkpoint lands, inside the episode: v1 presented and kept planning
    const checkpoint = (await store.load('agent-1')) as { seq: number }
    // Another process loads the checkpoint and the events from it, and the model presents v2.
    const tail = createMemorySessionLog(session.events.slice(checkpoint.seq - 1).map(({ type, data }) => ({ type, data })), { checkpoint, agentId: 'agent-1' })
    const second = createPlanMode({ section: SECTION, review: 'durable', logger: { warn: () => {} } })
    disposeAfterTest(second)
    const next: PlanAgent = { id: 'agent-1', session: tail }
    const { reviewId: v2 } = (await second.exitTool.execute({ plan: V2 }, { agent: next, callId: 'call-2' })) as { reviewId: string }
    const seq = tail.events.at(-1)!.seq
    expect(second.openReview(next)).toEqual({ reviewId: v2, title: 'Migrate the users table', plan: V2, version: 2, seq, callId: 'call-2' })
    // The whole log says the same.
    const whole = createMemorySessionLog([...session.events, ...tail.events.slice(1)].map(({ type, data }) => ({ type, data })))
    const reader = createPlanMode({ section: SECTION, review: 'durable', logger: { warn: () => {} } })
    disposeAfterTest(reader)
    expect(reader.openReview({ id: 'agent-1', session: whole })).toMatchObject({ reviewId: v2, version: 2, seq })
    expect(planHistory(whole.events).map(({ version, reviewId }) => ({ version, reviewId }))).toEqual([{ version: 1, reviewId: v1 }, { version: 2, reviewId: v2 }])
  })

  it('R138, R96: a new episode numbers from 1 again', async () => {
    const { planMode, agent, reviewId, session } = await presented()
    await planMode.answerReview(agent, reviewId, { answers: [{ id: 'plan-review', selected: ['Approve'] }] })
    await planMode.stepBoundary(agent) // the approval leaves plan mode
    expect(await planMode.set(agent, true)).toBe('committed')
    const { reviewId: again } = (await planMode.exitTool.execute({ plan: PLAN }, { agent, callId: 'call-2' })) as { reviewId: string }
    expect(planMode.openReview(agent)).toMatchObject({ reviewId: again, version: 1, seq: session.events.at(-1)!.seq })
  })
})
