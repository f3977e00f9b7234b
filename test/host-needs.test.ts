import { afterEach, describe, expect, expectTypeOf, it } from 'vitest'
import { createMemorySessionLog, createPlanMode, type PlanAgent, type PlanMode, type ReviewAnswer } from '../src/index.js'

/**
 * What hosts on other frameworks needed and guessed (issue #26): each test names the rule it pins.
 */
const SECTION = 'Plan mode is on: explore read-only, then present the plan with exit_plan_mode.'
const PLAN = '# Migrate the users table\n\n1. Add the column.\n2. Backfill it.'
const MALFORMED =
  "answerReview needs a reviewId string and an answer { answers: [{ id: string, selected: string[], custom?: string, comments?: [{ quote, text }] }] }; nothing was changed"

const services: PlanMode[] = []
afterEach(async () => {
  await Promise.all(services.splice(0).map((service) => service.dispose()))
})

/** A durable service whose agent has presented PLAN: the review is open. */
async function presented() {
  const session = createMemorySessionLog([{ type: 'plan/mode', data: { active: true } }])
  const planMode = createPlanMode({ section: SECTION, review: 'durable', logger: { warn: () => {} } })
  services.push(planMode)
  const agent: PlanAgent = { id: 'agent-1', session }
  const { reviewId } = (await planMode.exitTool.execute({ plan: PLAN }, { agent, callId: 'call-1' })) as { reviewId: string }
  return { session, planMode, agent, reviewId }
}

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
