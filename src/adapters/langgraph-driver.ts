/**
 * The stock conformance driver of the LangGraph adapter (R152): the durable suite of
 * `xstate-plan-mode/testing`, told in the result (`defineDurableReviewSuite({ toldInResult: true })`),
 * run through the adapter's own nodes in a compiled graph, each "process" a new service, adapter
 * and graph on one checkpointer.
 */
import type * as LangGraph from '@langchain/langgraph'
import type * as Messages from '@langchain/core/messages'
import { PLAN_LOG_EVENTS } from '../log/kinds.js'
import { createPlanMode } from '../service.js'
import type { DurableConformanceAgent, DurableConformanceHost } from '../testing/index.js'
import type { PlanAgent } from '../types.js'
import { createLangGraphPlanMode, PLAN_GRAPH_NODES, type PlanGraphState } from './langgraph-adapter.js'

/** Options of `createLangGraphConformanceHost`. */
export interface LangGraphConformanceHostOptions {
  /** The section the host's services are configured with. */
  section: string
  /** Where the threads are kept across restarts: by default one `MemorySaver` per host. */
  checkpointer?: LangGraph.BaseCheckpointSaver
}

/**
 * A host for `defineDurableReviewSuite({ toldInResult: true, createHost })` whose agents run in a
 * LangGraph graph built from the adapter's nodes (R152): a step is a run of `plan_boundary`, the
 * model's exit call a run of `plan_tools` that pauses at `plan_review`, the waiting call's result
 * the run resumed by `resumeClosedReview`; a step is the `plan_boundary` node's run, its update
 * written as that node (`updateState(config, update, 'plan_boundary')`). Each agent is a new thread; a restart is a new service,
 * adapter and graph on the same checkpointer.
 * @throws (rejects) as `createLangGraphPlanMode` does when a peer is missing (R148).
 */
export async function createLangGraphConformanceHost(options: LangGraphConformanceHostOptions): Promise<DurableConformanceHost> {
  const lg = await import('@langchain/langgraph')
  const checkpointer = options.checkpointer ?? new lg.MemorySaver()
  const disposers = new Set<() => Promise<void>>()
  return {
    section: options.section,
    createAgent: () => driver(lg, checkpointer, options.section, globalThis.crypto.randomUUID(), disposers),
    async dispose() {
      for (const dispose of [...disposers]) await dispose()
    },
  }
}

/** One process of one agent's host: a service, the adapter and the driver's graph on `checkpointer`. */
async function driver(
  lgModule: typeof LangGraph,
  checkpointer: LangGraph.BaseCheckpointSaver,
  section: string,
  threadId: string,
  disposers: Set<() => Promise<void>>,
): Promise<DurableConformanceAgent> {
  const { StateGraph, START, END } = lgModule
  const { AIMessage } = await import('@langchain/core/messages')
  const planMode = createPlanMode({ section, review: 'durable', logger: { warn: () => {} } })
  const dispose = () => planMode.dispose()
  disposers.add(dispose)
  const lg = await createLangGraphPlanMode({ planMode })
  // The model's part is the driver's: a run with the model's exit call goes to plan_tools, any other to plan_boundary.
  const graph = new StateGraph(lg.State)
    .addNode(PLAN_GRAPH_NODES.boundary, lg.boundary)
    .addNode(PLAN_GRAPH_NODES.tools, lg.tools)
    .addNode(PLAN_GRAPH_NODES.review, lg.review)
    .addConditionalEdges(START, (state: PlanGraphState) => (lg.afterModel(state) === PLAN_GRAPH_NODES.tools ? PLAN_GRAPH_NODES.tools : PLAN_GRAPH_NODES.boundary), [
      PLAN_GRAPH_NODES.tools,
      PLAN_GRAPH_NODES.boundary,
    ])
    .addEdge(PLAN_GRAPH_NODES.boundary, END)
    .addConditionalEdges(PLAN_GRAPH_NODES.tools, lg.afterTools, { [PLAN_GRAPH_NODES.review]: PLAN_GRAPH_NODES.review, [PLAN_GRAPH_NODES.boundary]: END })
    .addEdge(PLAN_GRAPH_NODES.review, END)
    .compile({ checkpointer })
  const config = { configurable: { thread_id: threadId } }
  let agent: PlanAgent = await lg.agent(graph, config)
  /** Reads the thread again after a run: the agent's log follows the graph's. */
  const refresh = async () => {
    agent = await lg.agent(graph, config)
  }
  const toolResult = (messages: readonly Messages.BaseMessage[], callId: string) =>
    messages.find((m): m is Messages.ToolMessage => m.getType() === 'tool' && (m as Messages.ToolMessage).tool_call_id === callId)
  const textOf = (message: Messages.BaseMessage) => (typeof message.content === 'string' ? message.content : message.content.map((part) => (part as { text?: string }).text ?? '').join(''))

  return {
    events: () => agent.session.events,
    async startTurn() {
      await agent.session.append(PLAN_LOG_EVENTS.turnStart, {})
    },
    async endTurn() {
      // The run that paused at the review ended the turn already (R146).
      const last = [...agent.session.events].reverse().find((e) => e.type === PLAN_LOG_EVENTS.turnStart || e.type === PLAN_LOG_EVENTS.turnEnd)
      if (last?.type === PLAN_LOG_EVENTS.turnStart) await agent.session.append(PLAN_LOG_EVENTS.turnEnd, {})
    },
    async step({ signal } = {}) {
      // The boundary node's own run, its update written as that node writes it: a step taken in a
      // new request, whatever run the thread left paused (a run paused at a review stays there).
      const values = (await graph.getState(config)).values as PlanGraphState
      const before = new Set((values.messages ?? []).map((m) => m.id))
      try {
        const update = await lg.boundary({ ...values, messages: values.messages ?? [] }, { ...config, ...(signal ? { signal } : {}) })
        await graph.updateState(config, update, PLAN_GRAPH_NODES.boundary)
        const notices = (update.messages ?? []).filter((m) => m.getType() === 'human' && !before.has(m.id)).map(textOf)
        return { section: update.planSection ?? '', notices }
      } finally {
        await refresh()
      }
    },
    async command(rawInput) {
      const commandId = globalThis.crypto.randomUUID()
      await agent.session.append(PLAN_LOG_EVENTS.commandRun, { commandId, name: 'plan', args: rawInput })
      const result = await planMode.command.run({ agent, rawInput })
      await agent.session.append(PLAN_LOG_EVENTS.commandDone, { commandId, kind: result.kind, text: result.text })
      return result
    },
    get: () => planMode.get(agent),
    steered: () => [],
    async callExitTool(args, { signal } = {}) {
      const callId = `call-${globalThis.crypto.randomUUID()}`
      const call = new AIMessage({ content: '', tool_calls: [{ id: callId, name: planMode.exitTool.name, args: args as Record<string, unknown>, type: 'tool_call' }] })
      try {
        const out = (await graph.invoke({ messages: [call] }, { ...config, ...(signal ? { signal } : {}) })) as PlanGraphState & { __interrupt__?: { value: { reviewId: string } }[] }
        const paused = out.__interrupt__?.[0]?.value
        if (paused !== undefined) return { submitted: true, reviewId: paused.reviewId }
        const result = toolResult(out.messages, callId)
        if (result === undefined) return { error: 'the exit call got no result' }
        return result.status === 'error' ? { error: textOf(result) } : { approved: true }
      } catch (error) {
        return { error: error instanceof Error ? error.message : String(error) }
      } finally {
        await refresh()
      }
    },
    openReview: () => planMode.openReview(agent),
    async answerReview(reviewId, answer) {
      try {
        return await planMode.answerReview(agent, reviewId, answer, { toldInResult: true })
      } catch (error) {
        return { error: error instanceof Error ? error.message : String(error) }
      }
    },
    async callResult() {
      const resume = await lg.resumeClosedReview(graph, config)
      if (resume === null) throw new Error('plan-mode langgraph driver: no run waits at a closed review')
      const waiting = (await graph.getState(config)).values as PlanGraphState
      const call = [...waiting.messages].reverse().find((m): m is Messages.AIMessage => m.getType() === 'ai')?.tool_calls?.find((c) => c.name === planMode.exitTool.name)
      const out = (await graph.invoke(resume, config)) as PlanGraphState
      await refresh()
      const result = call?.id === undefined ? undefined : toolResult(out.messages, call.id)
      if (result === undefined) throw new Error('plan-mode langgraph driver: the resumed run gave the exit call no result')
      return { isError: result.status === 'error', text: textOf(result) }
    },
    async restart() {
      disposers.delete(dispose)
      await planMode.dispose()
      return driver(lgModule, checkpointer, section, threadId, disposers)
    },
  }
}
