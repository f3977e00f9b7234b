import { describe, expect, it } from 'vitest'
import { createHarness, SECTION } from './helpers.js'

const run = (h: ReturnType<typeof createHarness>, rawInput: string, attachments?: unknown[]) =>
  h.planMode.command.run({ agent: h.agent, rawInput, ...(attachments ? { attachments } : {}) })

const IMAGE = { type: 'image', mediaType: 'image/png', data: 'iVBORw0' }

describe('§8 /plan', () => {
  it('R53: name, description and hint', () => {
    const { command } = createHarness().planMode
    expect([command.name, command.description, command.hint]).toEqual(['plan', 'Enter or leave plan mode', '[off|message]'])
  })

  it('R54: `off` in any case (trimmed) is the exit branch; anything else, including empty, enters', async () => {
    const h = createHarness()
    expect(await run(h, '  ')).toEqual({ kind: 'success', text: 'Plan mode on. Use /plan off to leave.' })
    expect(await run(h, ' OfF ')).toEqual({ kind: 'success', text: 'Plan mode off.' })
    expect(await run(h, '')).toEqual({ kind: 'success', text: 'Plan mode on. Use /plan off to leave.' })
    // "off" inside a message is a message.
    expect(await run(h, 'turn off the lights')).toEqual({ kind: 'success', text: 'Plan mode is already on. Use /plan off to leave.' })
    expect(h.steered.map((m) => m.content)).toEqual([[{ type: 'text', text: 'turn off the lights' }]])
  })

  it('R54: an empty attachments array counts as none', async () => {
    const h = createHarness()
    expect(await run(h, 'off', [])).toEqual({ kind: 'success', text: 'Plan mode is already inactive.' })
    expect(await run(h, '', [])).toEqual({ kind: 'success', text: 'Plan mode on. Use /plan off to leave.' })
    expect(h.steered).toEqual([])
  })

  it('R55: exit branch texts for every set(false) outcome', async () => {
    const h = createHarness()
    expect(await run(h, 'off')).toEqual({ kind: 'success', text: 'Plan mode is already inactive.' })
    await h.planMode.set(h.agent, true)
    expect(await run(h, 'off')).toEqual({ kind: 'success', text: 'Plan mode off.' })
    h.startTurn()
    await h.planMode.set(h.agent, true)
    expect(await run(h, 'off')).toEqual({ kind: 'success', text: 'Plan mode entry cancelled.' })
    await h.planMode.set(h.agent, true)
    await h.step()
    expect(await run(h, 'OFF')).toEqual({ kind: 'success', text: 'Leaving plan mode (applies from the next step).' })
    expect(await run(h, 'off')).toEqual({ kind: 'success', text: 'Leaving plan mode (applies from the next step).' })
    expect(h.steered).toEqual([])
  })

  it('R55: attachments with /plan off fail first, changing nothing', async () => {
    const h = createHarness()
    await h.planMode.set(h.agent, true)
    expect(await run(h, 'off', [IMAGE])).toEqual({ kind: 'error', text: 'Image attachments cannot accompany /plan off.' })
    expect(h.planMode.get(h.agent)).toEqual({ active: true })
    expect(h.steered).toEqual([])
  })

  it('R56: entry branch texts for every set(true) outcome', async () => {
    const h = createHarness()
    expect(await run(h, '')).toEqual({ kind: 'success', text: 'Plan mode on. Use /plan off to leave.' })
    expect(await run(h, '')).toEqual({ kind: 'success', text: 'Plan mode is already on. Use /plan off to leave.' })
    h.startTurn()
    await h.planMode.set(h.agent, false)
    expect(await run(h, '')).toEqual({ kind: 'success', text: 'Plan mode exit cancelled. Use /plan off to leave.' })
    await h.planMode.set(h.agent, false)
    await h.step()
    const queued = 'Entering plan mode (applies from the next step). Use /plan off to leave.'
    expect(await run(h, '')).toEqual({ kind: 'success', text: queued })
    expect(await run(h, '')).toEqual({ kind: 'success', text: queued })
  })

  it('R56: set first, then steer one user message: attachments in order, then the text', async () => {
    const h = createHarness()
    let stateWhenSteered: unknown
    h.agent.steer = (message) => {
      stateWhenSteered = h.planMode.get(h.agent)
      h.steered.push(message)
    }
    const second = { ...IMAGE, data: 'R0lGOD' }
    expect(await run(h, '  draft the migration ', [IMAGE, second])).toEqual({
      kind: 'success',
      text: 'Plan mode on. Use /plan off to leave.',
    })
    expect(stateWhenSteered).toEqual({ active: true })
    expect(h.steered).toEqual([
      {
        id: expect.any(String),
        role: 'user',
        content: [IMAGE, second, { type: 'text', text: 'draft the migration' }],
        source: { kind: 'user' },
      },
    ])
    // Attachments alone: no text block.
    await run(h, '', [IMAGE])
    expect(h.steered[1]!.content).toEqual([IMAGE])
  })

  it('R57: a rejected set gives "Plan mode could not be changed: <message>" and does not steer', async () => {
    const h = createHarness()
    h.log.failNext('plan/mode', 'throw')
    expect(await run(h, 'draft it')).toEqual({ kind: 'error', text: 'Plan mode could not be changed: append of plan/mode failed' })
    expect(h.steered).toEqual([])
    expect(h.planMode.get(h.agent)).toEqual({ active: false })
  })

  it('R57: a message for an agent without steer fails first, changing nothing', async () => {
    const h = createHarness()
    delete h.agent.steer
    expect(await run(h, 'draft it')).toEqual({ kind: 'error', text: 'This agent cannot take a plan message; use /plan alone.' })
    expect(await run(h, '', [IMAGE])).toEqual({ kind: 'error', text: 'This agent cannot take a plan message; use /plan alone.' })
    expect(h.planMode.get(h.agent)).toEqual({ active: false })
    expect(h.log.events).toHaveLength(0)
    // /plan alone still works.
    expect(await run(h, '')).toEqual({ kind: 'success', text: 'Plan mode on. Use /plan off to leave.' })
    expect(h.planMode.section(h.agent)).toBe(SECTION)
  })

  it('R62: a throwing steer leaves the mode changed, says so, and keeps the service usable', async () => {
    const h = createHarness()
    h.agent.steer = () => {
      throw new Error('agent busy')
    }
    expect(await run(h, 'draft it')).toEqual({
      kind: 'error',
      text: 'Plan mode on. Use /plan off to leave. The plan message could not be sent: agent busy',
    })
    expect(h.planMode.get(h.agent)).toEqual({ active: true })
    expect(h.planMode.actor(h.agent).getSnapshot().status).toBe('active')
    expect(await run(h, 'off')).toEqual({ kind: 'success', text: 'Plan mode off.' })
  })
})
