import { copyFile } from 'node:fs/promises'
import type { Locator } from 'playwright-core'
import { describe, expect, it } from 'vitest'
import { buildPlan } from '../apps/shared/offline-model.js'
import { ARTIFACTS, DOCS, eventually, inView, modes, openCard, type, useWebChat } from './fixtures/web-chat.js'

/**
 * The web chat's page in Chromium (test/fixtures/web-chat.ts: two instances on one PostgreSQL
 * behind a round-robin proxy, the offline model behind a gate): the whole arc, markup that stays
 * text, following new content, the layout at 390 and 1440 px, comments on a plan's lines.
 * test/web-chat-reviews.test.ts has the scenarios across instances and tabs.
 */
const web = useWebChat()

describe('the web chat (AI SDK UI) across two instances, in Chromium', () => {
  it('the whole arc: /plan <task>, a plan, keep planning with feedback sent with Enter (R118), v2 with v1 in the history (R96) and its diff from v1 (R97), approve, carried out and the card says so (R117), the model\'s markdown rendered (R115); both instances serve it', async () => {
    const { page, chat, errors } = await web.open()
    const from = web.cluster.served.length
    await type(page, '/plan add a cache to the importer')
    await expect.poll(() => page.getByTestId('command-note').first().textContent()).toBe('/plan add a cache to the importer Plan mode on. Use /plan off to leave.')
    await expect.poll(() => page.getByTestId('mode').getAttribute('data-mode')).toBe('plan')
    await openCard(page).waitFor()
    // The model explored first, then presented v1.
    expect(await page.getByTestId('tool-call').allTextContents()).toEqual(['list_files {"path":"."}', 'read_file {"path":"README.md"}'])
    await eventually(() => openCard(page).locator('header strong').textContent(), 'Plan v1')
    expect(await openCard(page).locator('h1').textContent()).toBe('Plan: add a cache to the importer')
    // The badge names the instance that answered the page's last state request: while the chat
    // waits for the review, the page's polls alone go through the round-robin proxy, to each in turn.
    for (const name of ['A', 'B', 'A']) await expect.poll(() => page.getByTestId('instance').textContent()).toBe(`instance ${name}`)
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
    const looked = String((await web.logOf(chat)).find((e) => e.type === 'plan/review')!.data.plan).split('\n')[2]!
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
    // The answer that carries the plan out is held at its first reply while the card is read.
    const carrying = web.holdReply()
    await openCard(page).getByTestId('approve').click()
    const held = await carrying
    await expect.poll(() => page.locator('[data-testid=plan-card][data-state=output-available] [data-testid=plan-outcome]').textContent()).toBe('Approved: carrying it out')
    held.release()
    await expect.poll(() => page.getByTestId('messages').textContent()).toContain('Done with "Plan: add a cache to the importer (revision 2)"')
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
    const log = await web.logOf(chat)
    expect(modes(log)).toEqual([true, false])
    expect(log.filter((e) => e.type === 'plan/review').map((e) => e.data.outcome)).toEqual(['requested', 'keep-planning', 'requested', 'approved'])
    const chats = web.cluster.served.slice(from).filter((s) => s.path === '/api/chat')
    expect(chats.length).toBeGreaterThanOrEqual(3)
    expect(new Set(web.cluster.served.slice(from).map((s) => s.instance))).toEqual(new Set(['A', 'B']))
    expect(errors).toEqual([])
    await page.screenshot({ path: `${ARTIFACTS}web-chat-arc.png`, fullPage: true })
    await web.leave(page)
  })

  it('XSS, R115: markup in a model reply, a plan and feedback renders as text; a link in the model\'s markdown loses an unsafe URL and opens in a new tab; no script runs', async () => {
    const { page, errors } = await web.open()
    const markup = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>'
    // The offline model quotes the user (its first 60 characters): its reply holds the markup.
    const short = '<img src=x onerror="window.__xss=1">'
    await type(page, `say ${short}`)
    await expect.poll(() => page.getByTestId('messages').textContent()).toContain(`You asked: "say ${short}"`)
    await eventually(() => page.getByTestId('status').textContent(), 'ready')
    // R115: the model's markdown is rendered, its links made safe; what the user typed stays text.
    await type(page, 'say [safe](https://a.example/) [x](javascript:alert(5))')
    await expect.poll(() => page.locator('[data-testid=assistant-text] a').count()).toBe(2)
    expect(
      await page.locator('[data-testid=assistant-text] a').evaluateAll((links) => links.map((a) => [a.textContent, a.getAttribute('href'), a.getAttribute('target'), a.getAttribute('rel')])),
    ).toEqual([
      ['safe', 'https://a.example/', '_blank', 'noopener noreferrer nofollow'],
      ['x', '', '_blank', 'noopener noreferrer nofollow'],
    ])
    expect(await page.locator('.message.user a').count()).toBe(0)
    await eventually(() => page.getByTestId('status').textContent(), 'ready')
    await type(page, `/plan ${markup}`)
    await openCard(page).waitFor()
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
    await web.leave(page)
  })

  it("R113, R118, R119: the conversation follows new content, a reader who scrolled up is not moved and gets Jump to latest; an unknown command gets a hint, not the model; after /plan <task>, /plan off and a question, the offline model answers the question", async () => {
    const { page, errors } = await web.open(undefined, { height: 420 }) // a short window: the conversation overflows
    const scroller = page.getByTestId('scroller')
    const modelRequests = () => web.cluster.served.filter((s) => s.path === '/api/chat').length
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
    await openCard(page).waitFor()
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
      .poll(() => page.getByTestId('assistant-text').last().textContent())
      .toBe(`You asked: "${question}". In the default mode I act directly, without presenting a plan first. I am the offline model, so I only say so; type /plan to have me explore, plan and ask for your approval.`)
    expect(await page.getByTestId('messages').textContent()).not.toContain('act directly on "The user')
    // R118: a message that starts with / is sent as `//…`, with one / removed.
    await eventually(() => page.getByTestId('status').textContent(), 'ready')
    await type(page, '//plann is a typo')
    await expect
      .poll(() => page.getByTestId('assistant-text').last().textContent())
      .toMatch(/^You asked: "\/plann is a typo"\./)
    expect(await page.locator('.message.user').last().textContent()).toBe('/plann is a typo')
    // R113: the reply followed into view (the user was at the end when they sent).
    await eventually(() => page.getByTestId('status').textContent(), 'ready')
    await expect.poll(() => inView(page.getByTestId('assistant-text').last())).toBe(true)
    expect(errors).toEqual([])
    await page.screenshot({ path: `${ARTIFACTS}web-chat-follow.png` })
    await web.leave(page)
  })

  it('R113, R116, R118: fits 390 px and 1440 px wide (screenshots): the header stays in view, every placeholder of the composer fits its box, the statechart is drawn at its own size with the active states in words and full size on demand, no console error', async () => {
    for (const width of [390, 1440]) {
      const { page, errors } = await web.open(undefined, { width })
      await type(page, '/plan add rate limiting to the API')
      await openCard(page).waitFor()
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
          'mode: active › headerTells',
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
      // The badge names the instance that answered the page's last poll, A or B in turn: for the
      // README's pictures the polls go to B (as the committed ones show), so a run changes no byte.
      const from = web.cluster.served.length
      web.cluster.route((path) => (path.endsWith('/state') ? 'B' : undefined))
      await expect.poll(() => web.cluster.served.slice(from).some((s) => s.path.endsWith('/state'))).toBe(true)
      await expect.poll(() => page.getByTestId('instance').textContent()).toBe('instance B')
      const path = `web-chat-${width}.png`
      await page.screenshot({ path: `${ARTIFACTS}${path}`, fullPage: width === 390 })
      // `PLAN_MODE_SCREENSHOTS=docs npx vitest run test/web-chat.test.ts` refreshes the README's pictures (the same picture, not a second one).
      if (process.env.PLAN_MODE_SCREENSHOTS === 'docs') await copyFile(`${ARTIFACTS}${path}`, `${DOCS}${path}`)
      web.cluster.route(undefined)
      await web.leave(page)
    }
  })

  it('R100, R114: comments on lines of v1 (each box naming its line as the plan shows it) go with Keep planning; the model gets them once, in the exit call\'s result, and revises the plan with them; the log records them with one closing record; a malformed body is a 400, a quote off the plan a 422 with the library\'s message, shown in the card', async () => {
    const { page, chat, errors } = await web.open()
    const task = 'add a cache to the importer'
    await type(page, `/plan ${task}`)
    await openCard(page).waitFor()
    await eventually(() => openCard(page).locator('header strong').textContent(), 'Plan v1')
    const requested = (await web.logOf(chat)).find((e) => e.type === 'plan/review' && e.data.outcome === 'requested')!.data
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
    const owner = (await page.context().cookies(web.cluster.url)).find((c) => c.name === 'plan_mode_owner')!
    const post = async (payload: unknown) => {
      const response = await fetch(new URL(`/api/chats/${chat}/review`, web.cluster.url), {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: new URL(web.cluster.url).origin, cookie: `${owner.name}=${owner.value}` },
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
    expect((await web.logOf(chat)).filter((e) => e.type === 'plan/review').map((e) => e.data.outcome)).toEqual(['requested'])
    await page.unroute('**/api/chats/*/review')

    // Keep planning with the feedback and the comment: the server records the answer, the card is
    // answered with the recorded feedback, and the chat goes on to v2.
    await openCard(page).getByTestId('keep-planning').click()
    const feedback = `Keep it small.\n\nComments on the plan:\n1. On ${JSON.stringify(quote)}: ${said}`
    await expect
      .poll(() => page.locator('[data-testid=plan-card][data-state=output-denied] [data-testid=plan-outcome]').textContent())
      .toBe(`Kept planning: ${feedback}`)
    await eventually(() => page.locator('[data-testid=plan-card][data-state=approval-requested] header strong').allTextContents(), ['Plan v2'])
    expect(await openCard(page).getByTestId('plan-body').textContent()).toContain(said)
    expect(await openCard(page).getByTestId('comment').count()).toBe(0) // v2's card starts with none

    // The log: one closing record for v1's review, with the comments and the feedback the model was
    // given in the exit call's result (toldInResult: R81), then v2's request.
    const log = await web.logOf(chat)
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
    expect((await web.logOf(chat)).filter((e) => e.type === 'plan/review').length).toBe(3)
    expect(await page.locator('.messages b, .messages img, .messages script').count()).toBe(0)
    expect(await page.evaluate(() => (window as { __xss?: unknown }).__xss)).toBeUndefined()
    // The one refusal the test provoked through the page (the quote changed on its way): no other error.
    expect(errors).toEqual([`console: Failed to load resource: the server responded with a status of 422 (Unprocessable Entity) (${new URL(`/api/chats/${chat}/review`, web.cluster.url)})`])
    await page.screenshot({ path: `${ARTIFACTS}web-chat-comments.png`, fullPage: true })
    await web.leave(page)
  })
})
