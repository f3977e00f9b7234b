import { mkdir } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildPlan } from '../apps/shared/offline-model.js'
import { planProjection } from '../src/index.js'
import { startCluster, type Cluster } from '../apps/web/cluster.js'
import { launchChromium } from './fixtures/browser.js'

/**
 * The web chat (apps/web/) in real Chromium, as a deployment runs it: two instances (two Node
 * processes) on one PostgreSQL database behind a round-robin proxy, so consecutive requests of a
 * page land on different instances. The offline model thinks 300 ms before each reply (so a
 * `/plan off` can be typed while an answer streams, between two of its steps) and streams a chunk
 * every 25 ms. Every scenario uses a chat of its own.
 */
const ARTIFACTS = fileURLToPath(new URL('./artifacts/', import.meta.url))
const DOCS = fileURLToPath(new URL('../docs/', import.meta.url))
const LEAVING_NOTE = '/plan off Leaving plan mode (applies from the next step).'
const STOPS_PLANNING = 'You switched back to the default mode, so I stop planning'

let cluster: Cluster
let browser: Browser
let db: pg.Pool

beforeAll(async () => {
  // The page (apps/web/dist) is built once per run, by test/global-setup.ts.
  ;[cluster, browser] = await Promise.all([startCluster({ chunkDelayMs: 25, replyDelayMs: 300 }), launchChromium()])
  db = new pg.Pool({ connectionString: cluster.databaseUrl, max: 2 })
  db.on('error', () => {})
  await mkdir(ARTIFACTS, { recursive: true })
}, 120_000)

afterAll(async () => {
  await browser?.close()
  await db?.end()
  await cluster?.close()
}, 60_000)

/** How Chromium logs a response of status 404: the answer R103 gives for a chat nobody has written in yet. */
const LOGGED_404 = 'Failed to load resource: the server responded with a status of 404 (Not Found)'

/**
 * A new page, failing the test on any script error and any console error (R118). Without `chat`
 * it is a first visit (`/`: the page makes up a chat of its own); with `chat` it opens that one,
 * and a chat nobody has written in yet answers its GETs 404 (R103), which Chromium logs: those are
 * not errors. Each page is another browser (a context of its own: its own owner cookie, R103),
 * unless `context` makes it another tab of the same browser.
 */
async function open(chat?: string, width = 1440, context?: BrowserContext, height = 900): Promise<{ page: Page; chat: string; errors: string[] }> {
  const page = await (context ?? (await browser.newContext({ viewport: { width, height } }))).newPage()
  await page.setViewportSize({ width, height })
  if (context === undefined) page.once('close', () => void page.context().close().catch(() => {})) // the browser goes with its first tab
  const errors: string[] = []
  page.on('pageerror', (error) => errors.push(String(error)))
  page.on('console', (message) => {
    if (message.type() !== 'error' || (chat !== undefined && message.text() === LOGGED_404)) return
    errors.push(`console: ${message.text()} (${message.location().url})`)
  })
  page.on('dialog', (dialog) => {
    errors.push(`dialog: ${dialog.message()}`)
    void dialog.dismiss()
  })
  await page.goto(chat === undefined ? cluster.url : `${cluster.url}?chat=${chat}`)
  await page.getByTestId('mode').and(page.locator('[data-mode]')).waitFor()
  const named = new URL(page.url()).searchParams.get('chat')!
  if (chat === undefined) expect(named).toMatch(/^[0-9a-f-]{36}$/)
  return { page, chat: named, errors }
}

/** Whether all of `target` is in view in the conversation's scrolling box. */
const inView = (target: Locator) =>
  target.evaluate((element) => {
    const box = element.closest('[data-testid=scroller]')!.getBoundingClientRect()
    const own = element.getBoundingClientRect()
    return own.top >= box.top - 1 && own.bottom <= box.bottom + 1
  })

async function type(page: Page, text: string): Promise<void> {
  await page.getByTestId('composer').fill(text)
  await page.getByTestId('composer').press('Enter')
}

/** The review card waiting for the user (the newest one). */
const openCard = (page: Page) => page.locator('[data-testid=plan-card][data-state=approval-requested]')

/** The chat's log, as `type data` lines. */
async function logOf(chat: string): Promise<{ type: string; data: Record<string, unknown> }[]> {
  const { rows } = await db.query('SELECT type, data FROM web_events WHERE session = $1 ORDER BY seq', [chat])
  return rows as { type: string; data: Record<string, unknown> }[]
}

/** Polls until `read` gives `expected` (the page follows the server by polling; the model streams). */
async function eventually<T>(read: () => Promise<T>, expected: T): Promise<void> {
  await expect.poll(read, { timeout: 30_000, interval: 100 }).toEqual(expected)
}

const modes = (log: { type: string; data: Record<string, unknown> }[]) => log.filter((e) => e.type === 'plan/mode').map((e) => e.data.active)

describe('the web chat (AI SDK UI) across two instances, in Chromium', () => {
  it('the whole arc: /plan <task>, a plan, keep planning with feedback sent with Enter (R118), v2 with v1 in the history (R96) and its diff from v1 (R97), approve, carried out and the card says so (R117), the model\'s markdown rendered (R115); both instances serve it', async () => {
    const { page, chat, errors } = await open()
    const from = cluster.served.length
    await type(page, '/plan add a cache to the importer')
    await expect.poll(() => page.getByTestId('command-note').first().textContent()).toBe('/plan add a cache to the importer Plan mode on. Use /plan off to leave.')
    await expect.poll(() => page.getByTestId('mode').getAttribute('data-mode')).toBe('plan')
    await openCard(page).waitFor({ timeout: 30_000 })
    // The model explored first, then presented v1.
    expect(await page.getByTestId('tool-call').allTextContents()).toEqual(['list_files {"path":"."}', 'read_file {"path":"README.md"}'])
    await eventually(() => openCard(page).locator('header strong').textContent(), 'Plan v1')
    expect(await openCard(page).locator('h1').textContent()).toBe('Plan: add a cache to the importer')
    // R115: the model's own text is markdown, rendered: `README.md` is code, not backticks.
    expect(await page.getByTestId('assistant-text').evaluateAll((texts) => texts.map((t) => t.innerHTML))).toContain('<p>Reading <code>README.md</code>.</p>')
    expect(await page.getByTestId('messages').textContent()).not.toContain('`')

    // R118: Shift+Enter is a new line in the feedback; Enter sends it (Keep planning).
    const feedbackBox = openCard(page).getByTestId('feedback')
    await feedbackBox.fill('Use SQLite')
    await feedbackBox.press('Shift+Enter')
    expect(await feedbackBox.inputValue()).toBe('Use SQLite\n')
    expect(await openCard(page).count()).toBe(1)
    await feedbackBox.fill('Use SQLite instead.')
    await feedbackBox.press('Enter')
    await expect.poll(() => page.locator('[data-testid=plan-card][data-state=output-denied] [data-testid=plan-outcome]').textContent()).toBe('Kept planning: Use SQLite instead.')
    await eventually(() => page.locator('[data-testid=plan-card][data-state=approval-requested] header strong').allTextContents(), ['Plan v2'])
    expect(await openCard(page).locator('h1').textContent()).toBe('Plan: add a cache to the importer (revision 2)')
    expect(await openCard(page).locator('li').allTextContents()).toContain('Use SQLite instead.')
    await expect.poll(() => page.getByTestId('version').evaluateAll((items) => items.map((li) => li.querySelector('summary')!.textContent))).toEqual([
      'v2 · Plan: add a cache to the importer (revision 2) (open)',
      'v1 · Plan: add a cache to the importer (keep-planning)',
    ])
    expect(await page.getByTestId('version-feedback').allTextContents()).toEqual(['Feedback: Use SQLite instead.'])
    // v2's changes from v1 (R97), as text: the title, and the feedback as a step and a section.
    // The kept lines far from any change fold into one line, which opens them.
    const looked = String((await logOf(chat)).find((e) => e.type === 'plan/review')!.data.plan).split('\n')[2]!
    expect(looked).toMatch(/^I listed the working directory \(\d+ entries\) and read `README\.md` \(\d+ lines\)\.$/)
    const changed = [
      ['removed', '−', '# Plan: add a cache to the importer'],
      ['added', '+', '# Plan: add a cache to the importer (revision 2)'],
      ['same', ' ', ''],
      ['same', ' ', looked],
    ]
    const unchanged = [
      ['same', ' ', ''],
      ['same', ' ', '## Steps'],
      ['same', ' ', ''],
      ['same', ' ', '1. Start from `README.md` and find the code the request touches.'],
    ]
    const rest = [
      ['same', ' ', '2. Make the change: add a cache to the importer.'],
      ['same', ' ', '3. Add or update the tests that cover it.'],
      ['removed', '−', '4. Run the tests and review the diff.'],
      ['added', '+', '4. Use SQLite instead.'],
      ['added', '+', '5. Run the tests and review the diff.'],
      ['added', '+', ''],
      ['added', '+', '## Feedback addressed'],
      ['added', '+', ''],
      ['added', '+', '- Use SQLite instead.'],
    ]
    const diffLines = (diff: Locator) =>
      diff.getByTestId('diff-line').evaluateAll((rows) =>
        rows.map((row) => [row.getAttribute('data-kind'), row.querySelector('.diff-mark')!.textContent, row.querySelector('.diff-text')!.textContent]),
      )
    const historyDiff = page.getByTestId('versions').getByTestId('version-diff')
    await expect.poll(() => historyDiff.count()).toBe(1) // v2 only: v1 has nothing before it
    expect(await diffLines(historyDiff)).toEqual([...changed, ['fold', '⋯', '4 unchanged lines'], ...rest])
    // The open review card has the same diff, in a collapsed <details>.
    const cardDiff = openCard(page).getByTestId('card-diff')
    expect(await cardDiff.evaluate((details) => (details as HTMLDetailsElement).open)).toBe(false)
    expect(await cardDiff.locator('summary').textContent()).toBe('Changes from v1 +7 −2')
    await cardDiff.locator('summary').click()
    expect(await diffLines(cardDiff.getByTestId('version-diff'))).toEqual([...changed, ['fold', '⋯', '4 unchanged lines'], ...rest])
    await cardDiff.locator('[data-kind=fold]').click()
    expect(await diffLines(cardDiff.getByTestId('version-diff'))).toEqual([...changed, ...unchanged, ...rest])
    expect(await page.locator('[data-testid=plan-card]:not([data-state=approval-requested]) [data-testid=card-diff]').count()).toBe(0)
    // The diffs fit a phone's width too: nothing wider than the window.
    await page.setViewportSize({ width: 390, height: 900 })
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
    await page.screenshot({ path: `${ARTIFACTS}web-chat-arc-v2-390.png`, fullPage: true })
    await page.setViewportSize({ width: 1440, height: 900 })
    await page.screenshot({ path: `${ARTIFACTS}web-chat-arc-v2.png`, fullPage: true })

    // R117: every text the approved card shows, as the page renders it (no sampling by timers).
    await page.evaluate(() => {
      const shown: string[] = []
      ;(window as { __outcomes?: string[] }).__outcomes = shown
      new MutationObserver(() => {
        const text = document.querySelector('[data-testid=plan-card][data-state=output-available] [data-testid=plan-outcome]')?.textContent
        if (text && shown.at(-1) !== text) shown.push(text)
      }).observe(document.getElementById('root')!, { subtree: true, childList: true, characterData: true, attributes: true })
    })
    await openCard(page).getByTestId('approve').click()
    await expect.poll(() => page.getByTestId('messages').textContent(), { timeout: 30_000 }).toContain('Done with "Plan: add a cache to the importer (revision 2)"')
    await expect.poll(() => page.getByTestId('mode').textContent()).toBe('default')
    // R117: the answer that carried the plan out has ended: the card says it was carried out.
    await eventually(() => page.getByTestId('status').textContent(), 'ready')
    expect(await page.locator('[data-testid=plan-card][data-state=output-available] [data-testid=plan-outcome]').textContent()).toBe('Approved and carried out')
    expect(await page.evaluate(() => (window as { __outcomes?: string[] }).__outcomes)).toEqual(['Approved: carrying it out', 'Approved and carried out'])
    // R115: the report's steps are a rendered numbered list.
    expect(await page.getByTestId('assistant-text').last().locator('ol > li').allTextContents()).toEqual([
      'Start from README.md and find the code the request touches.',
      'Make the change: add a cache to the importer.',
      'Add or update the tests that cover it.',
      'Use SQLite instead.',
      'Run the tests and review the diff.',
    ])
    await expect.poll(() => page.getByTestId('chart').getAttribute('data-active')).toContain('mode.inactive')

    // The log tells the story; the requests went to both instances.
    const log = await logOf(chat)
    expect(modes(log)).toEqual([true, false])
    expect(log.filter((e) => e.type === 'plan/review').map((e) => e.data.outcome)).toEqual(['requested', 'keep-planning', 'requested', 'approved'])
    const chats = cluster.served.slice(from).filter((s) => s.path === '/api/chat')
    expect(chats.length).toBeGreaterThanOrEqual(3)
    expect(new Set(cluster.served.slice(from).map((s) => s.instance))).toEqual(new Set(['A', 'B']))
    expect(errors).toEqual([])
    await page.screenshot({ path: `${ARTIFACTS}web-chat-arc.png`, fullPage: true })
    await page.close()
  }, 120_000)

  it('/plan off typed while the answer streams applies at the next step of that same turn; a reload shows the same state, open review included', async () => {
    const { page, chat, errors } = await open()
    await type(page, '/plan tidy the logging')
    // The first step is streaming (it lists the files): /plan off goes in now, to the instance
    // that is not streaming the turn (R86 carries it over).
    await page.getByTestId('tool-call').first().waitFor()
    expect(await page.getByTestId('status').textContent()).toBe('answering…')
    const streaming = cluster.served.filter((s) => s.path === '/api/chat').at(-1)!.instance
    const other = streaming === 'A' ? 'B' : 'A'
    cluster.route((path) => (path.endsWith('/command') ? other : undefined))
    await type(page, '/plan off')
    await expect.poll(() => page.getByTestId('command-note').nth(1).textContent()).toBe(LEAVING_NOTE)
    cluster.route(undefined)
    expect(cluster.served.filter((s) => s.path.endsWith('/command')).at(-1)!.instance).toBe(other)
    await expect.poll(() => page.getByTestId('messages').textContent(), { timeout: 30_000 }).toContain(STOPS_PLANNING)
    await eventually(() => page.getByTestId('status').textContent(), 'ready')
    // No review waits: under load the leave may be pending already when the model presents its
    // plan, and the call is then refused (R42: E is not plan mode), its card showing the refusal.
    expect(await openCard(page).count()).toBe(0)
    expect(await page.locator('[data-testid=plan-card]:not([data-state=output-error])').count()).toBe(0)
    expect(await page.getByTestId('mode').textContent()).toBe('default')
    // In the log: the leave is flushed between two steps of the one turn that /plan opened.
    const log = await logOf(chat)
    const turn = log.slice(log.findIndex((e) => e.type === 'turn/start'))
    const end = turn.findIndex((e) => e.type === 'turn/end')
    const flip = turn.findIndex((e) => e.type === 'plan/mode' && e.data.active === false)
    expect(flip).toBeGreaterThan(turn.findIndex((e) => e.type === 'request/header'))
    expect(flip).toBeLessThan(end)
    expect(turn.slice(flip + 1, end).some((e) => e.type === 'request/header')).toBe(true)

    // Plan again, up to the review; a reload (served by whichever instance) shows it still open.
    await type(page, '/plan tidy the logging')
    await openCard(page).waitFor({ timeout: 30_000 })
    await page.reload()
    await openCard(page).waitFor()
    expect(await openCard(page).locator('h1').textContent()).toBe('Plan: tidy the logging')
    await expect.poll(() => page.getByTestId('mode').getAttribute('data-mode')).toBe('plan')
    await eventually(() => page.getByTestId('version').count(), 1)
    await openCard(page).getByTestId('approve').click()
    await expect.poll(() => page.getByTestId('messages').textContent(), { timeout: 30_000 }).toContain('Done with "Plan: tidy the logging"')
    expect(errors).toEqual([])
    await page.close()
  }, 120_000)

  it('two tabs on one chat switching at once leave one consistent log (no repeated plan/mode) and show the same mode', async () => {
    const first = await open()
    const second = await open(first.chat, 1440, first.page.context()) // another tab of the same browser
    const inputs = ['/plan', '/plan off', '/plan', '/plan off', '/plan']
    await Promise.all(
      [first.page, second.page].map(async (page) => {
        for (const input of inputs) await type(page, input)
      }),
    )
    await expect.poll(() => first.page.getByTestId('command-note').count()).toBe(inputs.length)
    await expect.poll(() => second.page.getByTestId('command-note').count()).toBe(inputs.length)
    const log = await logOf(first.chat)
    const flips = modes(log)
    expect(flips.every((active, i) => i === 0 || active !== flips[i - 1])).toBe(true)
    // What the page must show is the log's own reading (R58): its last switch, and a selection
    // still waiting when a `/plan` answered on a view the other instance had just changed was
    // logged after that switch (R86: the later selection wins; nobody is in a turn to flush it).
    const view = planProjection.view(log.reduce((state, event, seq) => planProjection.apply(state, { seq, ...event }), planProjection.init()))
    const shown = (view.active ? 'plan' : 'default') + (view.pending ? (view.active ? ' · leaving at the next step' : ' · entering at the next step') : '')
    await eventually(() => first.page.getByTestId('mode').textContent(), shown)
    await eventually(() => second.page.getByTestId('mode').textContent(), shown)
    expect([...first.errors, ...second.errors]).toEqual([])
    await first.page.close()
    await second.page.close()
  }, 60_000)

  it('XSS, R115: markup in a model reply, a plan and feedback renders as text; a link in the model\'s markdown loses an unsafe URL and opens in a new tab; no script runs', async () => {
    const { page, errors } = await open()
    const markup = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>'
    // The offline model quotes the user (its first 60 characters): its reply holds the markup.
    const short = '<img src=x onerror="window.__xss=1">'
    await type(page, `say ${short}`)
    await expect.poll(() => page.getByTestId('messages').textContent(), { timeout: 30_000 }).toContain(`You asked: "say ${short}"`)
    await eventually(() => page.getByTestId('status').textContent(), 'ready')
    // R115: the model's markdown is rendered, its links made safe; what the user typed stays text.
    await type(page, 'say [safe](https://a.example/) [x](javascript:alert(5))')
    await expect.poll(() => page.locator('[data-testid=assistant-text] a').count(), { timeout: 30_000 }).toBe(2)
    expect(
      await page.locator('[data-testid=assistant-text] a').evaluateAll((links) => links.map((a) => [a.textContent, a.getAttribute('href'), a.getAttribute('target'), a.getAttribute('rel')])),
    ).toEqual([
      ['safe', 'https://a.example/', '_blank', 'noopener noreferrer nofollow'],
      ['x', '', '_blank', 'noopener noreferrer nofollow'],
    ])
    expect(await page.locator('.message.user a').count()).toBe(0)
    await eventually(() => page.getByTestId('status').textContent(), 'ready')
    await type(page, `/plan ${markup}`)
    await openCard(page).waitFor({ timeout: 30_000 })
    expect(await openCard(page).getByTestId('plan-body').textContent()).toContain(markup)
    await openCard(page).getByTestId('feedback').fill('<b onmouseover="window.__xss=3">bold</b>')
    await openCard(page).getByTestId('keep-planning').click()
    await eventually(() => page.locator('[data-testid=plan-card][data-state=approval-requested] header strong').allTextContents(), ['Plan v2'])
    expect(await openCard(page).getByTestId('plan-body').textContent()).toContain('<b onmouseover="window.__xss=3">bold</b>')
    expect(await page.getByTestId('plan-outcome').first().textContent()).toBe('Kept planning: <b onmouseover="window.__xss=3">bold</b>')
    // /plan off closes the open review (R48): its card says so.
    await type(page, '/plan off')
    await eventually(() => page.getByTestId('mode').textContent(), 'default')
    await eventually(() => page.locator('[data-testid=plan-card][data-state=closed] [data-testid=plan-outcome]').textContent(), 'Closed: the mode was switched')
    expect(await page.locator('.messages img, .messages script, .messages b, .side img, .side script, .side b').count()).toBe(0)
    expect(await page.evaluate(() => (window as { __xss?: unknown }).__xss)).toBeUndefined()
    expect(errors).toEqual([])
    await page.close()
  }, 120_000)

  it("R113, R118, R119: the conversation follows new content, a reader who scrolled up is not moved and gets Jump to latest; an unknown command gets a hint, not the model; after /plan <task>, /plan off and a question, the offline model answers the question", async () => {
    const { page, errors } = await open(undefined, 1440, undefined, 420) // a short window: the conversation overflows
    const scroller = page.getByTestId('scroller')
    const modelRequests = () => cluster.served.filter((s) => s.path === '/api/chat').length
    const before = modelRequests()

    // R118: a mistyped command is answered with the hint; nothing goes to the model.
    await type(page, '/plann add a cache')
    await expect
      .poll(() => page.getByTestId('command-note').first().textContent())
      .toBe('/plann add a cache Unknown command /plann. The commands are /plan <task>, /plan and /plan off; to send a message that starts with /, type // instead.')
    expect(await page.locator('.message').count()).toBe(0)
    expect(modelRequests()).toBe(before)

    // R113: the review card arrives in view: its Approve button shows without scrolling.
    await type(page, '/plan add a cache to the importer')
    await openCard(page).waitFor({ timeout: 30_000 })
    await eventually(() => page.getByTestId('status').textContent(), 'ready')
    await expect.poll(() => inView(openCard(page).getByTestId('approve'))).toBe(true)
    expect(await page.getByTestId('jump').count()).toBe(0)
    expect(await scroller.evaluate((box) => box.scrollHeight > box.clientHeight)).toBe(true)

    // Keep planning; the answer (v2) is held back until the user has scrolled up to reread v1.
    let release = () => {}
    const held = new Promise<void>((resolve) => (release = resolve))
    await page.route('**/api/chat', async (route) => {
      await held
      await route.continue()
    })
    await openCard(page).getByTestId('feedback').fill('Use SQLite instead.')
    await openCard(page).getByTestId('keep-planning').click()
    await expect.poll(() => openCard(page).count()).toBe(0)
    expect(await scroller.evaluate((box) => box.scrollHeight > box.clientHeight + 100)).toBe(true)
    await scroller.hover()
    await page.mouse.wheel(0, -5000)
    await expect.poll(() => scroller.evaluate((box) => box.scrollTop)).toBe(0)
    await page.getByTestId('jump').waitFor()
    release()
    await eventually(() => openCard(page).locator('header strong').allTextContents(), ['Plan v2'])
    await eventually(() => page.getByTestId('status').textContent(), 'ready')
    await page.unroute('**/api/chat')
    // Not moved: still at the top, v2's Approve out of view, the button offered.
    expect(await scroller.evaluate((box) => box.scrollTop)).toBe(0)
    expect(await inView(openCard(page).getByTestId('approve'))).toBe(false)
    expect(await page.getByTestId('jump').textContent()).toBe('Jump to latest ↓')
    await page.getByTestId('jump').click()
    await expect.poll(() => inView(openCard(page).getByTestId('approve'))).toBe(true)
    expect(await page.getByTestId('jump').count()).toBe(0)

    // R119: /plan off at the review, then a question: the reply answers the question.
    // R113: typed while scrolled up, the command scrolls to the end, where its note shows.
    await scroller.hover()
    await page.mouse.wheel(0, -5000)
    await page.getByTestId('jump').waitFor()
    await type(page, '/plan off')
    await eventually(() => page.getByTestId('mode').textContent(), 'default')
    await expect.poll(() => inView(page.getByTestId('command-note').last())).toBe(true)
    expect(await page.getByTestId('jump').count()).toBe(0)
    const question = 'What does the importer do?'
    await type(page, question)
    await expect
      .poll(() => page.getByTestId('assistant-text').last().textContent(), { timeout: 30_000 })
      .toBe(`You asked: "${question}". In the default mode I act directly, without presenting a plan first. I am the offline model, so I only say so; type /plan to have me explore, plan and ask for your approval.`)
    expect(await page.getByTestId('messages').textContent()).not.toContain('act directly on "The user')
    // R118: a message that starts with / is sent as `//…`, with one / removed.
    await eventually(() => page.getByTestId('status').textContent(), 'ready')
    await type(page, '//plann is a typo')
    await expect
      .poll(() => page.getByTestId('assistant-text').last().textContent(), { timeout: 30_000 })
      .toMatch(/^You asked: "\/plann is a typo"\./)
    expect(await page.locator('.message.user').last().textContent()).toBe('/plann is a typo')
    // R113: the reply followed into view (the user was at the end when they sent).
    await eventually(() => page.getByTestId('status').textContent(), 'ready')
    await expect.poll(() => inView(page.getByTestId('assistant-text').last())).toBe(true)
    expect(errors).toEqual([])
    await page.screenshot({ path: `${ARTIFACTS}web-chat-follow.png` })
    await page.close()
  }, 120_000)

  it('R113, R116, R118: fits 390 px and 1440 px wide (screenshots): the header stays in view, every placeholder of the composer fits its box, the statechart is drawn at its own size with the active states in words and full size on demand, no console error', async () => {
    for (const width of [390, 1440]) {
      const { page, errors } = await open(undefined, width)
      await type(page, '/plan add rate limiting to the API')
      await openCard(page).waitFor({ timeout: 30_000 })
      await expect.poll(() => page.getByTestId('chart').getAttribute('data-layout')).toBe('done')
      // Nothing wider than the window: the page never scrolls sideways.
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width)
      // R113: the review's Approve is in view; at the page's end (a phone scrolls to the side panel) the header with the mode badge still is.
      await expect.poll(() => inView(openCard(page).getByTestId('approve'))).toBe(true)
      await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight))
      if (width === 390) expect(await page.evaluate(() => window.scrollY)).toBeGreaterThan(0)
      expect(
        await page.getByTestId('mode').evaluate((badge) => {
          const box = badge.getBoundingClientRect()
          return box.top >= 0 && box.bottom <= window.innerHeight
        }),
      ).toBe(true)
      // R118: each placeholder the composer shows fits its box whole (tried as its text, then put back).
      const composer = page.getByTestId('composer')
      await expect.poll(() => composer.getAttribute('placeholder')).toBe('Answer the plan above, or /plan off') // once the page has the review's state
      const fits = await composer.evaluate((box: HTMLTextAreaElement) =>
        ['Message, or /plan <task>', 'Answering… /plan off still applies', 'Answer the plan above, or /plan off'].map((text) => {
          const saved = box.value
          box.value = text
          const whole = box.scrollHeight <= box.clientHeight && box.scrollWidth <= box.clientWidth
          box.value = saved
          return [text, whole]
        }),
      )
      expect(fits.every(([, whole]) => whole)).toBe(true)
      await page.evaluate(() => window.scrollTo(0, 0))
      if (width === 1440) {
        // R116: each region's active state in words; the chart at its own size (never scaled down).
        await eventually(() => page.getByTestId('chart-regions').locator('li').allTextContents(), [
          'mode: active',
          'turn: idle',
          'review: open › undecided › awaiting',
          'intent: logged',
          'lifecycle: serving',
        ])
        const ownSize = (chart: Locator) => chart.evaluate((svg) => Math.abs(svg.getBoundingClientRect().width - Number(svg.getAttribute('width'))) < 1)
        expect(await ownSize(page.getByTestId('chart-canvas').locator('svg.chart'))).toBe(true)
        // A region's button scrolls the chart to its active state.
        const awaiting = page.getByTestId('chart-canvas').locator('g.state.active[data-state="review.open.undecided.awaiting"] > rect')
        const regionButton = page.getByTestId('chart-regions').getByRole('button', { name: 'review: open › undecided › awaiting' })
        const inCanvas = () =>
          awaiting.evaluate((rect) => {
            const box = rect.closest('[data-testid=chart-canvas]')!.getBoundingClientRect()
            const own = rect.getBoundingClientRect()
            return own.left >= box.left && own.right <= box.right && own.top >= box.top && own.bottom <= box.bottom
          })
        // Clicked again while a state another instance reports is being entered (the chart then scrolls to it).
        await expect.poll(async () => (await regionButton.click(), await inCanvas())).toBe(true)
        // Full size: the whole chart over the page, at its own size, live; Escape closes it.
        await page.getByTestId('chart-full').click()
        const dialog = page.getByTestId('chart-dialog')
        await expect.poll(() => dialog.evaluate((d) => (d as HTMLDialogElement).open)).toBe(true)
        expect(await ownSize(dialog.locator('svg.chart'))).toBe(true)
        expect(await dialog.locator('g.state.active[data-state="review.open.undecided.awaiting"]').count()).toBe(1)
        await page.screenshot({ path: `${ARTIFACTS}web-chat-chart-full.png` })
        await page.keyboard.press('Escape')
        await expect.poll(() => dialog.evaluate((d) => (d as HTMLDialogElement).open)).toBe(false)
      }
      expect(errors).toEqual([])
      const path = `web-chat-${width}.png`
      await page.screenshot({ path: `${ARTIFACTS}${path}`, fullPage: width === 390 })
      // `PLAN_MODE_SCREENSHOTS=docs npx vitest run test/web-chat.test.ts` refreshes the README's pictures.
      if (process.env.PLAN_MODE_SCREENSHOTS === 'docs') await page.screenshot({ path: `${DOCS}${path}`, fullPage: width === 390 })
      await page.close()
    }
  }, 120_000)

  it('R100, R114: comments on lines of v1 (each box naming its line as the plan shows it) go with Keep planning; the model gets them once, in the exit call\'s result, and revises the plan with them; the log records them with one closing record; a malformed body is a 400, a quote off the plan a 422 with the library\'s message, shown in the card', async () => {
    const { page, chat, errors } = await open()
    const task = 'add a cache to the importer'
    await type(page, `/plan ${task}`)
    await openCard(page).waitFor({ timeout: 30_000 })
    await eventually(() => openCard(page).locator('header strong').textContent(), 'Plan v1')
    const requested = (await logOf(chat)).find((e) => e.type === 'plan/review' && e.data.outcome === 'requested')!.data
    const v1 = String(requested.plan)
    const reviewId = String(requested.reviewId)
    expect(await openCard(page).locator('.comment-hint').textContent()).toBe('Click a line of the plan to comment on it.')

    // Clicking a line of the plan opens a comment box for it; its quote is the line's words, as the plan has them.
    const body = openCard(page).getByTestId('plan-body')
    await body.locator('li', { hasText: 'Add or update the tests that cover it.' }).click()
    const box = openCard(page).getByTestId('comment-box')
    const quote = 'Add or update the tests that cover it.'
    expect(await box.getByTestId('comment-quote').textContent()).toBe(quote)
    expect(v1.split('\n')).toContain(`3. ${quote}`)
    // R114: named by the number shown beside it, not by the plan's source line.
    expect(await box.getByTestId('comment-on').textContent()).toBe('On step 3:')
    expect(await box.getAttribute('aria-label')).toBe('Comment on step 3')
    const said = 'Cover <b onmouseover="window.__xss=4">eviction</b> too.'
    await box.getByTestId('comment-text').fill(said)
    await box.getByTestId('add-comment').click()
    expect(await openCard(page).getByTestId('comment-box').count()).toBe(0)
    // A second comment, on the heading, then removed: only the first is sent.
    await body.locator('h1').click()
    expect(await box.getByTestId('comment-quote').textContent()).toBe('Plan: add a cache to the importer')
    expect(await box.getByTestId('comment-on').textContent()).toBe('On the heading:')
    await box.getByTestId('comment-text').fill('Name the cache.')
    await box.getByTestId('add-comment').click()
    const listed = () =>
      openCard(page)
        .getByTestId('comment')
        .evaluateAll((items) => items.map((li) => [li.querySelector('.comment-quote')!.textContent, li.querySelector('.comment-said')!.textContent]))
    expect(await listed()).toEqual([
      [quote, said],
      ['Plan: add a cache to the importer', 'Name the cache.'],
    ])
    expect(await body.locator('.commented').count()).toBe(2)
    // Comments ask for changes: Approve waits until they are sent or removed (R100: they never consent).
    expect(await openCard(page).getByTestId('approve').isDisabled()).toBe(true)
    await openCard(page).getByTestId('remove-comment').nth(1).click()
    expect(await listed()).toEqual([[quote, said]])
    // A comment box open with the list: nothing wider than a phone's window, nor at 1440 px.
    await body.locator('li', { hasText: 'Run the tests and review the diff.' }).click()
    await box.waitFor()
    for (const width of [390, 1440]) {
      await page.setViewportSize({ width, height: 900 })
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width)
      await openCard(page).screenshot({ path: `${ARTIFACTS}web-chat-comments-${width}.png` })
    }
    await box.getByTestId('cancel-comment').click()
    expect(await listed()).toEqual([[quote, said]])

    // The route checks what it is sent: a malformed body is a 400 naming what is wrong; a quote
    // the plan does not hold is refused by the library (R100), a 422 with its message; nothing was changed.
    // Sent as the page sends it: its Origin and its owner cookie (R103, R104).
    const owner = (await page.context().cookies(cluster.url)).find((c) => c.name === 'plan_mode_owner')!
    const post = async (payload: unknown) => {
      const response = await fetch(new URL(`/api/chats/${chat}/review`, cluster.url), {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: new URL(cluster.url).origin, cookie: `${owner.name}=${owner.value}` },
        body: typeof payload === 'string' ? payload : JSON.stringify(payload),
      })
      return [response.status, await response.json()]
    }
    expect(await post('not json')).toEqual([400, { error: 'the body must be a JSON object' }])
    expect(await post({ comments: [{ quote, text: 'x' }] })).toEqual([400, { error: "reviewId must be the open review's id (a string)" }])
    expect(await post({ reviewId, comments: { quote, text: 'x' } })).toEqual([400, { error: 'comments must be an array of 1–50 { quote, text }' }])
    expect(await post({ reviewId, comments: [] })).toEqual([400, { error: 'comments must be an array of 1–50 { quote, text }' }])
    expect(await post({ reviewId, comments: [{ quote, text: 1 }] })).toEqual([400, { error: 'comment 1 must be { quote: string, text: string }' }])
    expect(await post({ reviewId, feedback: 3, comments: [{ quote, text: 'x' }] })).toEqual([400, { error: 'feedback must be a string when given' }])
    expect(await post({ reviewId, comments: [{ quote, text: 'x' }, { quote: ' ', text: 'x' }] })).toEqual([
      422,
      { error: 'plan review comment 2 needs a non-empty quote and text' },
    ])
    expect(await post({ reviewId, comments: [{ quote: 'Add or update the tests', text: 'x' }, { quote: 'add a cache to the exporter', text: 'x' }] })).toEqual([
      422,
      { error: 'plan review comment 2 quotes text that is not in the plan: "add a cache to the exporter"' },
    ])
    expect(await post({ reviewId: 'no-such-review', comments: [{ quote, text: 'x' }] })).toEqual([
      409,
      { error: 'no plan review no-such-review is open for this agent; nothing was changed' },
    ])
    // The card shows the library's refusal (here the page's quote is changed on its way), and keeps the comments.
    const offPlan = 'A line the plan does not hold'
    await page.route('**/api/chats/*/review', async (route) => {
      const sent = route.request().postDataJSON() as { comments: { quote: string }[] }
      sent.comments[0]!.quote = offPlan
      await route.continue({ postData: JSON.stringify(sent) })
    })
    await openCard(page).getByTestId('feedback').fill('Keep it small.')
    await openCard(page).getByTestId('keep-planning').click()
    await eventually(() => openCard(page).getByTestId('review-error').textContent(), `plan review comment 1 quotes text that is not in the plan: "${offPlan}"`)
    expect(await listed()).toEqual([[quote, said]])
    expect((await logOf(chat)).filter((e) => e.type === 'plan/review').map((e) => e.data.outcome)).toEqual(['requested'])
    await page.unroute('**/api/chats/*/review')

    // Keep planning with the feedback and the comment: the server records the answer, the card is
    // answered with the recorded feedback, and the chat goes on to v2.
    await openCard(page).getByTestId('keep-planning').click()
    const feedback = `Keep it small.\n\nComments on the plan:\n1. On ${JSON.stringify(quote)}: ${said}`
    await expect
      .poll(() => page.locator('[data-testid=plan-card][data-state=output-denied] [data-testid=plan-outcome]').textContent(), { timeout: 30_000 })
      .toBe(`Kept planning: ${feedback}`)
    await eventually(() => page.locator('[data-testid=plan-card][data-state=approval-requested] header strong').allTextContents(), ['Plan v2'])
    expect(await openCard(page).getByTestId('plan-body').textContent()).toContain(said)
    expect(await openCard(page).getByTestId('comment').count()).toBe(0) // v2's card starts with none

    // The log: one closing record for v1's review, with the comments and the feedback the model was
    // given in the exit call's result (toldInResult: R81), then v2's request.
    const log = await logOf(chat)
    const reviews = log.filter((e) => e.type === 'plan/review')
    expect(reviews.map((e) => e.data.outcome)).toEqual(['requested', 'keep-planning', 'requested'])
    expect(reviews.filter((e) => e.data.reviewId === reviewId && e.data.outcome !== 'requested').map((e) => e.data)).toEqual([
      { outcome: 'keep-planning', reviewId, title: 'Plan: add a cache to the importer', plan: v1, feedback, comments: [{ quote, text: said }], toldInResult: true },
    ])
    // The model was told exactly once: the offline model's plan is a function of its request (the
    // user's request, and every keep-planning result since, R45). v2 is the plan of one result with
    // that feedback, for the same request: a second telling (another result, or a message at a step
    // boundary) would have made it revision 3, or a plan for another request.
    const [, entries, lines] = /^I listed the working directory \((\d+) entries\) and read `README\.md` \((\d+) lines\)\.$/m.exec(v1)!
    const v2 = String(reviews[2]!.data.plan)
    expect(v2).toBe(buildPlan({ request: task, revision: 2, feedback: [feedback], entries: Number(entries), file: 'README.md', lines: Number(lines) }))
    // v1's review is closed, and v2's requested since (R80): a second answer is a 409, and changes nothing.
    expect(await post({ reviewId, comments: [{ quote, text: 'again' }] })).toEqual([
      409,
      { error: `no plan review ${reviewId} is open for this agent; nothing was changed` },
    ])
    expect((await logOf(chat)).filter((e) => e.type === 'plan/review').length).toBe(3)
    expect(await page.locator('.messages b, .messages img, .messages script').count()).toBe(0)
    expect(await page.evaluate(() => (window as { __xss?: unknown }).__xss)).toBeUndefined()
    // The one refusal the test provoked through the page (the quote changed on its way): no other error.
    expect(errors).toEqual([`console: Failed to load resource: the server responded with a status of 422 (Unprocessable Entity) (${new URL(`/api/chats/${chat}/review`, cluster.url)})`])
    await page.screenshot({ path: `${ARTIFACTS}web-chat-comments.png`, fullPage: true })
    await page.close()
  }, 120_000)

  it('R101, R102, R117: the card offers Approve in a fresh context and Leave plan mode; Leave plan mode records left, leaves plan mode and the model stops; Approve in a fresh context records fresh: true and the plan is carried out in a fresh context', async () => {
    const { page, chat, errors } = await open()
    const task = 'add a cache to the importer'
    await type(page, `/plan ${task}`)
    await openCard(page).waitFor({ timeout: 30_000 })
    const actions = () => openCard(page).locator('.plan-actions button').evaluateAll((buttons) => buttons.map((b) => [b.getAttribute('data-testid'), b.textContent]))
    expect(await actions()).toEqual([
      ['approve', 'Approve'],
      ['approve-fresh', 'Approve in a fresh context'],
      ['keep-planning', 'Keep planning'],
      ['leave', 'Leave plan mode'],
    ])
    // Their tooltips are the library's descriptions (R101), served with the chat's state.
    expect(await openCard(page).getByTestId('leave').getAttribute('title')).toBe('Leave plan mode without carrying out the plan; the model stops and waits.')
    // Comments go with Keep planning only (R100): the other decisions wait while one is listed.
    await openCard(page).getByTestId('plan-body').locator('h1').click()
    await openCard(page).getByTestId('comment-text').fill('Name it.')
    await openCard(page).getByTestId('add-comment').click()
    for (const id of ['approve', 'approve-fresh', 'leave']) expect(await openCard(page).getByTestId(id).isDisabled()).toBe(true)
    await openCard(page).getByTestId('remove-comment').click()
    await openCard(page).screenshot({ path: `${ARTIFACTS}web-chat-decisions-card.png` })
    const reviewOf = async (n: number) => String((await logOf(chat)).filter((e) => e.type === 'plan/review' && e.data.outcome === 'requested')[n]!.data.reviewId)
    const closing = async (reviewId: string) =>
      (await logOf(chat)).filter((e) => e.type === 'plan/review' && e.data.reviewId === reviewId && e.data.outcome !== 'requested').map((e) => e.data)

    // Leave plan mode: one closing record `left`, told in the exit call's result; plan mode is left at the next step; the model stops.
    const first = await reviewOf(0)
    await openCard(page).getByTestId('leave').click()
    await expect
      .poll(() => page.locator('[data-testid=plan-card][data-state=output-error] [data-testid=plan-outcome]').textContent(), { timeout: 30_000 })
      .toBe('Left plan mode without carrying out the plan')
    await expect.poll(() => page.getByTestId('messages').textContent(), { timeout: 30_000 }).toContain('Understood: plan mode is off and I carry nothing out. I stop here and wait for your message.')
    await eventually(() => page.getByTestId('mode').textContent(), 'default')
    await eventually(() => page.getByTestId('status').textContent(), 'ready')
    expect(await closing(first)).toEqual([expect.objectContaining({ outcome: 'left', reviewId: first, toldInResult: true })])
    expect(modes(await logOf(chat))).toEqual([true, false])
    await expect.poll(() => page.getByTestId('version').locator('summary').first().textContent()).toBe('v1 · Plan: add a cache to the importer (left)')

    // Plan again; Approve in a fresh context: recorded fresh, and carried out from the plan handed off (R102).
    await type(page, `/plan ${task}`)
    await openCard(page).waitFor({ timeout: 30_000 })
    await eventually(() => page.getByTestId('status').textContent(), 'ready')
    const second = await reviewOf(1)
    await openCard(page).getByTestId('approve-fresh').click()
    await expect
      .poll(() => page.getByTestId('messages').textContent(), { timeout: 30_000 })
      .toContain('Approved in a fresh context. Carrying out "Plan: add a cache to the importer", starting where the plan starts.')
    await expect.poll(() => page.getByTestId('messages').textContent(), { timeout: 30_000 }).toContain('Done with "Plan: add a cache to the importer"')
    await eventually(() => page.getByTestId('mode').textContent(), 'default')
    await eventually(() => page.getByTestId('status').textContent(), 'ready')
    await eventually(
      () => page.locator('[data-testid=plan-card][data-state=output-available] [data-testid=plan-outcome]').textContent(),
      'Approved in a fresh context and carried out',
    )
    expect(await closing(second)).toEqual([expect.objectContaining({ outcome: 'approved', reviewId: second, fresh: true, toldInResult: true })])
    const log = await logOf(chat)
    expect(modes(log)).toEqual([true, false, true, false])
    expect(log.filter((e) => e.type === 'plan/review').map((e) => e.data.outcome)).toEqual(['requested', 'left', 'requested', 'approved'])
    await expect.poll(() => page.getByTestId('version').locator('summary').first().textContent()).toBe('v1 · Plan: add a cache to the importer (approved, fresh context)')
    // The first card still says how it ended, though its plan is no longer in the current episode's history.
    expect(await page.locator('[data-testid=plan-card][data-state=output-error] [data-testid=plan-outcome]').textContent()).toBe('Left plan mode without carrying out the plan')
    // The model's context starts again from the handoff: the next request holds its text (checked in web-main.test.ts).
    await eventually(() => page.getByTestId('status').textContent(), 'ready')
    const handedOff = async () => String((await db.query('SELECT context FROM web_contexts WHERE id = $1', [chat])).rows[0]?.context.text)
    await expect.poll(handedOff, { timeout: 10_000 }).toMatch(/^The user approved this plan \(v1\) to be carried out in a fresh context/)
    expect(await handedOff()).toContain(`The plan:\n\n${String((await logOf(chat)).filter((e) => e.type === 'plan/review').at(-1)!.data.plan)}`)
    expect(errors).toEqual([])
    await page.screenshot({ path: `${ARTIFACTS}web-chat-decisions.png`, fullPage: true })
    await page.close()
  }, 120_000)

  it('the instance that served the review is killed before the user answers; the other completes the review and the plan is carried out', async () => {
    const { page, chat, errors } = await open()
    await type(page, '/plan rename the config keys')
    await openCard(page).waitFor({ timeout: 30_000 })
    await eventually(() => page.getByTestId('status').textContent(), 'ready') // the response asking for review has ended
    const reviewServedBy = cluster.served.filter((s) => s.path === '/api/chat').at(-1)!.instance
    await cluster.kill(reviewServedBy)
    const from = cluster.served.length
    await openCard(page).getByTestId('approve').click()
    await expect.poll(() => page.getByTestId('messages').textContent(), { timeout: 30_000 }).toContain('Done with "Plan: rename the config keys"')
    await expect.poll(() => page.getByTestId('mode').textContent()).toBe('default')
    const after = cluster.served.slice(from)
    expect(after.some((s) => s.path === '/api/chat')).toBe(true)
    expect(new Set(after.map((s) => s.instance))).toEqual(new Set([reviewServedBy === 'A' ? 'B' : 'A']))
    const log = await logOf(chat)
    expect(log.filter((e) => e.type === 'plan/review').map((e) => e.data.outcome)).toEqual(['requested', 'approved'])
    expect(modes(log)).toEqual([true, false])
    // The proxy answers 502 for what it had routed to the killed instance (the page's polls): no other error.
    expect(errors.filter((error) => !error.startsWith('console: Failed to load resource: the server responded with a status of 502 (Bad Gateway)'))).toEqual([])
    await page.close()
  }, 120_000)
})
