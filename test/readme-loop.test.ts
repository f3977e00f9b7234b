import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { createAgent } from '../examples/hand-written-loop.js'
import type { Model } from '../examples/model.js'
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

describe('README: the visualizer and Stately inspector examples', () => {
  it('the README shows both example files verbatim (test/visualizer.test.ts and test/inspect.test.ts run them)', () => {
    for (const file of ['visible-plan-mode.ts', 'stately-inspector.ts']) {
      const example = readFileSync(new URL(`../visualizer/examples/${file}`, import.meta.url), 'utf8')
      expect(README).toContain(example.trim())
    }
  })
})
