import { readFile } from 'node:fs/promises'
import { expect, it } from 'vitest'
import { createMemoryCheckpointStore, type SessionEvent } from '../src/index.js'
import { handleRequest, type EventTable } from '../examples/stateless-request.js'

/** A table in memory that counts the events each load returns. */
function memoryTable(): EventTable & { rows: SessionEvent[]; loaded: number[] } {
  const rows: SessionEvent[] = []
  const loaded: number[] = []
  return {
    rows,
    loaded,
    async after(_agentId, seq) {
      const events = rows.filter((event) => event.seq > seq)
      loaded.push(events.length)
      return events
    },
    async insert(_agentId, event) {
      if (rows.some((row) => row.seq === event.seq)) throw new Error(`seq ${event.seq} is taken`)
      rows.push(event)
    },
  }
}

it('R76: the docs/stateless-hosts.md stateless-host example serves each request from the checkpoint and the tail', async () => {
  const guide = await readFile(new URL('../docs/stateless-hosts.md', import.meta.url), 'utf8')
  const example = await readFile(new URL('../examples/stateless-request.ts', import.meta.url), 'utf8')
  expect(guide).toContain(example.trim())
  const table = memoryTable()
  const checkpoints = createMemoryCheckpointStore()

  // Request 1: a long turn in which the user switches plan mode on.
  await handleRequest('agent-1', table, checkpoints, async (planMode, agent) => {
    await agent.session.append('turn/start', {})
    for (let i = 0; i < 120; i++) await agent.session.append('message', { text: `m${i}` })
    expect(await planMode.set(agent, true)).toBe('queued')
    expect((await planMode.stepBoundary(agent)).section).toBe('Plan mode is on.')
    await agent.session.append('turn/end', {})
  })
  expect(table.rows.map((row) => row.seq)).toEqual(Array.from({ length: 123 }, (_, i) => i + 1))
  expect(checkpoints.saved.get('agent-1')).toMatchObject({ seq: 123, type: 'turn/end', projection: { active: true } })

  // Request 2, a fresh process: only the event the checkpoint ends at and those after it are loaded (none).
  const state = await handleRequest('agent-1', table, checkpoints, async (planMode, agent) => {
    await agent.session.append('turn/start', {})
    return planMode.get(agent)
  })
  expect(state).toEqual({ active: true })
  expect(table.loaded.at(-1)).toBe(1)
  expect(table.rows.at(-1)).toEqual({ seq: 124, type: 'turn/start', data: {} })

  // Request 3: a checkpoint it cannot use makes it load the whole log.
  await checkpoints.save('agent-1', { ...checkpoints.saved.get('agent-1')!, version: 'something else' })
  const again = await handleRequest('agent-1', table, checkpoints, async (planMode, agent) => {
    expect(await planMode.set(agent, false)).toBe('queued') // the turn opened in request 2 is still open
    return planMode.get(agent)
  })
  expect(again).toEqual({ active: true, pending: false })
  expect(table.loaded.at(-1)).toBe(124)
})
