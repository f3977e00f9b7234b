/**
 * A LangGraph.js coding agent for the langgraph tests: the adapter's nodes around a scripted
 * model node, on a checkpointer the test gives (a restart is a new service and a new graph on the
 * same checkpointer).
 */
import { AIMessage, type BaseMessage } from '@langchain/core/messages'
import { tool, type StructuredToolInterface } from '@langchain/core/tools'
import { MemorySaver, type BaseCheckpointSaver } from '@langchain/langgraph'
import { createLangGraphPlanMode, type LangGraphPlanMode, type PlanGraphState, type PlanModelNode } from '../src/adapters/langgraph.js'
import { createPlanMode, type PlanMode } from '../src/index.js'
import { SECTION } from './helpers.js'

/** What the scripted model saw at one call: the system prompt's plan part and the messages. */
export interface ModelCall {
  readonly section: string
  readonly active: boolean
  readonly messages: readonly BaseMessage[]
}

/** A scripted model: each call answers with the next reply (a function of what it sees). */
export type Reply = (seen: ModelCall) => AIMessage

/** The agent's one host tool: reads a file from a fixed table; an unknown path fails. */
export const readFile = tool(
  async ({ path }: { path: string }) => {
    const files: Record<string, string> = { 'src/config.ts': 'export const retries = 3\n' }
    const text = files[path]
    if (text === undefined) throw new Error(`ENOENT: no such file, open '${path}'`)
    return text
  },
  {
    name: 'read_file',
    description: 'Read a file of the workspace.',
    schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'], additionalProperties: false },
  },
)

/** One process of the host: its service, adapter and compiled graph. */
export interface GraphHost {
  readonly planMode: PlanMode
  readonly lg: LangGraphPlanMode
  readonly graph: Awaited<ReturnType<typeof compile>>
  readonly calls: ModelCall[]
  /** Queues the model's next replies. */
  script(...replies: Reply[]): void
}

/** The plan-mode graph every LangGraph test runs: the adapter's standard graph around the model node (R165), as docs/langgraph.md wires it. */
export async function compile(lg: LangGraphPlanMode, model: PlanModelNode, checkpointer: BaseCheckpointSaver) {
  return lg.graph(model).compile({ checkpointer })
}

/** Starts one process of the host on `checkpointer` (a fresh MemorySaver by default), with the host's `tools` and the service's `limits` (R77). */
export async function startGraphHost(
  checkpointer: BaseCheckpointSaver = new MemorySaver(),
  tools: readonly StructuredToolInterface[] = [readFile],
  limits?: { maxAttachedAgents?: number },
): Promise<GraphHost> {
  const planMode = createPlanMode({ section: SECTION, review: 'durable', logger: { warn: () => {} }, ...(limits ? { limits } : {}) })
  const lg = await createLangGraphPlanMode({ planMode, tools })
  const calls: ModelCall[] = []
  const replies: Reply[] = []
  const model = async (state: PlanGraphState) => {
    const seen: ModelCall = { section: state.planSection, active: state.planActive, messages: state.messages }
    calls.push(seen)
    const reply = replies.shift()
    if (reply === undefined) throw new Error('the scripted model has no reply left')
    return { messages: [reply(seen)] }
  }
  const graph = await compile(lg, model, checkpointer)
  return { planMode, lg, graph, calls, script: (...more) => void replies.push(...more) }
}

/** A reply with text only: the turn ends. */
export const says = (text: string): Reply => () => new AIMessage(text)

/** A reply that calls one tool. */
export const calls = (name: string, args: Record<string, unknown>, id: string, text = ''): Reply => () =>
  new AIMessage({ content: text, tool_calls: [{ id, name, args, type: 'tool_call' }] })

/** A run's config for thread `id`. */
export const thread = (id: string) => ({ configurable: { thread_id: id } })
