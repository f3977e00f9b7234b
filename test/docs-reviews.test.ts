import { readFileSync } from 'node:fs'
import { afterEach, describe, expect, it } from 'vitest'
import { createMemorySessionLog, createPlanMode, type PlanAgent, type PlanMode } from '../src/index.js'
import { keepPlanningWithComments } from '../examples/review-comments.js'

const GUIDE = readFileSync(new URL('../docs/reviews.md', import.meta.url), 'utf8')
const EXAMPLE = readFileSync(new URL('../examples/review-comments.ts', import.meta.url), 'utf8')
const PLAN = '# Migrate the orders table\n1. Back up.\n2. Migrate.'
const COMMENT = { quote: '1. Back up.', text: 'Back up to S3, not to the local disk.' }

/** What the example's closing comment says the model reads, its `// ` prefixes removed. */
const CLAIMED = EXAMPLE.split('// the model reads: ')[1]!.trim().split('\n').map((line) => line.replace(/^\/\/ /, '')).join('\n')

const services: PlanMode[] = []
afterEach(async () => {
  await Promise.all(services.splice(0).map((service) => service.dispose()))
})

/** A durable-review service whose agent has presented PLAN in a turn that has ended. */
async function presented() {
  const planMode = createPlanMode({ section: 'Plan mode is on.', review: 'durable' })
  services.push(planMode)
  const agent: PlanAgent = { id: 'main', session: createMemorySessionLog() }
  await planMode.command.run({ agent, rawInput: '' })
  await agent.session.append('turn/start', {})
  await planMode.stepBoundary(agent)
  await agent.session.append('request/header', {})
  expect(await planMode.exitTool.execute({ plan: PLAN }, { agent })).toMatchObject({ submitted: true })
  await agent.session.append('turn/end', {})
  return { planMode, agent }
}

describe('docs/reviews.md: comments anchored to the plan', () => {
  it('docs/reviews.md shows examples/review-comments.ts verbatim', () => {
    expect(GUIDE).toContain(EXAMPLE.trim())
  })

  it('R100: the comments reach the model at its next step as the guide says, word for word; they do not consent and the record keeps them', async () => {
    const { planMode, agent } = await presented()
    expect(await keepPlanningWithComments(planMode, agent, [COMMENT])).toBe('keep-planning')

    await agent.session.append('turn/start', {})
    const { messages } = await planMode.stepBoundary(agent)
    expect(messages.map((message) => (message.content[0] as { text: string }).text)).toEqual([CLAIMED])
    expect(CLAIMED).toBe('The user chose to keep planning; their feedback: Comments on the plan:\n1. On "1. Back up.": Back up to S3, not to the local disk.')
    expect(planMode.get(agent).active).toBe(true)
    expect(agent.session.events.at(-2)).toMatchObject({ type: 'plan/review', data: { outcome: 'keep-planning', plan: PLAN, comments: [COMMENT] } })
  })

  it('R100: a quote the plan does not hold is refused with the message the guide gives, and the review stays open', async () => {
    const { planMode, agent } = await presented()
    await expect(keepPlanningWithComments(planMode, agent, [{ quote: '3. Drop the old table.', text: 'Not yet.' }])).rejects.toThrow(
      new Error('plan review comment 1 quotes text that is not in the plan: "3. Drop the old table."'),
    )
    expect(GUIDE.replace(/\s+/g, ' ')).toContain('(`plan review comment 1 quotes text that is not in the plan: "…"`)')
    expect(await planMode.openReview(agent)).toMatchObject({ plan: PLAN })
  })

  it('R100: with no open review the example answers nothing', async () => {
    const planMode = createPlanMode({ section: 'Plan mode is on.', review: 'durable' })
    services.push(planMode)
    const agent: PlanAgent = { id: 'main', session: createMemorySessionLog() }
    expect(await keepPlanningWithComments(planMode, agent, [COMMENT])).toBeNull()
    expect(agent.session.events).toEqual([])
  })
})
