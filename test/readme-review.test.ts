import { readFileSync } from 'node:fs'
import { createInterface, type Interface } from 'node:readline/promises'
import { PassThrough } from 'node:stream'
import { afterEach, describe, expect, it } from 'vitest'
import { createAgent } from '../examples/hand-written-loop.js'
import type { Model } from '../examples/model.js'
import { createTerminalReview } from '../examples/terminal-review.js'

const GUIDE = readFileSync(new URL('../docs/hand-written-loop.md', import.meta.url), 'utf8')
const EXAMPLE = readFileSync(new URL('../examples/terminal-review.ts', import.meta.url), 'utf8')

const PLAN = '# Migration\n1. Migrate.'
const CHOICE_PROMPT = 'Approve this plan and leave plan mode? [1-2, empty to dismiss] '
const FEEDBACK_PROMPT = 'What should change? '

/** A terminal over in-memory streams: `answer(prompt, line)` types `line` once `prompt` is shown. */
function fakeTerminal() {
  const input = new PassThrough()
  const output = new PassThrough()
  let screen = ''
  let shown = 0
  const waiting: { prompt: string; resolve: () => void }[] = []
  /** Settles the oldest waits whose prompt has appeared since the last one that did. */
  const check = () => {
    while (waiting.length > 0) {
      const at = screen.indexOf(waiting[0]!.prompt, shown)
      if (at < 0) return
      shown = at + waiting[0]!.prompt.length
      waiting.shift()!.resolve()
    }
  }
  output.on('data', (chunk: Buffer) => {
    screen += chunk.toString()
    check()
  })
  const rl: Interface = createInterface({ input, output, terminal: false })
  /** Resolves once `prompt` appears (after the prompts waited for before it). */
  const shows = (prompt: string) =>
    new Promise<void>((resolve) => {
      waiting.push({ prompt, resolve })
      check()
    })
  return {
    rl,
    output,
    screen: () => screen,
    /** Types `line` and Enter once `prompt` appears. */
    answer(prompt: string, line: string) {
      void shows(prompt).then(() => input.write(`${line}\n`))
    },
    shows,
  }
}

const terminals: Interface[] = []
afterEach(() => {
  for (const rl of terminals.splice(0)) rl.close()
})

describe('docs/hand-written-loop.md: the sample ReviewChannel (a terminal)', () => {
  it('docs/hand-written-loop.md shows the example file verbatim', () => {
    expect(GUIDE).toContain(EXAMPLE.trim())
  })

  it('R43, R45, R47, R50: it shows the plan, sends the feedback verbatim to the model, then approves (in the README loop)', async () => {
    const terminal = fakeTerminal()
    terminals.push(terminal.rl)
    const requests: string[][] = []
    const replies = [
      { text: 'Plan.', toolCall: { name: 'exit_plan_mode', args: { plan: PLAN } } },
      { text: 'Revised.', toolCall: { name: 'exit_plan_mode', args: { plan: `${PLAN}\n2. Roll back.` } } },
      { text: 'Migrating now.' },
    ]
    const model: Model = async ({ messages }) => {
      requests.push(messages)
      return replies.shift() ?? { text: 'done' }
    }
    const { planMode, agent, runTurn } = createAgent(model, createTerminalReview(terminal.rl, terminal.output))
    try {
      await planMode.set(agent, true)
      terminal.answer(CHOICE_PROMPT, '2')
      terminal.answer(FEEDBACK_PROMPT, 'Add a rollback step.')
      terminal.answer(CHOICE_PROMPT, '1')
      await runTurn('migrate the database')
      expect(requests[1]!.at(-1)).toBe('The user chose to keep planning; their feedback: Add a rollback step.')
      expect(requests[2]!.at(-1)).toBe('Plan approved — plan mode exited; carry out the plan starting with your next step.')
      expect(planMode.get(agent)).toEqual({ active: false })
      expect(terminal.screen()).toContain(
        [
          '',
          'Plan review',
          '',
          PLAN,
          '',
          '  1. Approve: Leave plan mode; the plan is carried out from the next step.',
          '  2. Keep planning: Stay in plan mode; feedback goes back to the model.',
          CHOICE_PROMPT,
        ].join('\n'),
      )
      const outcomes = agent.session.events.filter((e) => e.type === 'plan/review').map((e) => e.data)
      expect(outcomes).toEqual([
        { outcome: 'keep-planning', title: 'Migration', plan: PLAN, feedback: 'Add a rollback step.' },
        { outcome: 'approved', title: 'Migration', plan: `${PLAN}\n2. Roll back.` },
      ])
    } finally {
      await planMode.dispose()
    }
  })

  it('R46: an empty answer dismisses the review; the model is told to stop and wait', async () => {
    const terminal = fakeTerminal()
    terminals.push(terminal.rl)
    const { planMode, agent } = createAgent(async () => ({ text: 'unused' }), createTerminalReview(terminal.rl, terminal.output))
    try {
      await planMode.set(agent, true)
      terminal.answer(CHOICE_PROMPT, '')
      await expect(planMode.exitTool.execute({ plan: PLAN }, { agent })).rejects.toThrow(
        'The user dismissed the plan review to speak instead; stay in plan mode, stop here, and wait for their message.',
      )
      expect(planMode.get(agent)).toEqual({ active: true })
    } finally {
      await planMode.dispose()
    }
  })

  it('R48: a /plan off during the review aborts its signal: the prompt stops asking and the terminal is free again', async () => {
    const terminal = fakeTerminal()
    terminals.push(terminal.rl)
    const { planMode, agent } = createAgent(async () => ({ text: 'unused' }), createTerminalReview(terminal.rl, terminal.output))
    try {
      await planMode.set(agent, true)
      const shown = terminal.shows(CHOICE_PROMPT)
      const call = planMode.exitTool.execute({ plan: PLAN }, { agent })
      await shown
      expect(await planMode.command.run({ agent, rawInput: 'off' })).toEqual({ kind: 'success', text: 'Plan mode off.' })
      await expect(call).rejects.toThrow('The user changed the plan mode directly; the review is closed.')
      // The aborted question no longer holds the terminal: the next line goes to the next question.
      const next = terminal.rl.question('> ')
      terminal.answer('> ', 'hello')
      expect(await next).toBe('hello')
    } finally {
      await planMode.dispose()
    }
  })
})
