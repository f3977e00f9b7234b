/**
 * The commands the CLI suggests after a session ("inspect it: …") work when pasted, however the
 * CLI was started: from a clone (no `plan-mode` on the PATH: `npm run cli -- …`), from a
 * project's local install (`npx plan-mode …`), from a global install (`plan-mode …`).
 */
import { execFile } from 'node:child_process'
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { cliCommand, currentInvocation, inspectHint, type Invocation } from '../apps/cli/invocation.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url)).replace(/\/$/, '')

describe('the inspect hint names the command as it was run', () => {
  const clone = (userCwd: string): Invocation => ({ script: '/src/app/apps/cli/bin.ts', userCwd, cwd: '/src/app' })

  it('from a clone (npm start, npm run cli): npm run cli -- inspect <absolute path>', () => {
    expect(inspectHint('/tmp/x/session.jsonl', clone('/src/app'))).toBe('inspect it: npm run cli -- inspect /tmp/x/session.jsonl')
    // npm runs scripts in the package root: a relative log path is made absolute, so the hint works from any folder of the clone.
    expect(inspectHint('logs/s.jsonl', clone('/src/app/test'))).toBe('inspect it: npm run cli -- inspect /src/app/logs/s.jsonl')
  })

  it('from a clone, run from outside it (npm --prefix): the hint names the clone', () => {
    expect(inspectHint('/tmp/x/session.jsonl', clone('/home/me'))).toBe('inspect it: npm --prefix /src/app run cli -- inspect /tmp/x/session.jsonl')
  })

  it('from a local install (node_modules/.bin/plan-mode): npx plan-mode inspect <path>', () => {
    const local = { script: '/home/me/proj/node_modules/.bin/plan-mode', userCwd: '/home/me/proj', cwd: '/home/me/proj' }
    expect(inspectHint('logs/s.jsonl', local)).toBe('inspect it: npx plan-mode inspect logs/s.jsonl')
  })

  it('from a global install, or main() embedded in another program: plan-mode inspect <path>', () => {
    expect(inspectHint('logs/s.jsonl', { script: '/usr/local/bin/plan-mode', userCwd: '/home/me', cwd: '/home/me' })).toBe('inspect it: plan-mode inspect logs/s.jsonl')
    expect(inspectHint('/tmp/s.jsonl', { script: '/x/node_modules/vitest/vitest.mjs', userCwd: '/x', cwd: '/x' })).toBe('inspect it: plan-mode inspect /tmp/s.jsonl')
    expect(inspectHint('/tmp/s.jsonl', { script: undefined, userCwd: '/x', cwd: '/x' })).toBe('inspect it: plan-mode inspect /tmp/s.jsonl')
  })

  it('from a build run by its path (node dist/cli.js): node dist/cli.js inspect <path>', () => {
    expect(inspectHint('s.jsonl', { script: '/src/app/dist/cli.js', userCwd: '/src/app', cwd: '/src/app' })).toBe('inspect it: node dist/cli.js inspect s.jsonl')
    expect(inspectHint('/tmp/s.jsonl', { script: '/src/app/dist/cli.js', userCwd: '/elsewhere', cwd: '/elsewhere' })).toBe('inspect it: node /src/app/dist/cli.js inspect /tmp/s.jsonl')
  })

  it('the user’s folder is npm’s INIT_CWD only under an npm script (run in its package’s root), not in a process that inherited npm’s variables', () => {
    const cwd = process.cwd()
    const npmScript = { npm_lifecycle_event: 'cli', INIT_CWD: '/home/me/clone/test', npm_package_json: join(cwd, 'package.json') }
    expect(currentInvocation(npmScript)).toMatchObject({ userCwd: '/home/me/clone/test', cwd })
    expect(currentInvocation({ ...npmScript, npm_package_json: '/somewhere/else/package.json' })).toMatchObject({ userCwd: cwd, cwd })
    expect(currentInvocation({})).toMatchObject({ userCwd: cwd, cwd })
  })

  it('quotes what a shell would split or expand', () => {
    expect(cliCommand(['inspect', "/tmp/my logs/it's.jsonl"], new Set([1]), clone('/src/app'))).toBe("npm run cli -- inspect '/tmp/my logs/it'\\''s.jsonl'")
    expect(cliCommand(['inspect', '/tmp/$HOME.jsonl'], new Set([1]), { script: '/usr/bin/plan-mode', userCwd: '/', cwd: '/' })).toBe("plan-mode inspect '/tmp/$HOME.jsonl'")
  })
})

/** Runs a command line in a shell; resolves with its exit code and output. */
function sh(command: string, cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('sh', ['-c', command], { cwd, timeout: 100_000 /* a hang guard */, env: { ...process.env, NO_COLOR: '1' } }, (error, stdout, stderr) =>
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    )
  })
}

/** The demo's hint line, run as printed from `cwd`: its exit code and whether it printed the log's table. */
async function demoThenHint(demo: string, cwd: string): Promise<{ hint: string; code: number; table: boolean }> {
  const ran = await sh(demo, cwd)
  expect(ran).toMatchObject({ code: 0, stderr: '' })
  const hint = /^inspect it: (.*)$/m.exec(ran.stdout)?.[1] ?? ''
  const inspected = await sh(hint, cwd)
  return { hint, code: inspected.code, table: inspected.stdout.includes('seq  type') && inspected.stdout.includes('Plan reviews:') }
}

describe('the hint works when pasted', () => {
  it('npm run cli -- demo in a clone prints npm run cli -- inspect <log>, which runs, from the clone and from outside it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'plan-mode-hint-'))
    const inside = join(dir, 'inside.jsonl')
    const outside = join(dir, 'outside.jsonl')
    const [fromClone, fromOutside] = await Promise.all([
      demoThenHint(`npm run --silent cli -- demo --no-color --log ${inside}`, join(ROOT, 'test')),
      demoThenHint(`npm --prefix ${ROOT} run --silent cli -- demo --no-color --log ${outside}`, dir),
    ])
    expect(fromClone).toEqual({ hint: `npm run cli -- inspect ${inside}`, code: 0, table: true })
    expect(fromOutside).toEqual({ hint: `npm --prefix ${ROOT} run cli -- inspect ${outside}`, code: 0, table: true })
  })
})
