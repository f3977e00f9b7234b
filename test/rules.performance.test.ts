/** §11: what the service costs per call, as behaviour (the timings are in `npm run bench`). */
import { expect, it } from 'vitest'
import { createMemorySessionLog, createPlanMode, type SessionLog } from '../src/index.js'

it('R70: after attach the log is never rescanned, and events that cannot matter never reach the actor', async () => {
  const inner = createMemorySessionLog([{ type: 'turn/start', data: {} }])
  let reads = 0
  const session: SessionLog = {
    get events() {
      reads++
      return inner.events
    },
    append: (type, data) => inner.append(type, data),
    subscribe: (listener) => inner.subscribe(listener),
  }
  let delivered = 0
  const planMode = createPlanMode(
    {
      section: 'PLAN',
      inspect: (e: { type: string; event?: { type: string } }) => {
        if (e.type === '@xstate.event' && !e.event?.type.startsWith('xstate.')) delivered++
      },
    },
  )
  const agent = { id: 'a', session }
  planMode.get(agent)
  const afterAttach = reads
  expect(await planMode.set(agent, true)).toBe('queued')
  await planMode.stepBoundary(agent)
  planMode.section(agent)
  planMode.get(agent)
  expect(reads).toBe(afterAttach)
  const before = delivered
  for (let i = 0; i < 1000; i++) inner.append('message', { i })
  expect(delivered).toBe(before)
  inner.append('turn/end', {})
  expect(delivered).toBe(before + 1)
  await planMode.dispose()
})
