/**
 * The review channel the stock conformance drivers give the service (R43): each question the
 * service asks waits until the scenario takes it with `nextReview`, in the order asked.
 * Internal to the kit (not an entry point).
 */
import type { ReviewAnswer, ReviewChannel } from '../types.js'
import type { ConformanceReview } from './scenarios.js'

/** A review channel whose questions a conformance driver takes one by one (`nextReview`). */
export function createReviewQueue(): { channel: ReviewChannel; nextReview(): Promise<ConformanceReview> } {
  const waiting: ((review: ConformanceReview) => void)[] = []
  const asked: ConformanceReview[] = []
  return {
    channel: {
      ask: (request) =>
        new Promise<ReviewAnswer>((resolve, reject) => {
          const review: ConformanceReview = { request, answer: resolve, dismiss: () => reject(Object.assign(new Error('dismissed'), { code: 'ASK_CANCELLED' })) }
          const waiter = waiting.shift()
          if (waiter) waiter(review)
          else asked.push(review)
        }),
    },
    nextReview: () => {
      const review = asked.shift()
      return review ? Promise.resolve(review) : new Promise((resolve) => waiting.push(resolve))
    },
  }
}
