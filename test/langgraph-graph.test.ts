import { AIMessage, HumanMessage, ToolMessage } from '@langchain/core/messages'
import { Command, MemorySaver, StateGraph } from '@langchain/langgraph'
import { afterEach, describe, expect, it } from 'vitest'
import { PLAN_MODE_TEXTS } from '../src/index.js'
import type { PlanGraphState } from '../src/adapters/langgraph.js'
import { APPROVE, PLAN, SECTION } from './helpers.js'
import { startGraphHost, thread, type GraphHost } from './langgraph.fixture.js'

const hosts: GraphHost[] = []
afterEach(async () => {
  for (const host of hosts.splice(0)) await host.planMode.dispose()
})
async function start() {
  const host = await startGraphHost()
  hosts.push(host)
  return host
}

/** A model node that answers with text only. */
const quiet = () => ({ messages: [new AIMessage('Hello.')] })

describe('xstate-plan-mode/langgraph: lg.graph', () => {
  it('R165: lg.graph(model) is a new, uncompiled StateGraph with the standard wiring: the adapter\'s nodes around the model node, routed by afterModel and afterTools', async () => {
    const { lg } = await start()
    const graph = lg.graph(quiet)
    expect(graph).toBeInstanceOf(StateGraph)
    expect(lg.graph(quiet)).not.toBe(graph)
    const drawn = graph.compile().getGraph()
    expect(Object.keys(drawn.nodes)).toEqual(['__start__', 'plan_boundary', 'model', 'plan_tools', 'plan_review', 'plan_end', '__end__'])
    expect(drawn.edges.map((edge) => [edge.source, edge.target, edge.conditional === true])).toEqual([
      ['__start__', 'plan_boundary', false],
      ['plan_boundary', 'model', false],
      ['plan_end', '__end__', false],
      ['plan_review', 'plan_boundary', false],
      ['model', 'plan_tools', true],
      ['model', 'plan_end', true],
      ['plan_tools', 'plan_review', true],
      ['plan_tools', 'plan_boundary', true],
    ])
  })

  it('R165: a modelNode that names one of the adapter\'s nodes fails with LangGraph\'s own error', async () => {
    const { lg } = await start()
    expect(() => lg.graph(quiet, { modelNode: 'plan_tools' })).toThrow(new Error('Node `plan_tools` already present.'))
  })

  it('R165: the host names the model node (modelNode), adds its own node, and compiles with its checkpointer: a plan is reviewed, approved and carried out', async () => {
    const { lg, planMode } = await start()
    const seen: { section: string; last: string }[] = []
    const replies = [
      new AIMessage({ content: '', tool_calls: [{ id: 'call-exit-1', name: 'exit_plan_mode', args: { plan: PLAN }, type: 'tool_call' }] }),
      new AIMessage('Carried out.'),
    ]
    const agentNode = (state: PlanGraphState) => {
      const last = state.messages.at(-1)!
      seen.push({ section: state.planSection, last: typeof last.content === 'string' ? last.content : '' })
      return { messages: [replies.shift()!] }
    }
    const audited: boolean[] = []
    const saver = new MemorySaver()
    const graph = lg
      .graph(agentNode, { modelNode: 'agent' })
      .addNode('audit', (state: PlanGraphState) => (audited.push(state.planActive), {}))
      .addEdge('plan_end', 'audit')
      .compile({ checkpointer: saver })
    expect(Object.keys(graph.getGraph().nodes)).toEqual(['__start__', 'plan_boundary', 'agent', 'plan_tools', 'plan_review', 'plan_end', 'audit', '__end__'])
    await planMode.set(await lg.agent(graph, thread('g1')), true)
    const paused = (await graph.invoke({ messages: [new HumanMessage('Plan it.')] }, thread('g1'))) as PlanGraphState & { __interrupt__: { value: { reviewId: string; plan: string } }[] }
    const { reviewId, plan } = paused.__interrupt__[0]!.value
    expect(plan).toBe(PLAN)
    expect((await saver.getTuple(thread('g1')))?.checkpoint.channel_values['planLog']).toBeDefined()
    const done = await graph.invoke(new Command({ resume: { ...APPROVE, reviewId } }), thread('g1'))
    const result = done.messages.find((m) => ToolMessage.isInstance(m) && m.tool_call_id === 'call-exit-1')!
    expect(result.content).toBe(PLAN_MODE_TEXTS.tool.result)
    expect(done.messages.at(-1)!.content).toBe('Carried out.')
    expect(seen).toEqual([
      { section: SECTION, last: 'Plan it.' },
      { section: '', last: PLAN_MODE_TEXTS.tool.result },
    ])
    expect(audited).toEqual([false])
  })
})
