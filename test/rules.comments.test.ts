import { readFileSync } from 'node:fs'
import fc from 'fast-check'
import { afterEach, describe, expect, it } from 'vitest'
import { commentsText, readReviewAnswer } from '../src/plan/review.js'
import { createMemorySessionLog, createPlanMode, type PlanAgent, type PlanMode, type ReviewAnswer } from '../src/index.js'
import { createHarness, PLAN, SECTION } from './helpers.js'

const TITLE = 'Migrate the database'
const ON_BACKUP = { quote: '1. Back up.', text: 'Back up to S3, not to the local disk.' }
const ON_MIGRATE = { quote: 'Migrate.', text: 'Say "which" migration tool.' }
const COMMENTS_TEXT = 'Comments on the plan:\n1. On "1. Back up.": Back up to S3, not to the local disk.\n2. On "Migrate.": Say "which" migration tool.'
const keep = (extra: Partial<ReviewAnswer['answers'][number]>): ReviewAnswer => ({ answers: [{ id: 'plan-review', selected: ['Keep planning'], ...extra }] })

const services: PlanMode[] = []
afterEach(async () => {
  await Promise.all(services.splice(0).map((service) => service.dispose()))
})

/** A channel review of PLAN answered with `answer`: the call's outcome and the log's review record. */
async function channelReview(answer: ReviewAnswer) {
  const h = createHarness()
  services.push(h.planMode)
  await h.planMode.set(h.agent, true)
  const call = h.planMode.exitTool.execute({ plan: PLAN }, { agent: h.agent }).then(
    (value) => ({ value }),
    (error: Error) => ({ error: error.message }),
  )
  await h.review.untilAsked(1)
  h.review.answer(answer)
  const outcome = await call
  return { outcome, record: h.log.events.find((e) => e.type === 'plan/review')?.data }
}

describe('R100: comments anchored to the plan', () => {
  it('R100, R45: keep planning with feedback and comments: the model gets the feedback, then the comments; the record keeps both', async () => {
    const { outcome, record } = await channelReview(keep({ custom: 'Mind the downtime.', comments: [ON_BACKUP, ON_MIGRATE] }))
    const feedback = `Mind the downtime.\n\n${COMMENTS_TEXT}`
    expect(outcome).toEqual({ error: `The user chose to keep planning; their feedback: ${feedback}` })
    expect(record).toEqual({ outcome: 'keep-planning', title: TITLE, plan: PLAN, feedback, comments: [ON_BACKUP, ON_MIGRATE] })
    expect(commentsText([ON_BACKUP, ON_MIGRATE])).toBe(COMMENTS_TEXT)
  })

  it('R100, R44: comments never consent: Approve with a comment keeps planning, with the comments alone as feedback', async () => {
    const { outcome, record } = await channelReview({ answers: [{ id: 'plan-review', selected: ['Approve'], comments: [ON_BACKUP] }] })
    const feedback = 'Comments on the plan:\n1. On "1. Back up.": Back up to S3, not to the local disk.'
    expect(outcome).toEqual({ error: `The user chose to keep planning; their feedback: ${feedback}` })
    expect(record).toMatchObject({ outcome: 'keep-planning', feedback, comments: [ON_BACKUP] })
  })

  it('R100, R46: a channel answer whose comment quotes what the plan does not hold fails the call with the exact message, recorded failed', async () => {
    const { outcome, record } = await channelReview(keep({ comments: [ON_BACKUP, { quote: '3. Celebrate.', text: 'No.' }] }))
    expect(outcome).toEqual({ error: 'plan review comment 2 quotes text that is not in the plan: "3. Celebrate."' })
    expect(record).toEqual({ outcome: 'failed', title: TITLE, plan: PLAN })
    const blank = await channelReview(keep({ comments: [{ quote: '   ', text: 'x' }] }))
    expect(blank.outcome).toEqual({ error: 'plan review comment 1 needs a non-empty quote and text' })
  })

  it('R100, R80: answerReview refuses a comment off the plan with the exact message and changes nothing; a valid one keeps planning and is told once', async () => {
    const planMode = createPlanMode({ section: SECTION, review: 'durable' })
    services.push(planMode)
    const session = createMemorySessionLog([{ type: 'plan/mode', data: { active: true } }, { type: 'turn/start', data: {} }])
    const agent: PlanAgent = { id: 'agent-1', session }
    const { reviewId } = (await planMode.exitTool.execute({ plan: PLAN }, { agent })) as { reviewId: string }
    const events = session.events.length
    await expect(planMode.answerReview(agent, reviewId, keep({ comments: [{ quote: 'Back up', text: 'ok' }, { quote: 'back up', text: 'case matters' }] }))).rejects.toThrow(
      new Error('plan review comment 2 quotes text that is not in the plan: "back up"'),
    )
    await expect(planMode.answerReview(agent, reviewId, keep({ comments: {} as never }))).rejects.toThrow(/^answerReview needs a reviewId string/)
    expect(session.events.length).toBe(events)
    expect(planMode.openReview(agent)?.reviewId).toBe(reviewId)
    expect(await planMode.answerReview(agent, reviewId, keep({ comments: [ON_BACKUP] }))).toBe('keep-planning')
    const step = await planMode.stepBoundary(agent)
    expect(step.messages.map((m) => (m.content[0] as { text: string }).text)).toEqual([
      'The user chose to keep planning; their feedback: Comments on the plan:\n1. On "1. Back up.": Back up to S3, not to the local disk.',
    ])
    expect((await planMode.stepBoundary(agent)).messages).toEqual([])
  })

  it('R100: docs/reviews.md shows the exact text the model reads for a comment', () => {
    const guide = readFileSync(new URL('../docs/reviews.md', import.meta.url), 'utf8')
    const told = `The user chose to keep planning; their feedback: ${commentsText([ON_BACKUP])}`
    expect(guide).toContain(told.split('\n').map((line) => `// ${line}`).join('\n').replace('// The user', '// the model reads: The user'))
  })

  it('R100, R44, R101: consent is read from the approving options alone, never from comments, any other option, a custom that is not a string, or what a getter, a Proxy or toJSON shows (property)', () => {
    const item = fc.record(
      {
        id: fc.constantFrom('plan-review', 'other'),
        selected: fc.subarray(['Approve', 'Keep planning', 'Approve in a fresh context', 'Leave plan mode']),
        custom: fc.constantFrom<unknown>(undefined, '', '  ', 'more tests', 42, null),
        comments: fc.constantFrom(undefined, [], [ON_BACKUP], [ON_BACKUP, ON_MIGRATE]),
      },
      { requiredKeys: ['id', 'selected'] },
    )
    const APPROVE_ITEM = { id: 'plan-review', selected: ['Approve'] }
    // How the answer is handed over: as plain data, or dressed so that a second read would show an approval.
    const dress = fc.constantFrom('plain', 'answers getter', 'custom getter', 'label getter', 'proxy', 'toJSON')
    /** The answer `answers` dressed as `how`; `getter` when it carries one (then it is no plain data). */
    const dressed = (answers: object[], how: string): { answer: unknown; getter: boolean } => {
      const approveLater = (first: unknown) => {
        let reads = 0
        return () => (reads++ === 0 ? first : [APPROVE_ITEM])
      }
      if (how === 'answers getter') return { answer: Object.defineProperty({}, 'answers', { enumerable: true, get: approveLater(answers) }), getter: true }
      if (how === 'custom getter' && answers.length > 0) {
        const [first, ...rest] = answers as Record<string, unknown>[]
        let reads = 0
        const custom = Object.defineProperty({ ...first }, 'custom', { enumerable: true, get: () => (reads++ === 0 ? first!.custom : undefined) })
        return { answer: { answers: [custom, ...rest] }, getter: true }
      }
      if (how === 'label getter' && answers.length > 0 && (answers[0] as { selected: string[] }).selected.length > 0) {
        const [first, ...rest] = answers as { selected: string[] }[]
        let reads = 0
        const selected = Object.defineProperty([...first!.selected], 0, { enumerable: true, get: () => (reads++ === 0 ? first!.selected[0] : 'Approve') })
        return { answer: { answers: [{ ...first, selected }, ...rest] }, getter: true }
      }
      if (how === 'proxy') {
        const later = approveLater(answers)
        return { answer: new Proxy({ answers }, { get: (t, key) => (key === 'answers' ? later() : Reflect.get(t, key)) }), getter: false }
      }
      if (how === 'toJSON') return { answer: { answers, toJSON: () => ({ answers: [APPROVE_ITEM] }) }, getter: false }
      return { answer: { answers }, getter: false }
    }
    fc.assert(
      fc.property(fc.array(item, { maxLength: 3 }), fc.constantFrom('approve-or-keep' as const, 'all' as const), dress, (answers, decisions, how) => {
        const { answer, getter } = dressed(answers, how)
        let verdict: ReturnType<typeof readReviewAnswer>
        try {
          verdict = readReviewAnswer(answer as ReviewAnswer, PLAN, decisions)
        } catch (error) {
          // A getter is no data: the answer cannot be read (R46), so it consents to nothing.
          expect(getter).toBe(true)
          expect((error as Error).message).toMatch(/^the plan review answer is not plain data \(answers(\[0\]\.(custom|selected\[0\]))? is a getter\)$/)
          return
        }
        expect(getter).toBe(false)
        const own = answers.filter((a) => a.id === 'plan-review')
        const alone =
          own.length === 1 &&
          own[0]!.selected.length === 1 &&
          (own[0]!.custom === undefined || (typeof own[0]!.custom === 'string' && own[0]!.custom.trim() === '')) &&
          (own[0]!.comments === undefined || own[0]!.comments.length === 0)
            ? own[0]!.selected[0]
            : undefined
        const approving = alone === 'Approve' || (decisions === 'all' && alone === 'Approve in a fresh context')
        expect(verdict.outcome === 'approved').toBe(approving)
        expect(verdict.outcome).toBe(approving ? 'approved' : decisions === 'all' && alone === 'Leave plan mode' ? 'left' : 'keep-planning')
      }),
      { numRuns: 300 },
    )
  })
})
