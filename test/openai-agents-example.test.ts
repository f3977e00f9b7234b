/**
 * examples/openai-agents-agent.ts, as docs/openai-agents.md shows it, run in three processes over
 * one session log: the plan is presented in the first, revised with the user's feedback in the
 * second, approved and carried out in the third.
 */
import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, beforeAll, expect, it } from 'vitest'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const EXAMPLE = 'examples/openai-agents-agent.ts'
let dir: string

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'plan-mode-openai-agents-'))
})
afterAll(async () => {
  await rm(dir, { recursive: true, force: true })
})

/** One process: runs the example's `step` with `action`, resolves what it printed (execFile kills it on timeout). */
async function processStep(action: unknown): Promise<string[]> {
  const script = `import { step } from './${EXAMPLE}'\nconsole.log((await step(${JSON.stringify(dir)}, ${JSON.stringify(action)})).join('\\n'))\n`
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', './apps/shared/register.mjs', '--input-type=module', '-e', script], { cwd: ROOT, timeout: 120_000 })
  return stdout.trim().split('\n')
}

it('R155, R79, R80: the guide\'s OpenAI Agents example plans, revises with feedback after a restart, and carries out the plan approved in a third process', async () => {
  const guide = await readFile(new URL('../docs/openai-agents.md', import.meta.url), 'utf8')
  expect(guide).toContain((await readFile(new URL(`../${EXAMPLE}`, import.meta.url), 'utf8')).trim())

  expect(await processStep({ start: 'Add a CSV import.' })).toEqual(['review open: v1 "CSV import"', 'plan mode: on'])
  expect(await processStep({ revise: 'in batches of 1000' })).toEqual(['review open: v2 "CSV import"', 'plan mode: on'])
  expect(await processStep({ approve: true })).toEqual([
    'done: The importer is written.',
    'src/import.ts: export function importCsv() { /* parse, insert in batches */ }',
    'plan mode: off',
  ])
  const records = (await readFile(join(dir, 'session.jsonl'), 'utf8')).trim().split('\n').map((line) => JSON.parse(line) as { type: string; data: Record<string, unknown> })
  expect(records.filter((r) => r.type === 'plan/review').map((r) => [r.data.outcome, r.data.feedback ?? null, r.data.callId ?? null])).toEqual([
    ['requested', null, 'plan-1'],
    ['keep-planning', 'in batches of 1000', null],
    ['requested', null, 'plan-2'],
    ['approved', null, null],
  ])
})
