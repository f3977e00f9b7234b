import { describe, expect, it } from 'vitest'
import { PLAN_MODE_TEXTS, planHistory } from '../src/index.js'
import { PLAN, presented } from './presented-review.js'

/**
 * `PLAN_MODE_TEXTS.review.toldInResult` (R135): the one text of a durable review's outcome told in
 * the exit call's result, for hosts that keep the call waiting. Every text is copied from
 * docs/spec.md.
 */
const { toldInResult } = PLAN_MODE_TEXTS.review

describe('R135: the text of an outcome told in the exit call’s result', () => {
  it('R135, R50: an approval (a fresh one too) is R50’s result text, not an error', () => {
    const text = 'Plan approved — plan mode exited; carry out the plan starting with your next step.'
    expect(toldInResult({ outcome: 'approved' })).toEqual({ outcome: 'approved', isError: false, text })
    expect(toldInResult({ outcome: 'approved', fresh: true } as { outcome: string })).toEqual({ outcome: 'approved', isError: false, text })
    expect(text).toBe(PLAN_MODE_TEXTS.tool.result)
  })

  it('R135, R45, R46, R48, R60, R101: every other outcome is an error with the text the call fails with', () => {
    const cases: [string, string | undefined, string][] = [
      ['keep-planning', undefined, 'The user chose to keep planning; revise the plan and present it again.'],
      ['keep-planning', '   ', 'The user chose to keep planning; revise the plan and present it again.'],
      ['keep-planning', 'Use SQLite.', 'The user chose to keep planning; their feedback: Use SQLite.'],
      ['left', undefined, 'The user left plan mode without carrying out the plan; stop here and wait for their message.'],
      ['dismissed', undefined, 'The user dismissed the plan review to speak instead; stay in plan mode, stop here, and wait for their message.'],
      ['superseded', undefined, 'The user changed the plan mode directly; the review is closed.'],
      ['reloaded', undefined, 'the plan-mode service was reloaded while the plan was under review; present the plan again'],
      ['aborted', undefined, 'the plan review was aborted'],
      ['failed', undefined, 'the review channel failed with an error that cannot be read'],
    ]
    for (const [outcome, feedback, text] of cases) {
      expect(toldInResult(feedback === undefined ? { outcome } : { outcome, feedback })).toEqual({ outcome, isError: true, text })
    }
  })

  it('R135: an open review, a request record or a value that is no outcome throws a TypeError naming it', () => {
    expect(() => toldInResult({ outcome: 'open' })).toThrow(new TypeError('toldInResult needs the outcome of a closed plan review; got "open"'))
    expect(() => toldInResult({ outcome: 'requested' })).toThrow(new TypeError('toldInResult needs the outcome of a closed plan review; got "requested"'))
    expect(() => toldInResult({ outcome: 7 })).toThrow(new TypeError('toldInResult needs the outcome of a closed plan review; got 7'))
    expect(() => toldInResult({ outcome: undefined })).toThrow(new TypeError('toldInResult needs the outcome of a closed plan review; got undefined'))
  })

  it('R135, R100: custom text and comments reach the model as the record keeps them, read off planHistory or the closing record', async () => {
    const { session, planMode, agent, reviewId } = await presented()
    const comments = [{ quote: '2. Backfill it.', text: 'In batches of 1000.' }]
    const answer = { answers: [{ id: 'plan-review', selected: ['Keep planning'], custom: 'Add an index first.', comments }] }
    expect(await planMode.answerReview(agent, reviewId, answer, { toldInResult: true })).toBe('keep-planning')
    const text =
      'The user chose to keep planning; their feedback: Add an index first.\n\nComments on the plan:\n1. On "2. Backfill it.": In batches of 1000.'
    const entry = planHistory(session.events).find((plan) => plan.reviewId === reviewId)!
    expect(toldInResult(entry)).toEqual({ outcome: 'keep-planning', isError: true, text })
    const record = session.events.filter((event) => event.type === 'plan/review').at(-1)!.data as { outcome: string; feedback?: string }
    expect(toldInResult(record)).toEqual({ outcome: 'keep-planning', isError: true, text })
    // Told in the result: no boundary tells it again (R81).
    expect((await planMode.stepBoundary(agent)).messages).toEqual([])
  })

  it('R135, R87: a card the log closed gets the same text from callReviews.settled as from toldInResult', async () => {
    const { session, planMode, agent, reviewId } = await presented()
    const answer = { answers: [{ id: 'plan-review', selected: ['Keep planning'], custom: 'Use SQLite.' }] }
    await planMode.answerReview(agent, reviewId, answer, { toldInResult: true })
    const entry = planHistory(session.events).find((plan) => plan.reviewId === reviewId)!
    expect(planMode.callReviews.settled(agent).resultOf('call-1', { plan: PLAN })).toEqual({ errorText: toldInResult(entry).text })
  })
})
