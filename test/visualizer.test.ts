/**
 * The visualizer in a real browser: Debian's headless Chromium (CI installs it; there is no
 * downloaded browser) against a live server, fed by a scripted agent that runs the real library
 * and reports through the WebSocket inspector, as a host would.
 */
import { mkdir } from 'node:fs/promises'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createMemorySessionLog, type PlanAgent, type PlanMode, type ReviewAnswer, type ReviewChannel } from '../src/index.js'
import { createVisiblePlanMode } from '../visualizer/examples/visible-plan-mode.js'
import { start, type Visualizer } from '../visualizer/server.js'
import { launchChromium } from './fixtures/browser.js'

const ARTIFACTS = new URL('./artifacts/', import.meta.url)
const PLAN_V1 = '# Ship <script>window.__xss = 1</script> safely\n\n1. Render <img src=x onerror="window.__xss = 2"> as text.'
const PLAN_V2 = '# Ship safely (v2)\n\n1. Render plans as text.\n2. Test it in a browser.'

let browser: Browser
let page: Page
let visualizer: Visualizer
let visible: ReturnType<typeof createVisiblePlanMode>
let planMode: PlanMode
const agent: PlanAgent = { id: 'agent-1', session: createMemorySessionLog() }
/** The review the agent waits on: the test answers it. */
const reviews: ((answer: ReviewAnswer) => void)[] = []
const review: ReviewChannel = { ask: () => new Promise((resolve) => reviews.push(resolve)) }

const state = (path: string) => page.locator(`#chart g.state[data-state="${path}"]`)
/** Waits until exactly these states (of those named) are highlighted. */
async function expectActive(active: string[], inactive: string[] = []): Promise<void> {
  for (const path of active) await expect.poll(() => state(path).getAttribute('class'), { timeout: 5000 }).toMatch(/\bactive\b/)
  for (const path of inactive) await expect.poll(() => state(path).getAttribute('class'), { timeout: 5000 }).not.toMatch(/\bactive\b/)
}
const modeLabel = () => page.locator('#agents button[data-agent-id="agent-1"] .mode-label').textContent()

beforeAll(async () => {
  await mkdir(ARTIFACTS, { recursive: true })
  visualizer = await start({ port: 0 })
  // The README's example (visualizer/examples/visible-plan-mode.ts), pointed at this server.
  visible = createVisiblePlanMode('PLAN', { review }, visualizer.inspectUrl)
  planMode = visible.planMode
  visible.show(agent)
  // Debian's Chromium, else the one shipped in an npm package; never skipped (fixtures/browser.ts).
  browser = await launchChromium()
  page = await browser.newPage({ viewport: { width: 1600, height: 1000 } })
  // The page must need nothing but its own server.
  await page.route((url) => url.origin !== new URL(visualizer.url).origin, (route) => route.abort())
  await page.goto(visualizer.url)
})

afterAll(async () => {
  await visible?.close()
  await browser?.close()
  await visualizer?.close()
})

describe('visualizer in Chromium', () => {
  it('lists the agents with their modes and draws the selected one’s chart, parallel regions as regions', async () => {
    await page.locator('#agents button[data-agent-id="agent-1"]').waitFor()
    expect(await modeLabel()).toBe('inactive')
    // A second agent joins the list; the first stays selected.
    const other: PlanAgent = { id: 'agent-2', session: createMemorySessionLog([{ type: 'plan/mode', data: { active: true } }]) }
    visible.show(other)
    await expect.poll(() => page.locator('#agents button[data-agent-id="agent-2"] .mode-label').textContent()).toBe('active')
    expect(await page.locator('#agents button[aria-current="true"]').getAttribute('data-agent-id')).toBe('agent-1')
    await page.locator('#chart[data-layout="done"]').waitFor()
    for (const region of ['mode', 'turn', 'review', 'intent']) expect(await state(region).getAttribute('class')).toContain('region')
    await expectActive(['mode.inactive', 'turn.idle', 'review.idle', 'intent.logged'], ['mode.active'])
  })

  it('the highlight moves to mode.active after /plan', async () => {
    expect(await planMode.command.run({ agent, rawInput: '' })).toMatchObject({ text: 'Plan mode on. Use /plan off to leave.' })
    await expectActive(['mode.active'], ['mode.inactive'])
    await expect.poll(modeLabel).toBe('active')
  })

  it('an open review shows the plan as text: markup in a plan never runs', async () => {
    agent.session.append('turn/start', {})
    await planMode.stepBoundary(agent)
    const call = planMode.exitTool.execute({ plan: PLAN_V1 }, { agent })
    await expectActive(['review.open', 'turn.open'], ['review.idle'])
    await expect.poll(modeLabel).toBe('active · reviewing')
    await expect.poll(() => page.locator('#open-review pre').textContent()).toBe(PLAN_V1)
    reviews.shift()!({ answers: [{ id: 'plan-review', selected: ['Keep planning'], custom: 'Explain <b>why</b>.' }] })
    await expect(call).rejects.toThrow('The user chose to keep planning; their feedback: Explain <b>why</b>.')

    const v1 = page.locator('#reviews li.review[data-version="1"]')
    await expect.poll(() => v1.getAttribute('data-outcome')).toBe('keep-planning')
    expect(await v1.locator('.title').textContent()).toBe('Ship <script>window.__xss = 1</script> safely')
    expect(await v1.locator('pre').textContent()).toBe(PLAN_V1)
    expect(await v1.locator('.feedback').textContent()).toBe('Feedback: Explain <b>why</b>.')
    expect(await page.locator('#reviews script, #reviews img, #reviews b, #open-review script').count()).toBe(0)
    expect(await page.evaluate(() => (window as { __xss?: number }).__xss)).toBeUndefined()
  })

  it('after approval the intent waits to leave, and the next step boundary moves the mode back to inactive', async () => {
    const call = planMode.exitTool.execute({ plan: PLAN_V2 }, { agent })
    await expectActive(['review.open'])
    await expect.poll(() => page.locator('#reviews li.review').count()).toBe(1)
    await page.locator('#chart').screenshot({ path: new URL('visualizer-chart.png', ARTIFACTS).pathname })
    await page.screenshot({ path: new URL('visualizer.png', ARTIFACTS).pathname })
    reviews.shift()!({ answers: [{ id: 'plan-review', selected: ['Approve'] }] })
    await expect(call).resolves.toEqual({ approved: true })
    await expectActive(['intent.pending.leaving', 'mode.active', 'review.idle'], ['intent.logged'])
    await expect.poll(modeLabel).toBe('active · pending leaving')

    await planMode.stepBoundary(agent)
    await expectActive(['mode.inactive', 'intent.logged'], ['mode.active', 'intent.pending.leaving'])
    await expect.poll(modeLabel).toBe('inactive')
    await expect.poll(() => page.locator('#reviews li.review[data-version="2"]').getAttribute('data-outcome')).toBe('approved')
  })

  it('scrubbing the timeline shows the chart as it was, and Back to live returns', async () => {
    agent.session.append('turn/end', {})
    await expectActive(['turn.idle'], ['turn.open'])
    // The chart's step that followed /plan's plan/mode: plan mode was on there, though it is off now.
    await page.locator('#timeline li.transition button', { hasText: 'LOG.PLAN_MODE' }).first().click()
    await expectActive(['mode.active', 'turn.idle'], ['mode.inactive'])
    await expect.poll(() => page.locator('#cursor-banner').isVisible()).toBe(true)
    expect(await page.locator('#reviews li.review').count()).toBe(0)

    // The slider goes further back, to the actor's start.
    await page.locator('#scrub').fill('0')
    await expectActive(['mode.inactive'], ['mode.active'])
    await page.screenshot({ path: new URL('visualizer-scrubbed.png', ARTIFACTS).pathname })

    await page.locator('#live').click()
    await expect.poll(() => page.locator('#cursor-banner').isVisible()).toBe(false)
    await expectActive(['mode.inactive', 'turn.idle'])
    expect(await page.locator('#reviews li.review').count()).toBe(2)
  })

  it('demo mode: the buttons drive a simulated agent through /plan, Keep planning and Approve', async () => {
    const demo = await start({ port: 0, demo: { stepDelayMs: 10 } })
    const demoPage = await browser.newPage({ viewport: { width: 1600, height: 1000 } })
    try {
      await demoPage.goto(demo.url)
      const demoState = (path: string) => demoPage.locator(`#chart g.state[data-state="${path}"]`)
      await demoPage.locator('#chart[data-layout="done"]').waitFor()
      expect(await demoPage.locator('#access').textContent()).toContain('demo')
      await demoPage.locator('button[data-command="/plan"]').click()
      await demoPage.locator('button[data-command="approve"]:not([disabled])').waitFor()
      await expect.poll(() => demoState('review.open').getAttribute('class')).toMatch(/\bactive\b/)
      await demoPage.locator('#feedback').fill('Add a rollback step.')
      await demoPage.locator('button[data-command="keep-planning"]').click()
      await expect.poll(() => demoPage.locator('#reviews li.review[data-version="1"] .feedback').textContent()).toBe('Feedback: Add a rollback step.')
      await demoPage.locator('button[data-command="approve"]:not([disabled])').waitFor()
      await demoPage.locator('button[data-command="approve"]').click()
      await expect.poll(() => demoPage.locator('#reviews li.review[data-version="2"]').getAttribute('data-outcome')).toBe('approved')
      await expect.poll(() => demoState('mode.inactive').getAttribute('class')).toMatch(/\bactive\b/)
      await expect.poll(() => demoPage.locator('#demo-status').textContent()).toBe('Approved: the agent carries out the plan.')
      await demoPage.screenshot({ path: new URL('visualizer-demo.png', ARTIFACTS).pathname })
    } finally {
      await demoPage.close()
      await demo.close()
    }
  })

  it('works at 390 px and 1440 px wide: no sideways scroll, the chart keeps its size, every panel shows', async () => {
    for (const width of [390, 1440]) {
      const narrow = await browser.newPage({ viewport: { width, height: 844 } })
      try {
        await narrow.goto(visualizer.url)
        await narrow.locator('#chart[data-layout="done"]').waitFor()
        await narrow.locator('#agents button[data-agent-id="agent-1"]').waitFor()
        const size = await narrow.evaluate(() => {
          const box = (selector: string) => document.querySelector(selector)!.getBoundingClientRect()
          return {
            scrollWidth: document.documentElement.scrollWidth,
            chart: { width: box('#chart').width, height: box('#chart').height },
            timeline: box('#timeline-panel').width,
            reviews: box('#reviews-panel').width,
            title: box('#chart-title').bottom <= box('#timeline-panel').top || box('#chart-title').right <= box('#timeline-panel').left,
          }
        })
        expect(size.scrollWidth).toBeLessThanOrEqual(width)
        expect(size.chart.width).toBeGreaterThan(width * 0.8 > 1000 ? 500 : width * 0.8)
        expect(size.chart.height).toBeGreaterThan(250)
        expect(size.timeline).toBeGreaterThan(200)
        expect(size.reviews).toBeGreaterThan(200)
        expect(size.title).toBe(true) // the chart's title never overlaps the timeline
        await narrow.screenshot({ path: new URL(`visualizer-${width}.png`, ARTIFACTS).pathname, fullPage: width < 760 })
      } finally {
        await narrow.close()
      }
    }
  })
})
