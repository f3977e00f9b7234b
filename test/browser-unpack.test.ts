import { execFile } from 'node:child_process'
import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { launchChromium, renderedHeading } from './fixtures/browser.js'
import { afterAll, expect, it } from 'vitest'

/**
 * `npm run test:deep` only (vitest.config.ts leaves it out of `npm test`: two unpacks of the
 * bundled Chromium, about 190 MB each): two copies of the suite unpacking @sparticuz/chromium at
 * once. The package unpacks into the temp directory and takes a `chromium` file that exists for a
 * whole one, so the second process could launch the first one's half-written binary
 * (test/fixtures/browser.ts unpacks into a directory of its own, renamed into place whole).
 */
const ROOT = fileURLToPath(new URL('..', import.meta.url))
const run = promisify(execFile)
let root: string | undefined
afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true })
})

it('two processes unpacking the bundled Chromium into an empty place at once both get one whole binary, which launches and renders a page', async () => {
  root = await mkdtemp(join(tmpdir(), 'plan-mode-unpack-'))
  const unpack = () => run(process.execPath, ['--import', './apps/shared/register.mjs', 'test/fixtures/unpack-chromium-child.ts', root!], { cwd: ROOT })
  const [first, second] = await Promise.all([unpack(), unpack()])
  expect(first.stdout).toBe(second.stdout)
  expect((await readdir(root)).filter((name) => name.startsWith('plan-mode-sparticuz-chromium-'))).toEqual([first.stdout.slice(root.length + 1, -'/chromium'.length)])
  expect(await renderedHeading(await launchChromium(first.stdout))).toBe('plan mode')
})
