import { createLangGraphConformanceHost } from '../src/adapters/langgraph.js'
import { describe, expect, it } from 'vitest'
import { defineDurableReviewSuite } from '../src/testing/index.js'
import { SECTION } from './helpers.js'

/**
 * The durable suite of the kit, told in the result (R81, R135), on the LangGraph adapter's stock
 * driver (R152): every step, exit call and resumed call runs through the adapter's nodes in a
 * compiled graph; each restart is a new service, adapter and graph on the same checkpointer.
 */
defineDurableReviewSuite({
  name: 'the LangGraph adapter (stock driver)',
  toldInResult: true,
  createHost: () => createLangGraphConformanceHost({ section: SECTION }),
})

describe('the LangGraph stock driver', () => {
  it('R152: each agent is a thread of its own; a restart is a new process on the same checkpointer that reads the thread', async () => {
    const host = await createLangGraphConformanceHost({ section: SECTION })
    try {
      const one = await host.createAgent()
      const two = await host.createAgent()
      expect(await one.command('')).toEqual({ kind: 'success', text: 'Plan mode on. Use /plan off to leave.' })
      expect(two.get()).toEqual({ active: false })
      expect(two.events()).toEqual([])
      const again = await one.restart()
      expect(again.get()).toEqual({ active: true })
      expect(again.events().map((e) => e.type)).toEqual(['command/run', 'plan/mode', 'command/done'])
    } finally {
      await host.dispose?.()
    }
  })
})
