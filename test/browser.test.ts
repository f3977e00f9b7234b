import { existsSync } from 'node:fs'
import { afterEach, expect, it } from 'vitest'
import { chromiumPath, launchChromium, renderedHeading } from './fixtures/browser.js'

/** The browser tests run on a fresh machine: Debian's Chromium when present, else the npm one. */
const saved = process.env.PLAN_MODE_CHROMIUM
afterEach(() => {
  if (saved === undefined) delete process.env.PLAN_MODE_CHROMIUM
  else process.env.PLAN_MODE_CHROMIUM = saved
})

it('without Debian\'s Chromium the browser tests use the one shipped in @sparticuz/chromium, and it renders a page', async () => {
  process.env.PLAN_MODE_CHROMIUM = 'bundled'
  const { path, source } = await chromiumPath()
  expect(source).toBe('bundled')
  expect(existsSync(path)).toBe(true)
  expect(await renderedHeading(await launchChromium())).toBe('plan mode')
})
