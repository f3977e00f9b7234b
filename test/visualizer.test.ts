/**
 * The visualizer in a real browser: Debian's headless Chromium (CI installs it; there is no
 * downloaded browser) against a live server, fed by a scripted agent that runs the real library
 * and reports through the WebSocket inspector, as a host would.
 */
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { WebSocket } from 'ws'
import { main } from '../apps/cli/main.js'
import { createMemorySessionLog, type PlanAgent, type PlanMode, type ReviewAnswer, type ReviewChannel } from '../src/index.js'
import { createVisiblePlanMode } from '../apps/visualizer/examples/visible-plan-mode.js'
import type { ServerMessage } from '../apps/shared/visualizer/client/protocol.js'
import { start, type Visualizer } from '../apps/shared/visualizer/server.js'
import { sharedChromium } from './fixtures/browser.js'

const ARTIFACTS = new URL('./artifacts/', import.meta.url)
const DOCS = fileURLToPath(new URL('../docs/', import.meta.url))
const PLAN_V1 = '# Ship <script>window.__xss = 1</script> safely\n\n1. Render <img src=x onerror="window.__xss = 2"> as text.'
const PLAN_V2 = '# Ship safely (v2)\n\n1. Render plans as text.\n2. Test it in a browser.'

let browser: Browser
let page: Page
/**
 * The tab where a test that needs a page of its own (another server, viewport or route) loads it,
 * one test at a time ({@link openTab}, {@link leaveTab}); its context keeps the clock in UTC. A
 * navigation costs Chromium ~0.85 s of CPU less than a new page in a context of its own (6 loads of
 * the visualizer: 15.5 s against 10–11 s, measured).
 */
let tab: Page
let visualizer: Visualizer
let visible: ReturnType<typeof createVisiblePlanMode>
let planMode: PlanMode
/** Its log starts with a first turn in the default mode, as a host logs it: so the model has been told a mode. */
const agent: PlanAgent = {
  id: 'agent-1',
  session: createMemorySessionLog([
    { type: 'turn/start', data: {} },
    { type: 'request/header', data: { step: 0 } },
    { type: 'turn/end', data: {} },
  ]),
}
/** The review the agent waits on: the test answers it. */
const reviews: ((answer: ReviewAnswer) => void)[] = []
const review: ReviewChannel = { ask: () => new Promise((resolve) => reviews.push(resolve)) }

/** The tab, sized for the test, with no route left by the one before. */
async function openTab(viewport: { width: number; height: number }): Promise<Page> {
  await tab.unrouteAll()
  await tab.setViewportSize(viewport)
  return tab
}
/** Leaves the test's page (its socket closes before its server does) and its routes. */
async function leaveTab(): Promise<void> {
  await tab.unrouteAll({ behavior: 'ignoreErrors' })
  await tab.goto('about:blank')
}

const state = (path: string) => page.locator(`#chart g.state[data-state="${path}"]`)
/** Waits until exactly these states (of those named) are highlighted. */
async function expectActive(active: string[], inactive: string[] = []): Promise<void> {
  for (const path of active) await expect.poll(() => state(path).getAttribute('class')).toMatch(/\bactive\b/)
  for (const path of inactive) await expect.poll(() => state(path).getAttribute('class')).not.toMatch(/\bactive\b/)
}
const modeLabel = () => page.locator('#agents button[data-agent-id="agent-1"] .mode-label').textContent()
/** The timeline's lines as shown: time, label. */
const timelineRows = (on: Page = page) =>
  on.locator('#timeline li button').evaluateAll((buttons) => buttons.map((button) => `${button.querySelector('.time')!.textContent} ${button.querySelector('.label')!.textContent}`))
const timelineLabels = (on: Page = page) => on.locator('#timeline li .label').allTextContents()

/**
 * What the chart's smallest and largest text measure on screen (px): each text's font size in the
 * drawing times the scale the drawing is shown at. Also the rendered height of one state's name.
 */
async function chartTextSizes(on: Page): Promise<{ smallest: number; count: number; inactiveName: number }> {
  return on.evaluate(() => {
    const svg = document.querySelector<SVGSVGElement>('#chart svg.chart')!
    const scale = svg.getBoundingClientRect().width / Number(svg.getAttribute('width'))
    const texts = Array.from(svg.querySelectorAll('text'))
    const sizes = texts.map((text) => Number.parseFloat(getComputedStyle(text).fontSize) * scale)
    const name = svg.querySelector('g.state[data-state="mode.inactive"] > text')!
    return { smallest: Math.min(...sizes), count: texts.length, inactiveName: name.getBoundingClientRect().height }
  })
}

beforeAll(async () => {
  await mkdir(ARTIFACTS, { recursive: true })
  visualizer = await start({ port: 0 })
  // The README's example (apps/visualizer/examples/visible-plan-mode.ts), pointed at this server.
  visible = createVisiblePlanMode({ section: 'PLAN', review }, visualizer.inspectUrl)
  planMode = visible.planMode
  visible.show(agent)
  // The run's one Chromium (Debian's, else the one shipped in an npm package; never skipped: fixtures/browser.ts).
  browser = await sharedChromium()
  page = await browser.newPage({ viewport: { width: 1600, height: 1000 } })
  // The page must need nothing but its own server.
  await page.route((url) => url.origin !== new URL(visualizer.url).origin, (route) => route.abort())
  await page.goto(visualizer.url)
  tab = await (await browser.newContext({ timezoneId: 'UTC' })).newPage()
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

  it('R178: a layout the server could not give (a plain-text 500) is shown as such, and asked for again on the next render', async () => {
    const retry = await openTab({ width: 1600, height: 1000 })
    try {
      let refused = 0
      await retry.route('**/api/chart/layout', (route) => (refused++, route.fulfill({ status: 500, contentType: 'text/plain', body: 'internal error' })))
      await retry.goto(visualizer.url)
      await retry.locator('#chart[data-layout="failed"]').waitFor()
      expect(await retry.locator('#chart p.hint').textContent()).toBe('The chart could not be drawn: the server answered 500 (not JSON)')
      await retry.unroute('**/api/chart/layout')
      // Any message renders again: an agent joins.
      visible.show({ id: 'agent-retry', session: createMemorySessionLog([]) })
      await retry.locator('#chart[data-layout="done"]').waitFor()
      expect(refused).toBe(1)
    } finally {
      await leaveTab()
    }
  })

  it('the highlight moves to mode.active after /plan', async () => {
    // Logged around its run as a host logs its commands (apps/cli/plan-command.ts).
    agent.session.append('command/run', { commandId: 'cmd-1', name: 'plan', args: '' })
    const result = await planMode.command.run({ agent, rawInput: '' })
    agent.session.append('command/done', { commandId: 'cmd-1', ...result })
    expect(result).toEqual({ kind: 'success', text: 'Plan mode on. Use /plan off to leave.' })
    await expectActive(['mode.active'], ['mode.inactive'])
    await expect.poll(modeLabel).toBe('active')
  })

  it('an open review shows the plan as text: markup in a plan never runs', async () => {
    agent.session.append('turn/start', {})
    await planMode.stepBoundary(agent)
    agent.session.append('request/header', { step: 0 })
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
    agent.session.append('request/header', { step: 1 })
    await expectActive(['mode.inactive', 'intent.logged'], ['mode.active', 'intent.pending.leaving'])
    await expect.poll(modeLabel).toBe('inactive')
    await expect.poll(() => page.locator('#reviews li.review[data-version="2"]').getAttribute('data-outcome')).toBe('approved')
  })

  it('R96, R97: the review history shows each plan’s version and, for v2, its line diff from v1, as text and coloured by kind', async () => {
    expect(await page.locator('#reviews li.review .version').allTextContents()).toEqual(['v1', 'v2'])
    const v1 = page.locator('#reviews li.review[data-version="1"]')
    const v2 = page.locator('#reviews li.review[data-version="2"]')
    expect(await v1.locator('.diff, .diff-none').count()).toBe(0)
    expect(await v2.locator('.diff > summary').textContent()).toBe('Changes from v1')
    expect(await v2.locator('.diff').getAttribute('open')).not.toBeNull()
    const lines = () => v2.locator('.diff-line').evaluateAll((spans) => spans.map((span) => `${(span as HTMLElement).dataset.kind} ${span.textContent}`))
    expect(await lines()).toEqual([
      'removed - # Ship <script>window.__xss = 1</script> safely',
      'added + # Ship safely (v2)',
      'same   ',
      'removed - 1. Render <img src=x onerror="window.__xss = 2"> as text.',
      'added + 1. Render plans as text.',
      'added + 2. Test it in a browser.',
    ])
    // Added lines green, removed red, kept lines muted.
    const colours = await v2.locator('.diff-line').evaluateAll((spans) =>
      Object.fromEntries(spans.map((span) => [(span as HTMLElement).dataset.kind, getComputedStyle(span).color])),
    )
    const rgb = (colour: string) => colour.match(/\d+/g)!.map(Number) as [number, number, number]
    const [ar, ag, ab] = rgb(colours.added!)
    const [rr, rg, rb] = rgb(colours.removed!)
    expect(ag > ar && ag > ab).toBe(true)
    expect(rr > rg && rr > rb).toBe(true)
    expect(colours.same).toBe('rgb(107, 112, 121)')
    // The plan's markup in a diff is text too.
    expect(await page.locator('#reviews script, #reviews img').count()).toBe(0)
    expect(await page.evaluate(() => (window as { __xss?: number }).__xss)).toBeUndefined()
    // The full plan stays one click away.
    expect(await v2.locator('pre.plan').textContent()).toBe(PLAN_V2)
  })

  it('the timeline tells the session’s story by default: mode switches, reviews opened and answered, turns; no chart internals', async () => {
    agent.session.append('turn/end', {})
    await expectActive(['turn.idle'], ['turn.open'])
    expect(await page.locator('#internals').isChecked()).toBe(false)
    expect(await page.locator('#internals-toggle').textContent()).toBe(' Show chart internals')
    const story = () =>
      page.locator('#timeline li button').evaluateAll((buttons) => buttons.map((button) => [button.querySelector('.label')!.textContent, button.querySelector('.detail')?.textContent ?? ''].join(' | ')))
    await expect.poll(story).toEqual([
      'Turn started | ',
      'Step 0 | the model works in the default mode',
      'Turn ended | ',
      'User: /plan | ',
      'Plan mode on | logged plan/mode {"active":true}',
      'Plan mode on. Use /plan off to leave. | answer to /plan',
      'Turn started | ',
      'Notice: The user switched this session to plan mode. | step 0, the model now works in plan mode',
      'Review opened | "Ship <script>window.__xss = 1</script> safely"',
      'Review answered: keep planning | "Ship <script>window.__xss = 1</script> safely" — feedback: Explain <b>why</b>.',
      'Review opened | "Ship safely (v2)"',
      'Review answered: approved | "Ship safely (v2)"',
      'Plan mode off | logged plan/mode {"active":false}',
      'Step 1 | the model works in the default mode',
      'Turn ended | ',
    ])
    const shown = (await page.locator('#timeline').textContent())!
    expect(shown).not.toContain('LOG.')
    expect(shown).not.toContain('done:')
    expect(shown).not.toContain('STEP_BOUNDARY')
  })

  it('"Show chart internals" shows the chart’s raw events and the log’s event types, and hides them again', async () => {
    await page.locator('#internals').check()
    await expect.poll(() => timelineLabels()).toEqual(expect.arrayContaining([
      'started agent-1',
      'LOG.PLAN_MODE',
      'PLAN_MODE.APPENDED',
      'LOG.TURN_START',
      'STEP_BOUNDARY',
      'REVIEW.OPEN',
      'done: review.open.undecided.reviewing',
      'plan/review keep-planning',
      'plan/mode off',
      'LOG.TURN_END',
      'turn/end',
    ]))
    expect(await page.locator('#timeline li .label', { hasText: 'Review opened' }).count()).toBe(0)
    await page.locator('#internals').uncheck()
    await expect.poll(() => timelineLabels()).toContain('Review opened')
    expect(await page.locator('#timeline').textContent()).not.toContain('LOG.')
  })

  it('scrubbing the timeline shows the chart as it was, and Back to live returns', async () => {
    // The story's "Plan mode on": plan mode was on then, though it is off now.
    await page.locator('#timeline li button').filter({ has: page.locator('.label', { hasText: /^Plan mode on$/ }) }).click()
    await expectActive(['mode.active', 'turn.idle'], ['mode.inactive'])
    await expect.poll(() => page.locator('#cursor-banner').isVisible()).toBe(true)
    expect(await page.locator('#cursor-text').textContent()).toMatch(/^Viewing the past: entry 5 of 15, Plan mode on at \d\d:\d\d:\d\d\.\d{3}$/)
    expect(await page.locator('#reviews li.review').count()).toBe(0)

    // The cursor stays put when the internals show; the slider goes further back, to the actor's start.
    await page.locator('#internals').check()
    await expect.poll(() => page.locator('#cursor-banner').isVisible()).toBe(true)
    await page.locator('#scrub').fill('0')
    await expectActive(['mode.inactive'], ['mode.active'])
    expect(await page.locator('#cursor-text').textContent()).toMatch(/^Viewing the past: entry 1 of \d+, started agent-1 at /)
    await page.screenshot({ path: new URL('visualizer-scrubbed.png', ARTIFACTS).pathname })
    await page.locator('#internals').uncheck()

    await page.locator('#live').click()
    await expect.poll(() => page.locator('#cursor-banner').isVisible()).toBe(false)
    await expectActive(['mode.inactive', 'turn.idle'])
    expect(await page.locator('#reviews li.review').count()).toBe(2)
  })

  it('at Fit every chart label renders at 10 px or more, and active states are filled solid', async () => {
    await page.locator('#chart[data-layout="done"]').waitFor()
    expect(await page.locator('#chart').getAttribute('data-zoom')).toBe('fit')
    const sizes = await chartTextSizes(page)
    expect(sizes.count).toBeGreaterThan(50)
    expect(sizes.smallest).toBeGreaterThanOrEqual(10)
    expect(sizes.inactiveName).toBeGreaterThanOrEqual(10)
    // The current leaf state: a solid fill with white text, not a faint tint.
    const look = await page.evaluate(() => {
      const group = document.querySelector('#chart g.state[data-state="mode.inactive.headerTells"]')!
      const idle = document.querySelector('#chart g.state[data-state="mode.active.headerTells"]')!
      return {
        fill: getComputedStyle(group.querySelector('rect')!).fill,
        text: getComputedStyle(group.querySelector('text')!).fill,
        idleFill: getComputedStyle(idle.querySelector('rect')!).fill,
      }
    })
    expect(look).toEqual({ fill: 'rgb(31, 95, 214)', text: 'rgb(255, 255, 255)', idleFill: 'rgb(255, 255, 255)' })
    // Whole chart: all of it in the panel (an overview), and back to Fit.
    expect(await page.locator('#zoom').textContent()).toBe('Whole chart')
    await page.locator('#zoom').click()
    expect(await page.locator('#zoom').textContent()).toBe('Fit')
    const whole = await page.evaluate(() => {
      const panel = document.querySelector('#chart')!
      const svg = panel.querySelector('svg.chart')!.getBoundingClientRect()
      return { fitsAcross: svg.width <= panel.clientWidth + 1, fitsDown: svg.height <= panel.clientHeight + 1 }
    })
    expect(whole).toEqual({ fitsAcross: true, fitsDown: true })
    await page.locator('#zoom').click()
    expect(await page.locator('#chart').getAttribute('data-zoom')).toBe('fit')
  })

  it('demo mode: the buttons drive a simulated agent through /plan, Keep planning and Approve', async () => {
    const demo = await start({ port: 0, demo: { stepDelayMs: 10 } })
    const demoPage = await openTab({ width: 1600, height: 1000 })
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
      await leaveTab()
      await demo.close()
    }
  })

  it('R100: demo mode: a click on a line of the plan under review attaches a comment; Keep planning sends the comments, which the model is told and the record keeps; a refused quote shows the library’s message', async () => {
    const demo = await start({ port: 0, demo: { stepDelayMs: 10 } })
    const demoPage = await openTab({ width: 1600, height: 1000 })
    // What the server sends every page: the log records and the demo's status.
    const log: Record<string, unknown>[] = []
    const watcher = new WebSocket(`ws://127.0.0.1:${demo.port}/view`)
    watcher.on('message', (data) => {
      const message = JSON.parse(String(data)) as ServerMessage
      if (message.kind !== 'messages') return
      for (const item of message.items) if (item.message.type === 'plan-mode.log') log.push({ type: item.message.event.type, ...(item.message.event.data as object) })
    })
    const records = (type: string) => log.filter((event) => event.type === type)
    try {
      await demoPage.goto(demo.url)
      await demoPage.locator('#chart[data-layout="done"]').waitFor()
      await demoPage.locator('button[data-command="/plan"]').click()
      await demoPage.locator('button[data-command="approve"]:not([disabled])').waitFor()
      const open = demoPage.locator('#open-review')
      const line = (n: number) => open.locator(`button.plan-line[data-line="${n}"]`)
      await line(4).waitFor()
      expect(await open.locator('.comment-hint').textContent()).toBe('Click a line to comment on it. Comments go with Keep planning.')
      // Every line with text is a button; a blank line is none.
      expect(await open.locator('button.plan-line').allTextContents()).toEqual([
        '# Tidy the session log (v1)',
        '1. Read how events are appended today.',
        '2. Add a compaction step that keeps every `plan/*` event.',
        '3. Test resume after compaction.',
      ])
      expect(await open.locator('button.plan-line').evaluateAll((lines) => lines.map((l) => (l as HTMLElement).dataset.line))).toEqual(['1', '3', '4', '5'])

      // A click opens a box under the line, focused; Escape closes it, Cancel too.
      await line(5).click()
      const box = open.locator('.comment-box input')
      expect(await box.getAttribute('aria-label')).toBe('Comment on line 5')
      expect(await box.getAttribute('placeholder')).toBe('Your comment on this line')
      await expect.poll(() => box.evaluate((input) => input === document.activeElement)).toBe(true)
      await box.press('Escape')
      await expect.poll(() => open.locator('.comment-box').count()).toBe(0)
      await line(5).click()
      await open.locator('.comment-box button.cancel-comment').click()
      await expect.poll(() => open.locator('.comment-box').count()).toBe(0)

      // Two comments (Enter, or Add comment); an empty box adds nothing; Remove takes one back.
      const text = 'Keep them <b>in order</b> <img src=x onerror="window.__xss = 3">.'
      await line(4).click()
      await box.fill(text)
      await box.press('Enter')
      await line(1).click()
      await open.locator('.comment-box button.add-comment').click()
      expect(await open.locator('.comment-box').count()).toBe(1)
      await box.fill('Name the log.')
      await open.locator('.comment-box button.add-comment').click()
      const listed = () => open.locator('.comments li .comment-text').allTextContents()
      await expect.poll(listed).toEqual([`On "Add a compaction step that keeps every \`plan/*\` event.": ${text}`, 'On "Tidy the session log (v1)": Name the log.'])
      expect(await line(4).getAttribute('class')).toContain('commented')
      // Comments go with Keep planning: Approve waits until they are gone or sent.
      expect(await demoPage.locator('button[data-command="approve"]').isDisabled()).toBe(true)
      expect(await demoPage.locator('button[data-command="approve"]').getAttribute('title')).toBe('Comments go with Keep planning: remove them to approve.')
      await open.locator('.comments li').nth(1).locator('button.remove-comment').click()
      await expect.poll(listed).toEqual([`On "Add a compaction step that keeps every \`plan/*\` event.": ${text}`])
      expect(await open.locator('script, img, b').count()).toBe(0)
      await demoPage.screenshot({ path: new URL('visualizer-comments.png', ARTIFACTS).pathname })

      await demoPage.locator('#feedback').fill('Mind resume.')
      // A comment typed but not added yet goes too.
      await line(5).click()
      await box.fill('And a crash mid-compaction.')
      await demoPage.locator('button[data-command="keep-planning"]').click()
      const comment = { quote: 'Add a compaction step that keeps every `plan/*` event.', text }
      const draft = { quote: 'Test resume after compaction.', text: 'And a crash mid-compaction.' }
      const feedback = `Mind resume.\n\nComments on the plan:\n1. On "${comment.quote}": ${text}\n2. On "${draft.quote}": ${draft.text}`
      // The record keeps the comments; the model is told R45's message with that feedback (R100).
      await expect.poll(() => records('plan/review')[0]).toEqual({ type: 'plan/review', outcome: 'keep-planning', title: 'Tidy the session log (v1)', plan: expect.any(String), feedback, comments: [comment, draft] })
      await expect.poll(() => records('tool/result')[0]).toEqual({ type: 'tool/result', tool: 'exit_plan_mode', error: `The user chose to keep planning; their feedback: ${feedback}` })
      const v1 = demoPage.locator('#reviews li.review[data-version="1"]')
      await expect.poll(() => v1.locator('.feedback').textContent()).toBe(`Feedback: ${feedback}`)

      // v2 is under review: its lines take comments again, none carried over.
      await expect.poll(() => open.locator('button.plan-line').first().textContent()).toBe('# Tidy the session log (v2)')
      expect(await open.locator('.comments').count()).toBe(0)
      await demoPage.locator('button[data-command="approve"]:not([disabled])').waitFor()
      // A page that sends a quote off the plan (not this page's doing) is refused by the library: its message shows.
      await demoPage.evaluate(() => {
        // The browser's WebSocket (the name `WebSocket` here is the test's import from ws).
        const ws = new window.WebSocket(`ws://${location.host}/view`)
        ws.addEventListener('open', () => ws.send(JSON.stringify({ kind: 'command', command: 'keep-planning', comments: [{ quote: 'Rewrite the log.', text: 'No.' }] })))
      })
      await expect.poll(() => demoPage.locator('#demo-status').textContent()).toBe('plan review comment 1 quotes text that is not in the plan: "Rewrite the log."')
      expect(await demoPage.locator('#demo-status').getAttribute('class')).toContain('error')
      expect(await demoPage.locator('button[data-command="keep-planning"]').isDisabled()).toBe(true)
      expect(records('plan/review').map((record) => record.outcome)).toEqual(['keep-planning', 'failed'])
      expect(await demoPage.locator('#reviews script, #reviews img, #reviews b').count()).toBe(0)
      expect(await demoPage.evaluate(() => (window as { __xss?: number }).__xss)).toBeUndefined()
    } finally {
      watcher.close()
      await leaveTab()
      await demo.close()
    }
  })

  it('R101, R102: demo mode: the review offers its four options as buttons; Approve in a fresh context is recorded fresh and handed off, Leave plan mode is recorded left and the agent stops; the history shows both', async () => {
    const demo = await start({ port: 0, demo: { stepDelayMs: 10 } })
    const demoPage = await openTab({ width: 1600, height: 1000 })
    const log: Record<string, unknown>[] = []
    const statuses: Extract<ServerMessage, { kind: 'demo-status' }>[] = []
    const watcher = new WebSocket(`ws://127.0.0.1:${demo.port}/view`)
    watcher.on('message', (data) => {
      const message = JSON.parse(String(data)) as ServerMessage
      if (message.kind === 'demo-status') statuses.push(message)
      if (message.kind !== 'messages') return
      for (const item of message.items) if (item.message.type === 'plan-mode.log') log.push({ type: item.message.event.type, ...(item.message.event.data as object) })
    })
    const reviewRecords = () => log.filter((event) => event.type === 'plan/review')
    const buttons = () =>
      demoPage.locator('#demo .review-button').evaluateAll((all) => all.filter((b) => !(b as HTMLButtonElement).hidden).map((b) => [(b as HTMLElement).dataset.command, b.textContent, (b as HTMLElement).title]))
    try {
      await demoPage.goto(demo.url)
      await demoPage.locator('#chart[data-layout="done"]').waitFor()
      await demoPage.locator('button[data-command="/plan"]').click()
      await demoPage.locator('button[data-command="approve-fresh"]:not([disabled])').waitFor()
      // The buttons say what the question's options say (labels, descriptions as tooltips).
      const options = statuses.at(-1)!.options!
      const byLabel = new Map(options.map((option) => [option.label, option.description]))
      expect(await buttons()).toEqual([
        ['approve', 'Approve', byLabel.get('Approve')],
        ['approve-fresh', 'Approve in a fresh context', byLabel.get('Approve in a fresh context')],
        ['keep-planning', 'Keep planning', byLabel.get('Keep planning')],
        ['leave', 'Leave plan mode', byLabel.get('Leave plan mode')],
      ])
      expect(options.map((option) => option.label).sort()).toEqual(['Approve', 'Approve in a fresh context', 'Keep planning', 'Leave plan mode'])
      // Comments go with Keep planning only: every other option waits while one is listed.
      await demoPage.locator('#open-review button.plan-line[data-line="4"]').click()
      await demoPage.locator('#open-review .comment-box input').fill('Why?')
      await demoPage.locator('#open-review .comment-box input').press('Enter')
      for (const name of ['approve', 'approve-fresh', 'leave']) expect(await demoPage.locator(`button[data-command="${name}"]`).isDisabled()).toBe(true)
      expect(await demoPage.locator('button[data-command="leave"]').getAttribute('title')).toBe('Comments go with Keep planning: remove them to leave plan mode.')
      await demoPage.locator('#open-review .comments button.remove-comment').click()
      await demoPage.locator('button[data-command="approve-fresh"]:not([disabled])').waitFor()
      await demoPage.screenshot({ path: new URL('visualizer-decisions.png', ARTIFACTS).pathname })

      await demoPage.locator('button[data-command="approve-fresh"]').click()
      await expect.poll(() => reviewRecords()[0]).toEqual({ type: 'plan/review', outcome: 'approved', title: 'Tidy the session log (v1)', plan: expect.any(String), fresh: true })
      const v1 = demoPage.locator('#reviews li.review[data-version="1"]')
      await expect.poll(() => v1.locator('.outcome').textContent()).toBe('approved (fresh context)')
      expect(await v1.getAttribute('data-fresh')).toBe('true')
      await expect.poll(() => demoPage.locator('#demo-status').textContent()).toBe('Approved in a fresh context: the agent carries out plan v1 from a context that holds only the plan and the decisions made.')
      // The fresh context's first message: the plan, handed off once (R102).
      const handoffs = log.filter((event) => event.type === 'message' && typeof event.text === 'string' && event.text.startsWith('The user approved this plan (v1) to be carried out in a fresh context'))
      expect(handoffs).toHaveLength(1)
      expect(handoffs[0]!.text).toBe(`The user approved this plan (v1) to be carried out in a fresh context: the conversation that produced it was set aside. Carry it out, starting now.\n\nThe plan:\n\n${reviewRecords()[0]!.plan}`)
      await expect.poll(() => demoPage.locator('#timeline li .label').allTextContents()).toContain('Review answered: approved (fresh context)')

      await demoPage.locator('button[data-command="/plan"]').click()
      await demoPage.locator('button[data-command="leave"]:not([disabled])').waitFor()
      await demoPage.locator('button[data-command="leave"]').click()
      await expect.poll(() => reviewRecords()[1]).toEqual({ type: 'plan/review', outcome: 'left', title: 'Tidy the session log (v1)', plan: expect.any(String) })
      await expect
        .poll(() => log.filter((event) => event.type === 'tool/result').at(-1))
        .toEqual({ type: 'tool/result', tool: 'exit_plan_mode', error: 'The user left plan mode without carrying out the plan; stop here and wait for their message.' })
      await expect.poll(() => demoPage.locator('#demo-status').textContent()).toBe('Left plan mode: the plan is not carried out; the agent stops and waits for you.')
      const left = demoPage.locator('#reviews li.review[data-outcome="left"]')
      await expect.poll(() => left.locator('.outcome').textContent()).toBe('left: plan not carried out')
      expect(await left.getAttribute('data-version')).toBe('1')
      await expect.poll(() => demoPage.locator('#chart g.state[data-state="mode.inactive"]').getAttribute('class')).toMatch(/\bactive\b/)
      expect(log.filter((event) => event.type === 'plan/mode').map((event) => event.active)).toEqual([true, false, true, false])
      await expect.poll(() => demoPage.locator('#timeline li .label').allTextContents()).toContain('Review answered: left plan mode')
      for (const name of ['approve', 'approve-fresh', 'keep-planning', 'leave']) expect(await demoPage.locator(`button[data-command="${name}"]`).isDisabled()).toBe(true)
    } finally {
      watcher.close()
      await leaveTab()
      await demo.close()
    }
  })

  it('works at 390 px and 1440 px wide: no sideways scroll, the chart keeps its size, every panel shows', async () => {
    for (const width of [390, 1440]) {
      const narrow = await openTab({ width, height: 844 })
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
        // Readable at Fit on a phone too: the chart's panel scrolls, the page does not.
        expect((await chartTextSizes(narrow)).smallest).toBeGreaterThanOrEqual(10)
        expect(await timelineLabels(narrow)).toContain('Review answered: approved')
        await narrow.screenshot({ path: new URL(`visualizer-${width}.png`, ARTIFACTS).pathname, fullPage: width < 760 })
      } finally {
        await leaveTab()
      }
    }
  })

  it('a replayed log shows the agent its log names and each event’s own time; an event without one shows its place, #n, not a time', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'plan-mode-replay-'))
    const file = join(dir, 'session.jsonl')
    const events: [string, Record<string, unknown>][] = [
      ['session/start', { agentId: 'agent-7', at: '2026-12-01T09:00:00.000Z' }],
      ['turn/start', { at: '2026-12-01T09:00:01.250Z' }],
      ['request/header', { step: 0, at: '2026-12-01T09:00:02.500Z' }],
      ['command/run', { commandId: 'c1', name: 'plan', args: '', at: '2026-12-01T09:00:03.000Z' }],
      ['command/done', { commandId: 'c1', kind: 'success', text: 'Entering plan mode (applies from the next step). Use /plan off to leave.', at: '2026-12-01T09:00:03.010Z' }],
      ['plan/mode', { active: true }],
      ['request/header', { step: 1, at: '2026-12-01T09:00:04.000Z' }],
      ['turn/end', { at: '2026-12-01T09:00:05.000Z' }],
    ]
    await writeFile(file, events.map(([type, data], i) => `${JSON.stringify({ seq: i + 1, type, data })}\n`).join(''))
    let out = ''
    const stop = new AbortController()
    const io = { stdout: { write: (text: string) => void (out += text) }, stderr: { write: () => {} }, signal: stop.signal }
    const served = main(['visualize', file, '--port', '0'], io)
    const replay = await openTab({ width: 1440, height: 900 })
    try {
      await expect.poll(() => out).toContain('Ctrl-C to stop.')
      expect(out).toContain(`Replayed 8 events of ${file} as agent "agent-7".\n`)
      await replay.goto(/Plan-mode visualizer: (\S+)/.exec(out)![1]!)
      await replay.locator('#chart[data-layout="done"]').waitFor()
      expect(await replay.locator('#agents .agent-name').allTextContents()).toEqual(['agent-7'])
      await expect.poll(() => timelineRows(replay)).toEqual([
        '09:00:00.000 session/start',
        '09:00:01.250 Turn started',
        '09:00:02.500 Step 0',
        '09:00:03.000 User: /plan',
        '09:00:03.010 Entering plan mode (applies from the next step). Use /plan off to leave.',
        '#6 Plan mode on',
        '09:00:04.000 Notice: The user switched this session to plan mode.',
        '09:00:05.000 Turn ended',
      ])
      expect(await replay.locator('#timeline .time.no-time').getAttribute('title')).toBe('event 6 of the log; the log records no time for it')
      // The chart's internals of a replay happened before they arrived: no time for them either.
      await replay.locator('#internals').check()
      await expect.poll(() => timelineLabels(replay)).toContain('LOG.PLAN_MODE')
      const transitions = (await timelineRows(replay)).filter((row) => row.includes('LOG.'))
      expect(transitions.length).toBeGreaterThan(0)
      expect(transitions.every((row) => row.startsWith(' LOG.'))).toBe(true)
    } finally {
      await leaveTab()
      stop.abort()
      await served
    }
  })
  it('R96, R97: a planning session’s v1 and v2 with the diff, as a picture (docs/plan-diff-visualizer.png)', async () => {
    const server = await start({ port: 0 })
    const answers: ((answer: ReviewAnswer) => void)[] = []
    const shown = createVisiblePlanMode({ section: 'PLAN', review: { ask: () => new Promise((resolve) => answers.push(resolve)) } }, server.inspectUrl)
    const report: PlanAgent = { id: 'report-agent', session: createMemorySessionLog() }
    const picture = await openTab({ width: 1440, height: 1150 })
    const plan = (steps: string[]) => `# Add a --json flag to the report command\n\n${steps.map((step, i) => `${i + 1}. ${step}`).join('\n')}`
    const V1 = plan(['Parse `--json` in `src/cli.ts`.', 'Print the totals with `JSON.stringify`.', 'Add a test for the flag.'])
    const V2 = plan(['Parse `--json` in `src/cli.ts`.', 'Print the totals as one JSON object on stdout.', 'Add a test for the flag.', 'Document `--json` in the README.'])
    try {
      shown.show(report)
      await picture.goto(server.url)
      const { planMode: reportMode } = shown
      report.session.append('turn/start', {})
      report.session.append('command/run', { commandId: 'c1', name: 'plan', args: '' })
      report.session.append('command/done', { commandId: 'c1', ...(await reportMode.command.run({ agent: report, rawInput: '' })) })
      await reportMode.stepBoundary(report)
      report.session.append('request/header', { step: 0 })
      const first = reportMode.exitTool.execute({ plan: V1 }, { agent: report })
      await expect.poll(() => answers.length).toBe(1)
      answers.shift()!({ answers: [{ id: 'plan-review', selected: ['Keep planning'], custom: 'Print one JSON object, and document the flag.' }] })
      await expect(first).rejects.toThrow('keep planning')
      await reportMode.stepBoundary(report)
      report.session.append('request/header', { step: 1 })
      const second = reportMode.exitTool.execute({ plan: V2 }, { agent: report })
      await expect.poll(() => answers.length).toBe(1)
      answers.shift()!({ answers: [{ id: 'plan-review', selected: ['Approve'] }] })
      await expect(second).resolves.toEqual({ approved: true })
      await reportMode.stepBoundary(report)
      report.session.append('request/header', { step: 2 })
      report.session.append('turn/end', {})

      const v2 = picture.locator('#reviews li.review[data-version="2"]')
      await expect.poll(() => v2.getAttribute('data-outcome')).toBe('approved')
      await picture.locator('#chart[data-layout="done"]').waitFor()
      expect(await v2.locator('.diff-line:not(.same)').allTextContents()).toEqual([
        '- 2. Print the totals with `JSON.stringify`.',
        '+ 2. Print the totals as one JSON object on stdout.',
        '+ 4. Document `--json` in the README.',
      ])
      const path = 'plan-diff-visualizer.png'
      await picture.screenshot({ path: new URL(path, ARTIFACTS).pathname })
      // `PLAN_MODE_SCREENSHOTS=docs npx vitest run test/visualizer.test.ts` refreshes docs/plan-diff-visualizer.png.
      if (process.env.PLAN_MODE_SCREENSHOTS === 'docs') await picture.screenshot({ path: `${DOCS}${path}` })
    } finally {
      await leaveTab()
      await shown.close()
      await server.close()
    }
  })
})
