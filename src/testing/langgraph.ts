/**
 * `xstate-plan-mode/testing/langgraph`: the stock conformance driver of the LangGraph adapter
 * (`xstate-plan-mode/langgraph`), for `@langchain/langgraph` 1.x and `@langchain/core` 1.x (peers,
 * as for the adapter). Like every stock driver of the package it exports `conformanceSuites`: the
 * suites' options, to hand to the runner's wrappers. The adapter takes durable services only (a run
 * pauses at a review with `interrupt()`), so there is no channel suite: `durable` is
 * `defineDurableReviewSuite`'s options, told in the result (R81, R135), run through the adapter's
 * own nodes in a compiled graph (R152).
 *
 * ```ts
 * import { defineDurableReviewSuite } from 'xstate-plan-mode/testing'
 * import { conformanceSuites } from 'xstate-plan-mode/testing/langgraph'
 *
 * defineDurableReviewSuite(conformanceSuites({ section: MY_SECTION }).durable)
 * ```
 *
 * @module xstate-plan-mode/testing/langgraph
 */
import { AIMessage, type BaseMessage, type ToolMessage } from '@langchain/core/messages'
import { END, MemorySaver, START, StateGraph, type BaseCheckpointSaver } from '@langchain/langgraph'
import { createLangGraphPlanMode, PLAN_GRAPH_NODES, type PlanGraphState } from '../adapters/langgraph-adapter.js'
import { PLAN_LOG_EVENTS } from '../log/kinds.js'
import { createPlanMode } from '../service.js'
import type { PlanAgent } from '../types.js'
import type { DurableConformanceAgent, DurableConformanceHost, DurableReviewSuiteOptions } from './scenarios.js'

/** Options of `conformanceSuites`: the host's own settings. */
export interface LangGraphConformanceOptions {
  /** The section the host gives `createPlanMode` (R18). */
  section: string
  /**
   * The checkpointer of each scenario's host, where its threads are kept across restarts (the
   * host's own, e.g. a `PostgresSaver`). Default: a new `MemorySaver` per host.
   */
  createCheckpointer?: () => BaseCheckpointSaver | Promise<BaseCheckpointSaver>
  /** The suite's name. Default `'LangGraph adapter'`. */
  name?: string
}

/**
 * What `conformanceSuites` returns: the durable suite only (the adapter takes no review channel).
 * It is a `StockConformanceSuites` without `channel`.
 */
export interface LangGraphConformanceSuites {
  /** The options of `defineDurableReviewSuite`, `toldInResult: true`. */
  readonly durable: DurableReviewSuiteOptions
}

/**
 * The conformance suites of the LangGraph adapter for a host's settings (R152): `durable`, the
 * options of `defineDurableReviewSuite({ toldInResult: true })`. Each scenario's host holds one
 * checkpointer; each agent is a thread of its own on it, and a restart is a new service, adapter
 * and graph on that checkpointer. A step is the `plan_boundary` node's run, its update written as
 * that node (`updateState(config, update, 'plan_boundary')`); the model's exit call a run of
 * `plan_tools` that pauses at `plan_review`; the waiting call's result the run resumed by
 * `resumeClosedReview`; `answerReview` and `dismissReview` (R136) answer with `toldInResult: true`.
 * @throws (the host's creation rejects) as `createLangGraphPlanMode` does when a peer is missing (R148).
 */
export function conformanceSuites(options: LangGraphConformanceOptions): LangGraphConformanceSuites {
  const durable: DurableReviewSuiteOptions = {
    name: options.name ?? 'LangGraph adapter',
    toldInResult: true,
    createHost: async (): Promise<DurableConformanceHost> => {
      const checkpointer = options.createCheckpointer ? await options.createCheckpointer() : new MemorySaver()
      const disposers = new Set<() => Promise<void>>()
      return {
        section: options.section,
        createAgent: () => driver(checkpointer, options.section, globalThis.crypto.randomUUID(), disposers),
        async dispose() {
          for (const dispose of [...disposers]) await dispose()
        },
      }
    },
  }
  return { durable }
}

/** One process of one agent's host: a service, the adapter and the driver's graph on `checkpointer`. */
async function driver(
  checkpointer: BaseCheckpointSaver,
  section: string,
  threadId: string,
  disposers: Set<() => Promise<void>>,
): Promise<DurableConformanceAgent> {
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
  const toolResult = (messages: readonly BaseMessage[], callId: string) =>
    messages.find((m): m is ToolMessage => m.getType() === 'tool' && (m as ToolMessage).tool_call_id === callId)
  const textOf = (message: BaseMessage) => (typeof message.content === 'string' ? message.content : message.content.map((part) => (part as { text?: string }).text ?? '').join(''))

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
    // The review UI's Dismiss: the user's dismissal, told in the waiting call's result (R136).
    async dismissReview(reviewId) {
      try {
        return await planMode.dismissReview(agent, reviewId, { toldInResult: true })
      } catch (error) {
        return { error: error instanceof Error ? error.message : String(error) }
      }
    },
    async callResult() {
      const resume = await lg.resumeClosedReview(graph, config)
      if (resume === null) throw new Error('plan-mode langgraph driver: no run waits at a closed review')
      const waiting = (await graph.getState(config)).values as PlanGraphState
      const call = [...waiting.messages].reverse().find((m): m is AIMessage => m.getType() === 'ai')?.tool_calls?.find((c) => c.name === planMode.exitTool.name)
      const out = (await graph.invoke(resume, config)) as PlanGraphState
      await refresh()
      const result = call?.id === undefined ? undefined : toolResult(out.messages, call.id)
      if (result === undefined) throw new Error('plan-mode langgraph driver: the resumed run gave the exit call no result')
      return { isError: result.status === 'error', text: textOf(result) }
    },
    async restart() {
      disposers.delete(dispose)
      await planMode.dispose()
      return driver(checkpointer, section, threadId, disposers)
    },
  }
}
