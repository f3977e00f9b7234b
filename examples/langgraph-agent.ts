import { AIMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages'
import { tool } from '@langchain/core/tools'
import { MemorySaver, type BaseCheckpointSaver } from '@langchain/langgraph'
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { createPlanMode } from 'xstate-plan-mode'
import { createLangGraphPlanMode, type PlanGraphState } from 'xstate-plan-mode/langgraph'
import { PLAN_SECTION } from './plan-section.js'

/** The workspace the agent reads and edits (a real agent's tools touch the disk). */
export const workspace = new Map([['src/config.ts', 'export const retries = 0\n']])

const readFile = tool(async ({ path }: { path: string }) => workspace.get(path) ?? `no file ${path}`, {
  name: 'read_file',
  description: 'Read a file.',
  schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
})
const writeFile = tool(async ({ path, text }: { path: string; text: string }) => (workspace.set(path, text), `wrote ${path}`), {
  name: 'write_file',
  description: 'Write a file.',
  schema: { type: 'object', properties: { path: { type: 'string' }, text: { type: 'string' } }, required: ['path', 'text'] },
})

/** The model: `(system, messages) => AIMessage`; bind `lg.toolDefinitions` to a real chat model. */
export type Model = (system: string, messages: BaseMessage[]) => Promise<AIMessage>

/** One process of the coding agent: plan mode, the adapter and the graph, on a checkpointer that outlives it. */
export async function startCodingAgent(checkpointer: BaseCheckpointSaver, model: Model) {
  const planMode = createPlanMode({ section: PLAN_SECTION, review: 'durable' })
  const lg = await createLangGraphPlanMode({ planMode, tools: [readFile, writeFile] })
  const system = (state: PlanGraphState) => ['You are a careful coding agent.', state.planSection].filter(Boolean).join('\n\n')
  // The adapter's graph around the model node: plan_boundary (the section, the notices) → model →
  // plan_tools (every tool call, with the library's exact texts) → plan_review (interrupt() until the
  // user answers the plan) or back to plan_boundary; a reply without tool calls → plan_end → END.
  const graph = lg.graph(async (state) => ({ messages: [await model(system(state), state.messages)] })).compile({ checkpointer })
  return { planMode, lg, graph }
}

/**
 * A checkpointer that outlives the process, for the example: LangGraph's `MemorySaver` whose two
 * tables are written to a JSON file after every write and read back when a process starts. One
 * process at a time; in production use a database's saver (`PostgresSaver`).
 */
export class FileSaver extends MemorySaver {
  constructor(private readonly file: string) {
    super()
    if (existsSync(file)) {
      const bytes = (_key: string, value: unknown) => (typeof (value as { base64?: unknown } | null)?.base64 === 'string' ? new Uint8Array(Buffer.from((value as { base64: string }).base64, 'base64')) : value)
      Object.assign(this, JSON.parse(readFileSync(file, 'utf8'), bytes))
    }
  }

  override async put(...args: Parameters<MemorySaver['put']>) {
    const config = await super.put(...args)
    this.save()
    return config
  }

  override async putWrites(...args: Parameters<MemorySaver['putWrites']>) {
    await super.putWrites(...args)
    this.save()
  }

  override async deleteThread(threadId: string) {
    await super.deleteThread(threadId)
    this.save()
  }

  /** Writes both tables to a new file and renames it over the old one, so a crash leaves one or the other. */
  private save() {
    const base64 = (_key: string, value: unknown) => (value instanceof Uint8Array ? { base64: Buffer.from(value).toString('base64') } : value)
    writeFileSync(`${this.file}.new`, JSON.stringify({ storage: this.storage, writes: this.writes }, base64))
    renameSync(`${this.file}.new`, this.file)
  }
}

/** A scripted model for the example: plans in plan mode, revises on feedback, carries the plan out once approved. */
export const scriptedModel: Model = async (system, messages) => {
  const last = messages.at(-1)
  const call = (name: string, args: Record<string, unknown>) =>
    new AIMessage({ content: '', tool_calls: [{ id: `call-${messages.length}`, name, args, type: 'tool_call' }] })
  const plan = (steps: string[]) => call('exit_plan_mode', { plan: `# Retry the config load\n\n${steps.map((s, i) => `${i + 1}. ${s}`).join('\n')}` })
  if (ToolMessage.isInstance(last) && last.name === 'exit_plan_mode') {
    if (last.status === 'error') return plan(['Set retries to 3 in src/config.ts.', 'Log each retry.']) // revised with the feedback
    return call('write_file', { path: 'src/config.ts', text: 'export const retries = 3 // each retry is logged\n' })
  }
  if (ToolMessage.isInstance(last) && last.name === 'write_file') return new AIMessage('Done: retries are 3, and each one is logged.')
  if (system.includes(PLAN_SECTION)) {
    if (ToolMessage.isInstance(last) && last.name === 'read_file') return plan(['Set retries to 3 in src/config.ts.'])
    return call('read_file', { path: 'src/config.ts' })
  }
  return new AIMessage('Turn plan mode on with /plan, and I will plan first.')
}
