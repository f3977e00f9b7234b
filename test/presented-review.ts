import { afterEach } from 'vitest'
import { createMemorySessionLog, createPlanMode, type PlanAgent, type PlanMode } from '../src/index.js'

/** The section and plan of the durable-review host tests (R80, R135–R138). */
export const SECTION = 'Plan mode is on: explore read-only, then present the plan with exit_plan_mode.'
export const PLAN = '# Migrate the users table\n\n1. Add the column.\n2. Backfill it.'

const services: PlanMode[] = []
afterEach(async () => {
  await Promise.all(services.splice(0).map((service) => service.dispose()))
})

/** Disposes `planMode` after the test. */
export function disposeAfterTest(planMode: PlanMode): void {
  services.push(planMode)
}

/** A durable service whose agent has presented PLAN: the review is open. Disposed after each test. */
export async function presented() {
  const session = createMemorySessionLog([{ type: 'plan/mode', data: { active: true } }])
  const planMode = createPlanMode({ section: SECTION, review: 'durable', logger: { warn: () => {} } })
  services.push(planMode)
  const agent: PlanAgent = { id: 'agent-1', session }
  const { reviewId } = (await planMode.exitTool.execute({ plan: PLAN }, { agent, callId: 'call-1' })) as { reviewId: string }
  return { session, planMode, agent, reviewId }
}
