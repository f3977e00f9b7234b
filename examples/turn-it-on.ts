import type { ReviewChannel } from 'xstate-plan-mode'
import { createAgent } from './hand-written-loop.js'
import type { Model } from './model.js'

/** Plan mode on with `/plan <message>`, then one turn: it plans, asks `review`, and once approved carries the plan out. */
export async function planThenBuild(model: Model, review: ReviewChannel) {
  const { planMode, agent, history, runTurn } = createAgent(model, review)
  await planMode.command.run({ agent, rawInput: 'draft the migration' }) // what `/plan draft the migration` runs
  await runTurn() // the message opens the turn; an approval leaves plan mode (`rawInput: 'off'` leaves it by hand)
  return { planMode, agent, history }
}
