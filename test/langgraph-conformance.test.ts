import { MemorySaver } from '@langchain/langgraph'
import { conformanceSuites } from 'xstate-plan-mode/testing/langgraph'
import { describe, expect, it } from 'vitest'
import { defineDurableReviewSuite, type StockConformanceSuites } from '../src/testing/index.js'
import { SECTION } from './helpers.js'

/**
 * The durable suite of the kit, told in the result (R81, R135), on the LangGraph adapter's stock
 * driver (R152): every step, exit call and resumed call runs through the adapter's nodes in a
 * compiled graph; each restart is a new service, adapter and graph on the same checkpointer.
 */
const suites = conformanceSuites({ section: SECTION, name: 'the LangGraph adapter (stock driver)' })
defineDurableReviewSuite(suites.durable)

describe('the LangGraph stock driver', () => {
  it('R152: conformanceSuites returns the durable suite told in the result, and no channel suite', () => {
    const stock: StockConformanceSuites = suites
    expect(Object.keys(stock)).toEqual(['durable'])
    expect(suites.durable.toldInResult).toBe(true)
    expect(suites.durable.name).toBe('the LangGraph adapter (stock driver)')
    expect(conformanceSuites({ section: SECTION }).durable.name).toBe('LangGraph adapter')
  })

  it('R152: each agent is a thread of its own; a restart is a new process on the same checkpointer that reads the thread', async () => {
    const host = await suites.durable.createHost()
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
  it('R152: createCheckpointer gives each host its checkpointer, and the agents\' threads are kept there', async () => {
    const savers: MemorySaver[] = []
    const host = await conformanceSuites({ section: SECTION, createCheckpointer: () => { const saver = new MemorySaver(); savers.push(saver); return saver } }).durable.createHost()
    try {
      const agent = await host.createAgent()
      await agent.command('')
      expect(savers).toHaveLength(1)
      const threads = Object.keys(savers[0]!.storage)
      expect(threads).toHaveLength(1)
      const restarted = await agent.restart()
      expect(restarted.get()).toEqual({ active: true })
      expect(Object.keys(savers[0]!.storage)).toEqual(threads)
    } finally {
      await host.dispose?.()
    }
  })
})
