/**
 * Runs once per `vitest run`, before any test file: what several files (or one file's every run)
 * would otherwise build for themselves is built here, once.
 *
 * - The web chat's page (`apps/web/dist/`), which the browser tests serve: `apps/web/build.mjs`, as
 *   `npm start` runs it, so a run whose page sources are unchanged skips the build (R111), and a
 *   build lands whole (a temp directory renamed into place) even with another run or `npm start`
 *   of this clone building at the same time.
 * - The dump of a freshly initialised PGlite data directory (apps/shared/pglite-cache.ts), which
 *   every PGlite of the tests (and `npm start`) loads instead of running initdb: made once per
 *   machine, written whole, so the files that start a PGlite at once do not each make it.
 * - The transpile cache of the TypeScript that the tests' child processes run through
 *   apps/shared/register.mjs (the CLI, the web chat's instances, scripts, fixtures): filled once,
 *   so that in a fresh clone the processes started at once do not each load `typescript` and
 *   compile the same files (a second or two of CPU each).
 * - One Chromium for the run's browser tests, launched when the first of them asks
 *   (test/fixtures/browser.ts, `chromiumBroker`), closed after the run.
 */
import { spawn } from 'node:child_process'
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { TestProject } from 'vitest/node'
import { ensurePGliteCache } from '../apps/shared/pglite-cache.js'
// @ts-expect-error: a plain ES module of Node's hooks, with no declarations
import { fillCache } from '../apps/shared/ts-loader.mjs'
import { chromiumBroker } from './fixtures/browser.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))

/** Runs `node <args>` in the repository's root; its output goes to the run's output only when it fails. */
function node(args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.on('data', (chunk: Buffer) => (output += chunk))
    child.stderr.on('data', (chunk: Buffer) => (output += chunk))
    child.on('error', reject)
    child.on('close', (code, signal) => (code === 0 ? resolve() : reject(new Error(`node ${args.join(' ')} failed (${signal ?? code}):\n${output}`))))
  })
}

/** The TypeScript files that child processes may run: the library's, the apps', the scripts' and the test fixtures'. */
async function childSources(): Promise<string[]> {
  const found = await Promise.all(
    ['src', 'apps', 'scripts', 'examples', 'test/fixtures'].map(async (dir) =>
      (await readdir(join(ROOT, dir), { recursive: true }).catch(() => [] as string[]))
        .filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts') && !file.split('/').some((part) => part === 'node_modules' || part.startsWith('dist')))
        .map((file) => join(ROOT, dir, file)),
    ),
  )
  return found.flat()
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const [broker] = await Promise.all([
    chromiumBroker(),
    node(['apps/web/build.mjs']),
    ensurePGliteCache(),
    childSources().then(fillCache as (paths: string[]) => Promise<void>),
  ])
  project.provide('chromiumBroker', broker.url)
  return () => broker.close()
}
