import { afterEach, describe, expect, it } from 'vitest'
import { withPlanMode } from '../src/adapters/ai-sdk.js'
import { createCheckpoint } from '../src/log/checkpoint.js'
import { PLAN_MODE_TEXTS, createMemorySessionLog, createPlanMode, replayPlanLog, type PlanAgent, type PlanMode, type SessionLog } from '../src/index.js'
import { readReviewAnswer } from '../src/plan/review.js'
import { approveAnswer, keepPlanningAnswer } from '../src/plan/review-answer.js'

/**
 * `planMode.callReviews` (R82, R87): the durable review bound to a framework's tool call, decided by
 * the service, so that an adapter (the AI SDK's `needsApproval`, `execute`, `prepareStep`,
 * `settleClosedApprovals`) only carries the calls in and the results out. Every text is copied
 * from docs/spec.md.
 */
const SECTION = 'Plan mode is on: explore read-only, then present the plan with exit_plan_mode.'
const PLAN = '# Migrate the users table\n\n1. Add the column.\n2. Backfill it.'
const OTHER_PLAN = '# Migrate the users table\n\n1. Drop the table.'
const TITLE = 'Migrate the users table'
const REVISE = 'The user chose to keep planning; revise the plan and present it again.'
const REASON = 'Backfill in batches of 1000.'

const services: PlanMode[] = []
afterEach(async () => {
  await Promise.all(services.splice(0).map((service) => service.dispose()))
})

function durable(session: SessionLog = createMemorySessionLog([{ type: 'plan/mode', data: { active: true } }])) {
  const planMode = createPlanMode({ section: SECTION, review: 'durable' })
  services.push(planMode)
  const agent: PlanAgent = { id: 'agent-1', session }
  return { planMode, agent, session }
}

/** The log's `plan/review` records after the request, without their ids. */
const records = (session: SessionLog) =>
  session.events.filter((e) => e.type === 'plan/review').slice(1).map(({ data }) => {
    const { reviewId: _reviewId, ...rest } = data as Record<string, unknown>
    return rest
  })

describe('R82: callReviews decide the review of a framework tool call', () => {
  it('R82, R79: request opens the review bound to the call; approve approves it, told in the result', async () => {
    const { planMode, agent, session } = durable()
    const submitted = await planMode.callReviews.request(agent, 'call-1', { plan: PLAN })
    expect(submitted).toEqual({ submitted: true, reviewId: planMode.openReview(agent)!.reviewId })
    expect(planMode.openReview(agent)).toMatchObject({ callId: 'call-1', plan: PLAN })
    expect(await planMode.callReviews.approve(agent, 'call-1', { plan: PLAN })).toEqual({ approved: true })
    expect(records(session)).toEqual([{ outcome: 'approved', title: TITLE, plan: PLAN, toldInResult: true }])
    expect(planMode.get(agent)).toEqual({ active: true, pending: false }) // R47: it leaves at the next step
  })

  it('R82: a new call repeating the id of the call under review is refused and closes that review as keep planning, told in the result', async () => {
    const { planMode, agent, session } = durable()
    await planMode.callReviews.request(agent, 'call-1', { plan: PLAN })
    await expect(planMode.callReviews.request(agent, 'call-1', { plan: OTHER_PLAN })).rejects.toThrow(
      'exit_plan_mode call "call-1" repeats the id of the call under review; it is refused, and that review is closed: nothing was approved. Present the plan again, in one call.',
    )
    expect(planMode.openReview(agent)).toBeNull()
    expect(records(session)).toEqual([{ outcome: 'keep-planning', title: TITLE, plan: PLAN, toldInResult: true }])
  })

  it('R82: an approval of another plan than the one under review approves nothing and closes the review; one of no open review names the call', async () => {
    const { planMode, agent, session } = durable()
    await expect(planMode.callReviews.approve(agent, 'call-9', { plan: PLAN })).rejects.toThrow(
      'the approval of tool call "call-9" matches no open plan review; nothing was approved',
    )
    await planMode.callReviews.request(agent, 'call-1', { plan: PLAN })
    await expect(planMode.callReviews.approve(agent, 'call-1', { plan: OTHER_PLAN })).rejects.toThrow(
      'the approval of tool call "call-1" is for another plan than the one under review; nothing was approved, and that review is closed: present the plan again',
    )
    expect(records(session)).toEqual([{ outcome: 'keep-planning', title: TITLE, plan: PLAN, toldInResult: true }])
    expect(planMode.get(agent)).toEqual({ active: true })
  })

  it('R82, R45: a denial keeps planning with its reason as the feedback (a blank reason is none); the model reads R45\'s text', async () => {
    const { planMode, agent, session } = durable()
    await planMode.callReviews.deny(agent, new Map([['call-1', { input: { plan: PLAN }, reason: REASON }]])) // nothing open: nothing to answer
    expect(records(session)).toEqual([])
    await planMode.callReviews.request(agent, 'call-1', { plan: PLAN })
    await planMode.callReviews.deny(agent, new Map([['call-0', { input: { plan: PLAN } }]])) // another call's denial
    expect(planMode.openReview(agent)).not.toBeNull()
    await planMode.callReviews.deny(agent, new Map([['call-1', { input: { plan: PLAN }, reason: REASON }]]))
    expect(records(session)).toEqual([{ outcome: 'keep-planning', title: TITLE, plan: PLAN, feedback: REASON, toldInResult: true }])
    expect(planMode.callReviews.denialText(REASON)).toBe(`The user chose to keep planning; their feedback: ${REASON}`)
    expect(planMode.callReviews.denialText(' \n')).toBe(REVISE)
    expect(planMode.callReviews.denialText(undefined)).toBe(REVISE)
  })

  it('R82: a denial is a decision on the plan its card showed: the denial of a call with the open review\'s id but another plan answers nothing (regression: any denial of the id closed the review)', async () => {
    const { planMode, agent, session } = durable()
    await planMode.callReviews.request(agent, 'call-1', { plan: PLAN })
    await planMode.callReviews.deny(agent, new Map([['call-1', { input: { plan: OTHER_PLAN }, reason: REASON }]]))
    expect(records(session)).toEqual([])
    expect(planMode.openReview(agent)).toMatchObject({ callId: 'call-1', plan: PLAN })
  })

  it('R87: settled gives each closed call its result; the call of a review still open has none', async () => {
    const { planMode, agent } = durable()
    const results = (calls: string[]) => {
      const settled = planMode.callReviews.settled(agent)
      return calls.map((callId) => settled.resultOf(callId, { plan: PLAN }))
    }
    await planMode.callReviews.request(agent, 'call-1', { plan: PLAN })
    expect(results(['call-1', 'call-2'])).toEqual([undefined, undefined])
    await planMode.callReviews.deny(agent, new Map([['call-1', { input: { plan: PLAN }, reason: REASON }]]))
    await planMode.callReviews.request(agent, 'call-2', { plan: PLAN })
    expect(results(['call-1', 'call-2'])).toEqual([{ errorText: `The user chose to keep planning; their feedback: ${REASON}` }, undefined])
    await planMode.callReviews.approve(agent, 'call-2', { plan: PLAN })
    expect(results(['call-1', 'call-2'])).toEqual([{ errorText: `The user chose to keep planning; their feedback: ${REASON}` }, { output: { approved: true } }])
    // A card is settled by its own plan's review: call-2 never presented another plan.
    expect(planMode.callReviews.settled(agent).resultOf('call-2', { plan: OTHER_PLAN })).toBeUndefined()
  })
})

describe('R44, R45: the answers given on the user\'s behalf', () => {
  it('R44, R45: they select the labels PLAN_MODE_TEXTS holds and read back as the decisions they stand for; a blank feedback is none', () => {
    const { approve, keepPlanning } = PLAN_MODE_TEXTS.review.labels
    expect(approveAnswer()).toEqual({ answers: [{ id: 'plan-review', selected: [approve] }] })
    expect(keepPlanningAnswer(REASON)).toEqual({ answers: [{ id: 'plan-review', selected: [keepPlanning], custom: REASON }] })
    expect(keepPlanningAnswer(' \n')).toEqual({ answers: [{ id: 'plan-review', selected: [keepPlanning] }] })
    expect(readReviewAnswer(approveAnswer())).toEqual({ outcome: 'approved' })
    expect(readReviewAnswer(keepPlanningAnswer(REASON))).toEqual({ outcome: 'keep-planning', feedback: REASON })
    expect(readReviewAnswer(keepPlanningAnswer())).toEqual({ outcome: 'keep-planning' })
  })
})

describe('R87, R76: settleClosedApprovals after a checkpoint', () => {
  it('R87, R76: a card whose review was requested before the checkpoint and closed after it is settled (regression: a session loaded from its checkpoint left it waiting, and the SDK refused the request)', async () => {
    // The first process: the review requested (its call's card waits), the turn ends, a checkpoint is made there.
    const whole = createMemorySessionLog([{ type: 'plan/mode', data: { active: true } }, { type: 'turn/start', data: {} }])
    const first = durable(whole)
    await first.planMode.callReviews.request(first.agent, 'call-1', { plan: PLAN })
    whole.append('turn/end', {})
    const checkpoint = createCheckpoint('agent-1', replayPlanLog(whole.events), whole.events)
    expect(checkpoint).not.toBeNull()
    // Another tab keeps planning; then a request loads the session from its checkpoint on (R76).
    whole.append('plan/review', { ...(whole.events[2]!.data as object), outcome: 'keep-planning', feedback: REASON })
    const tail = createMemorySessionLog(whole.events.slice(checkpoint!.seq - 1).map(({ type, data }) => ({ type, data })), { checkpoint, agentId: 'agent-1' })
    const { planMode, agent } = durable(tail)
    const plan = withPlanMode({ planMode, agent })
    const card = { type: 'tool-exit_plan_mode', toolCallId: 'call-1', state: 'approval-requested', input: { plan: PLAN }, approval: { id: 'approval-1' } }
    const messages = [{ id: 'm1', role: 'assistant' as const, parts: [card] }] as never[]
    expect(plan.settleClosedApprovals(messages)).toEqual([
      {
        id: 'm1',
        role: 'assistant',
        parts: [{ type: 'tool-exit_plan_mode', toolCallId: 'call-1', state: 'output-error', input: { plan: PLAN }, errorText: `The user chose to keep planning; their feedback: ${REASON}` }],
      },
    ])
  })
})
