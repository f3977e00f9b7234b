import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { expect, it } from 'vitest'

const root = fileURLToPath(new URL('..', import.meta.url))
const GUIDE = readFileSync(new URL('../docs/postgres.md', import.meta.url), 'utf8')
const EXAMPLE = readFileSync(new URL('../examples/many-instances.ts', import.meta.url), 'utf8')

it('docs/postgres.md shows the many-instances example verbatim', () => {
  expect(GUIDE).toContain(EXAMPLE.trim())
})

it('R84, R79, R80, R81: `npm run instances`: two Node processes on one PostgreSQL server; a /plan on one applies at the other\'s next step, a review opened on one is answered on the other and told once', async () => {
  // The script itself starts a throwaway cluster and stops it, and kills its instances if it fails.
  // Its own process group: a timeout kills the script, its two instances and its cluster at once.
  const child = spawn(process.execPath, ['--import', './apps/shared/register.mjs', 'scripts/many-instances.ts'], { cwd: root, detached: true })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk) => (stdout += chunk))
  child.stderr.on('data', (chunk) => (stderr += chunk))
  const timer = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), 100_000)
  const code = await new Promise((resolve) => child.on('exit', resolve))
  clearTimeout(timer)
  expect({ code, stderr }).toEqual({ code: 0, stderr: '' })
  expect(stdout.trim().split('\n')).toEqual([
    'A: /plan → Entering plan mode (applies from the next step). Use /plan off to leave.',
    'A: step: section on',
    'B: step: section on',
    'B: exit_plan_mode → submitted for review',
    'A: review open: "Add the audit log"',
    'A: answer → approved',
    'B: step: section off; told: The user approved your plan and plan mode is off; carry out the plan, starting now.',
  ])
})
