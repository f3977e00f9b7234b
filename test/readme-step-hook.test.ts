import { readFileSync } from 'node:fs'
import { afterEach, describe, expect, it } from 'vitest'
import { createPlanModeHooks } from '../examples/step-hook.js'
import { createMemorySessionLog, createPlanMode, type PlanAgent, type PlanMode } from '../src/index.js'

const GUIDE = readFileSync(new URL('../docs/hand-written-loop.md', import.meta.url), 'utf8')
const EXAMPLE = readFileSync(new URL('../examples/step-hook.ts', import.meta.url), 'utf8')

type Message = { role: 'user' | 'assistant' | 'tool'; content: string }
const ENTERING = 'The user switched this session to plan mode.'
const BASE = 'You are an agent.'
const SECTION = 'PLAN MODE.'

/**
 * A framework of the kind docs/hand-written-loop.md describes: its step hook returns one step's system prompt and
 * messages, and the framework forgets them afterwards (each step starts again from the call's input
 * and the messages the steps produced).
 */
async function frameworkRun(
  input: readonly Message[],
  steps: number,
  beforeStep: (messages: readonly Message[]) => Promise<{ system: string; messages: Message[] }>,
  sent: { system: string; messages: string[] }[],
): Promise<Message[]> {
  const own: Message[] = [...input]
  for (let step = 0; step < steps; step++) {
    const request = await beforeStep([...own])
    sent.push({ system: request.system, messages: request.messages.map((m) => m.content) })
    own.push({ role: 'assistant', content: `reply ${sent.length - 1}` })
  }
  return own.slice(input.length)
}

const services: PlanMode[] = []
afterEach(async () => {
  await Promise.all(services.splice(0).map((service) => service.dispose()))
})

describe('docs/hand-written-loop.md: plan mode in a framework that forgets a step hook’s messages', () => {
  it('docs/hand-written-loop.md shows the example file verbatim', () => {
    expect(GUIDE).toContain(EXAMPLE.trim())
  })

  it('R32, R18: the notice reaches the model at its step, stays at its place for the rest of the call, and lands in the history there', async () => {
    const planMode = createPlanMode({ section: SECTION })
    services.push(planMode)
    const agent: PlanAgent = { id: 'main', session: createMemorySessionLog() }
    const hooks = createPlanModeHooks(planMode, agent, BASE)
    const sent: { system: string; messages: string[] }[] = []
    const history: Message[] = [{ role: 'user', content: 'hi' }]

    agent.session.append('turn/start', {})
    hooks.startCall(history)
    history.push(...hooks.afterCall(await frameworkRun(history, 1, hooks.beforeStep, sent)))
    expect(await planMode.set(agent, true)).toBe('queued') // during the turn: waits for the next step
    history.push({ role: 'user', content: 'go on' })
    hooks.startCall(history)
    history.push(...hooks.afterCall(await frameworkRun(history, 2, hooks.beforeStep, sent)))

    expect(sent).toEqual([
      { system: BASE, messages: ['hi'] },
      { system: `${BASE}\n\n${SECTION}`, messages: ['hi', 'reply 0', 'go on', ENTERING] },
      { system: `${BASE}\n\n${SECTION}`, messages: ['hi', 'reply 0', 'go on', ENTERING, 'reply 1'] },
    ])
    expect(history.map((m) => m.content)).toEqual(['hi', 'reply 0', 'go on', ENTERING, 'reply 1', 'reply 2'])
    expect(agent.session.events.map((e) => e.type)).toEqual([
      'turn/start',
      'request/header',
      'plan/mode',
      'request/header',
      'request/header',
    ])
  })
})
