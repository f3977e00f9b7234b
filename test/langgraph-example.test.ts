import { HumanMessage } from '@langchain/core/messages'
import { Command, MemorySaver } from '@langchain/langgraph'
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { scriptedModel, startCodingAgent, workspace } from '../examples/langgraph-agent.js'
import { PLAN_MODE_TEXTS } from '../src/index.js'

/** examples/langgraph-agent.ts, as docs/langgraph.md walks through it. */
const GUIDE = readFileSync(new URL('../docs/langgraph.md', import.meta.url), 'utf8')

const ROOT = fileURLToPath(new URL('..', import.meta.url))

/** Runs examples/langgraph-process.ts as a Node process of its own; resolves its exit code and output. */
async function hostProcess(command: string, file: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', './apps/shared/register.mjs', 'examples/langgraph-process.ts', command, file], { cwd: ROOT })
  try {
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk) => (stdout += chunk))
    child.stderr.on('data', (chunk) => (stderr += chunk))
    const code = await new Promise<number | null>((resolve, reject) => {
      child.on('error', reject)
      child.on('close', resolve)
    })
    return { code, stdout, stderr }
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  }
}

type Paused = { messages: { content: unknown }[]; __interrupt__?: { value: { reviewId: string; plan: string; version: number } }[] }

describe('examples/langgraph-agent.ts', () => {
  it('R146, R145: plans, revises with feedback, and, approved through a new service and graph on the same checkpointer, carries the plan out', async () => {
    const checkpointer = new MemorySaver()
    const thread = { configurable: { thread_id: 'retries' } }
    const first = await startCodingAgent(checkpointer, scriptedModel)
    // /plan between turns, as the guide's host does.
    const agent = await first.lg.agent(first.graph, thread)
    expect((await first.planMode.command.run({ agent, rawInput: '' })).text).toBe('Plan mode on. Use /plan off to leave.')
    const v1 = (await first.graph.invoke({ messages: [new HumanMessage('Make the config load retry.')] }, thread)) as Paused
    expect(v1.__interrupt__![0]!.value.plan).toBe('# Retry the config load\n\n1. Set retries to 3 in src/config.ts.')
    const feedback = { reviewId: v1.__interrupt__![0]!.value.reviewId, answers: [{ id: 'plan-review', selected: ['Keep planning'], custom: 'Also log each retry.' }] }
    const v2 = (await first.graph.invoke(new Command({ resume: feedback }), thread)) as Paused
    expect(v2.__interrupt__![0]!.value.plan).toContain('2. Log each retry.')
    expect(workspace.get('src/config.ts')).toBe('export const retries = 0\n')
    await first.planMode.dispose() // the process ends; the review waits in the checkpoint

    const second = await startCodingAgent(checkpointer, scriptedModel)
    const { reviewId } = second.planMode.openReview(await second.lg.agent(second.graph, thread))!
    const done = (await second.graph.invoke(new Command({ resume: { reviewId, answers: [{ id: 'plan-review', selected: ['Approve'] }] } }), thread)) as Paused
    expect(done.messages.map((m) => m.content)).toContain(PLAN_MODE_TEXTS.tool.result)
    expect(done.messages.at(-1)!.content).toBe('Done: retries are 3, and each one is logged.')
    expect(workspace.get('src/config.ts')).toBe('export const retries = 3 // each retry is logged\n')
    const after = await second.lg.agent(second.graph, thread)
    expect(second.planMode.get(after)).toEqual({ active: false })
    await second.planMode.dispose()
    expect(GUIDE).toContain(readFileSync(new URL('../examples/langgraph-agent.ts', import.meta.url), 'utf8').trim())
  })
  it('R146, R145: the review left waiting by one Node process is answered in another, on a checkpoint file (examples/langgraph-process.ts)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'plan-mode-langgraph-example-'))
    try {
      const file = join(dir, 'checkpoints.json')
      expect(await hostProcess('plan', file)).toEqual({
        code: 0,
        stdout: [
          'Plan mode on. Use /plan off to leave.',
          JSON.stringify('# Retry the config load\n\n1. Set retries to 3 in src/config.ts.'),
          JSON.stringify('# Retry the config load\n\n1. Set retries to 3 in src/config.ts.\n2. Log each retry.'),
          '',
        ].join('\n'),
        stderr: '',
      })
      expect(await hostProcess('approve', file)).toEqual({
        code: 0,
        stdout: ['Done: retries are 3, and each one is logged.', JSON.stringify('export const retries = 3 // each retry is logged\n'), '{"active":false}', ''].join('\n'),
        stderr: '',
      })
      expect(GUIDE).toContain(readFileSync(new URL('../examples/langgraph-process.ts', import.meta.url), 'utf8').trim())
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
