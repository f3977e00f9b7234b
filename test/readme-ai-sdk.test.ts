import { readFileSync } from 'node:fs'
import { afterEach, describe, expect, it } from 'vitest'
import type { PlanMode, ReviewAnswer, ReviewChannel } from '../src/index.js'
import { createAiSdkAgent } from '../examples/ai-sdk.js'
import { scriptedModel } from './fixtures/ai-sdk-model.js'

const GUIDE = readFileSync(new URL('../docs/ai-sdk.md', import.meta.url), 'utf8')
const EXAMPLE = readFileSync(new URL('../examples/ai-sdk.ts', import.meta.url), 'utf8')

const SYSTEM = 'You are a coding agent.'
const SECTION = 'Plan mode: explore read-only, then present the whole plan with exit_plan_mode.'

const services: PlanMode[] = []
afterEach(async () => {
  await Promise.all(services.splice(0).map((service) => service.dispose()))
})

describe('docs/ai-sdk.md: the Vercel AI SDK example', () => {
  it('docs/ai-sdk.md shows the example file verbatim', () => {
    expect(GUIDE).toContain(EXAMPLE.trim())
  })

  it('R56, R45, R50: /plan with a message, a review kept planning with feedback, then approved: the example behaves as documented', async () => {
    const answers: ReviewAnswer[] = [
      { answers: [{ id: 'plan-review', selected: ['Keep planning'], custom: 'Add a rollback step.' }] },
      { answers: [{ id: 'plan-review', selected: ['Approve'] }] },
    ]
    const review: ReviewChannel = { ask: async () => answers.shift()! }
    const { model, requests } = scriptedModel([
      { toolCalls: [{ name: 'readFile', input: { path: 'db/schema.sql' } }] },
      { toolCalls: [{ name: 'exit_plan_mode', input: { plan: '# Migration\n1. Migrate.' } }] },
      { toolCalls: [{ name: 'exit_plan_mode', input: { plan: '# Migration\n1. Migrate.\n2. Roll back if needed.' } }] },
      { text: 'Migrating now.' },
      { text: 'Noted.' },
    ])
    const { planMode, agent, history, runTurn } = createAiSdkAgent(model, review)
    services.push(planMode)

    expect(await planMode.command.run({ agent, rawInput: 'draft the migration' })).toEqual({
      kind: 'success',
      text: 'Plan mode on. Use /plan off to leave.',
    })
    expect(await runTurn()).toBe('Migrating now.')

    expect(requests().map((r) => r.system)).toEqual([
      `${SYSTEM}\n\n${SECTION}`,
      `${SYSTEM}\n\n${SECTION}`,
      `${SYSTEM}\n\n${SECTION}`,
      SYSTEM,
    ])
    expect(requests()[0]!.userTexts).toEqual(['draft the migration'])
    expect(requests()[2]!.toolResults.at(-1)!.output).toEqual({
      type: 'error-text',
      value: 'The user chose to keep planning; their feedback: Add a rollback step.',
    })
    expect(requests()[3]!.toolResults.at(-1)!.output).toEqual({
      type: 'text',
      value: 'Plan approved — plan mode exited; carry out the plan starting with your next step.',
    })
    expect(planMode.get(agent)).toEqual({ active: false })
    expect(history[0]).toEqual({ role: 'user', content: [{ type: 'text', text: 'draft the migration' }] })

    // Back into plan mode for the next turn: the model is told once, after the user's text.
    await planMode.set(agent, true)
    expect(await runTurn('one more thing')).toBe('Noted.')
    expect(requests()[4]!.userTexts.slice(-2)).toEqual(['one more thing', 'The user switched this session to plan mode.'])
    expect(agent.session.events.map((e) => e.type).filter((t) => t.startsWith('plan/'))).toEqual([
      'plan/mode',
      'plan/review',
      'plan/review',
      'plan/mode',
      'plan/mode',
    ])
  })
})
