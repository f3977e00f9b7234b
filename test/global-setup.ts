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
 */
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { ensurePGliteCache } from '../apps/shared/pglite-cache.js'

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

export default async function setup(): Promise<void> {
  await Promise.all([node(['apps/web/build.mjs']), ensurePGliteCache()])
}
