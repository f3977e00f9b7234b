import { readFile, writeFile } from 'node:fs/promises'
import { Agent, Usage, run, tool, type AgentInputItem, type Model, type ModelRequest, type RunState } from '@openai/agents-core'
import { createPlanMode, planHistory } from 'xstate-plan-mode'
import { openJsonlSessionLog } from 'xstate-plan-mode/node'
import { withPlanMode } from 'xstate-plan-mode/openai-agents'

const SECTION = 'Plan mode is on: read the code, then present a complete plan with exit_plan_mode. Change nothing yet.'

/**
 * A coding agent on the OpenAI Agents SDK whose plan reviews outlive the process: the session log
 * (a JSONL file) holds the review, `plan.saveState`'s string holds the paused run. Each call of
 * `step` is one process: it opens the log, does one thing, saves the run, and closes.
 */
export async function step(dir: string, action: { start: string } | { approve: true } | { revise: string }): Promise<string[]> {
  const session = await openJsonlSessionLog(`${dir}/session.jsonl`)
  const planMode = createPlanMode({ section: SECTION, review: 'durable' })
  const agent = { id: 'coder', session, steer: (message: Parameters<typeof plan.steer>[0]) => plan.steer(message) }
  const files = new Map([['src/import.ts', 'export function importCsv() {}\n']])
  const readFileTool = tool({
    name: 'read_file', description: 'Reads a file of the workspace.', strict: true,
    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'], additionalProperties: false },
    execute: async (input) => files.get((input as { path: string }).path) ?? 'no such file',
  })
  const writeFileTool = tool({
    name: 'write_file', description: 'Writes a file of the workspace.', strict: true,
    parameters: { type: 'object', properties: { path: { type: 'string' }, text: { type: 'string' } }, required: ['path', 'text'], additionalProperties: false },
    execute: async (input) => {
      const { path, text } = input as { path: string; text: string }
      files.set(path, text)
      return `wrote ${path}`
    },
  })
  const plan = withPlanMode({ planMode, agent, tools: [readFileTool, writeFileTool] })
  const coder = new Agent({ name: 'coder', instructions: 'You are a careful coding agent.', model: codingModel(), tools: plan.tools })
  const lines: string[] = []
  try {
    let input: string | RunState<unknown, typeof coder>
    if ('start' in action) {
      await planMode.command.run({ agent, rawInput: '' }) // the user typed `/plan`: plan mode is on
      input = action.start
    } else {
      // Another process: the paused run from its string, the open review from the log.
      input = await plan.restoreState(coder, await readFile(`${dir}/run.json`, 'utf8'))
      const [pending] = input.getInterruptions()
      if ('approve' in action) input.approve(pending!)
      else input.reject(pending!, { message: action.revise })
    }
    const result = await plan.runTurn(() => run(coder, input, { callModelInputFilter: plan.callModelInputFilter }))
    const review = planMode.openReview(agent)
    if (review !== null) {
      await writeFile(`${dir}/run.json`, plan.saveState(result.state))
      lines.push(`review open: v${planHistory(session.events).at(-1)!.version} "${review.title}"`)
    } else {
      lines.push(`done: ${String(result.finalOutput)}`, `src/import.ts: ${files.get('src/import.ts')!.trim()}`)
    }
    lines.push(`plan mode: ${planMode.get(agent).active ? 'on' : 'off'}`)
    return lines
  } finally {
    await planMode.dispose()
    await session.close()
  }
}

/**
 * The scripted model: it reads the code, presents a plan, revises it with the user's feedback,
 * and carries it out once approved, deciding from what the adapter sent it.
 */
function codingModel(): Model {
  const reply = (request: ModelRequest): AgentInputItem[] => {
    const input = request.input as AgentInputItem[]
    const last = input.filter((item) => item.type === 'function_call_result').at(-1)
    const said = last?.type === 'function_call_result' && last.output !== null && typeof last.output === 'object' && 'text' in last.output ? last.output.text : ''
    const call = (name: string, args: unknown, id: string): AgentInputItem => ({ type: 'function_call', name, callId: id, arguments: JSON.stringify(args), status: 'completed' })
    if (last === undefined) return [call('read_file', { path: 'src/import.ts' }, 'read-1')]
    if (last.name === 'read_file') return [call('exit_plan_mode', { plan: '# CSV import\n\n1. Parse each row.\n2. Insert the rows.' }, 'plan-1')]
    if (said.startsWith('The user chose to keep planning; their feedback: ')) {
      const feedback = said.slice('The user chose to keep planning; their feedback: '.length)
      return [call('exit_plan_mode', { plan: `# CSV import\n\n1. Parse each row.\n2. Insert the rows (${feedback}).` }, 'plan-2')]
    }
    if (said.startsWith('Plan approved')) return [call('write_file', { path: 'src/import.ts', text: 'export function importCsv() { /* parse, insert in batches */ }\n' }, 'write-1')]
    return [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'The importer is written.' }] }]
  }
  return {
    getResponse: async (request) => ({ usage: new Usage(), output: reply(request) as never }),
    getStreamedResponse: () => {
      throw new Error('not streamed')
    },
  }
}
