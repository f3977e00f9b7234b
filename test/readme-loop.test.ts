import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { createAgent } from '../examples/hand-written-loop.js'
import type { Model } from '../examples/model.js'
import { planThenBuild } from '../examples/turn-it-on.js'
import type { ReviewAnswer, ReviewChannel } from '../src/index.js'

const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
const EXAMPLE = readFileSync(new URL('../examples/hand-written-loop.ts', import.meta.url), 'utf8')

describe('README: the hand-written loop', () => {
  it('the README shows the example file verbatim', () => {
    expect(README).toContain(EXAMPLE.trim())
  })

  it('R56: /plan with a message, a review kept planning with feedback, then approved: the loop behaves as documented', async () => {
    const answers: ReviewAnswer[] = [
      { answers: [{ id: 'plan-review', selected: ['Keep planning'], custom: 'Add a rollback step.' }] },
      { answers: [{ id: 'plan-review', selected: ['Approve'] }] },
    ]
    const review: ReviewChannel = { ask: async () => answers.shift()! }
    const requests: { system: string; messages: string[] }[] = []
    const replies = [
      { text: 'Here is the plan.', toolCall: { name: 'exit_plan_mode', args: { plan: '# Migration\n1. Migrate.' } } },
      { text: 'Revised.', toolCall: { name: 'exit_plan_mode', args: { plan: '# Migration\n1. Migrate.\n2. Roll back if needed.' } } },
      { text: 'Migrating now.' },
    ]
    const model: Model = async ({ system, messages }) => {
      requests.push({ system, messages })
      return replies.shift() ?? { text: 'done' }
    }
    const { planMode, agent, runTurn } = createAgent(model, review)
    expect(await planMode.command.run({ agent, rawInput: 'draft the migration' })).toEqual({
      kind: 'success',
      text: 'Plan mode on. Use /plan off to leave.',
    })
    await runTurn()
    expect(requests.map((r) => r.system)).toEqual([
      'Plan mode: explore and design, then present the whole plan with exit_plan_mode.',
      'Plan mode: explore and design, then present the whole plan with exit_plan_mode.',
      '',
    ])
    expect(requests[0]!.messages).toEqual(['draft the migration'])
    expect(requests[1]!.messages.at(-1)).toBe('The user chose to keep planning; their feedback: Add a rollback step.')
    expect(requests[2]!.messages.at(-1)).toBe('Plan approved — plan mode exited; carry out the plan starting with your next step.')
    expect(planMode.get(agent)).toEqual({ active: false })
    // Back into plan mode from the next turn: the model is told once.
    await planMode.set(agent, true)
    await runTurn('one more thing')
    expect(requests[3]!.messages.slice(-2)).toEqual(['one more thing', 'The user switched this session to plan mode.'])
    expect(agent.session.events.map((e) => e.type).filter((t) => t.startsWith('plan/'))).toEqual([
      'plan/mode',
      'plan/review',
      'plan/review',
      'plan/mode',
      'plan/mode',
    ])
  })
})

describe('docs/cli-and-visualizer.md: the visualizer and Stately inspector examples', () => {
  it('docs/cli-and-visualizer.md shows both example files verbatim (test/visualizer.test.ts and test/inspect.test.ts run them)', () => {
    const guide = readFileSync(new URL('../docs/cli-and-visualizer.md', import.meta.url), 'utf8')
    for (const file of ['visible-plan-mode.ts', 'stately-inspector.ts']) {
      const example = readFileSync(new URL(`../apps/visualizer/examples/${file}`, import.meta.url), 'utf8')
      expect(guide).toContain(example.trim())
    }
  })
})

describe('README: how plan mode is turned on in the hand-written loop', () => {
  it('the README shows examples/model.ts and examples/turn-it-on.ts verbatim', () => {
    for (const file of ['model.ts', 'turn-it-on.ts']) expect(README).toContain(readFileSync(new URL(`../examples/${file}`, import.meta.url), 'utf8').trim())
  })

  it('R56, R50: /plan <message> turns plan mode on and the message opens the turn; the approved plan is carried out with plan mode off', async () => {
    const review: ReviewChannel = { ask: async () => ({ answers: [{ id: 'plan-review', selected: ['Approve'] }] }) }
    const replies = [{ text: 'Here is the plan.', toolCall: { name: 'exit_plan_mode', args: { plan: '# Migration\n1. Migrate.' } } }, { text: 'Migrated.' }]
    const systems: string[] = []
    const model: Model = async ({ system }) => (systems.push(system), replies.shift() ?? { text: 'done' })
    const { planMode, agent, history } = await planThenBuild(model, review)
    expect(systems).toEqual(['Plan mode: explore and design, then present the whole plan with exit_plan_mode.', ''])
    expect(history).toEqual([
      'draft the migration',
      'Here is the plan.',
      'Plan approved — plan mode exited; carry out the plan starting with your next step.',
      'Migrated.',
    ])
    expect(planMode.get(agent)).toEqual({ active: false })
    expect(agent.session.events.filter((e) => e.type === 'plan/mode').map((e) => e.data)).toEqual([{ active: true }, { active: false }])
    await planMode.dispose()
  })
})
