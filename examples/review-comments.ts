import type { PlanAgent, PlanMode, ReviewComment } from 'xstate-plan-mode'

/**
 * The review UI's Keep planning with comments, for a service with `review: 'durable'`: each
 * comment quotes the plan under review exactly; the model reads them at its next step.
 */
export async function keepPlanningWithComments(planMode: PlanMode, agent: PlanAgent, comments: ReviewComment[]) {
  const review = await planMode.openReview(agent) // { reviewId, title, plan, version (the plan’s), seq } for the UI, or null
  if (review === null) return null
  return planMode.answerReview(agent, review.reviewId, {
    answers: [{ id: 'plan-review', selected: ['Keep planning'], comments }],
  })
}

// keepPlanningWithComments(planMode, agent, [{ quote: '1. Back up.', text: 'Back up to S3, not to the local disk.' }])
// the model reads: The user chose to keep planning; their feedback: Comments on the plan:
// 1. On "1. Back up.": Back up to S3, not to the local disk.
