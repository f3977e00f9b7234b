import { describe, expect, it } from 'vitest'
import { APPROVED_NEWS_TEXT, REVIEW_MESSAGES } from '../src/plan/review.js'
import { NOTICE_TEXTS } from '../src/plan/narration.js'
import { offlineReply, readConversation } from '../apps/shared/offline-model.js'

/**
 * The offline model (`apps/shared/offline-model.ts`, the chat apps' model without an API key) reads a
 * provider-level prompt: what it answers is the user's latest message, whatever plan mode adds.
 */
const SECTION = '## Plan mode (test section)'
type Prompt = Parameters<typeof readConversation>[0]

const system = (planning: boolean): Prompt[number] => ({ role: 'system', content: planning ? `You help.\n${SECTION}` : 'You help.' })
const user = (text: string): Prompt[number] => ({ role: 'user', content: [{ type: 'text', text }] })
const call = (toolCallId: string, toolName: string, input: unknown): Prompt[number] => ({
  role: 'assistant',
  content: [{ type: 'tool-call', toolCallId, toolName, input }],
})
const result = (toolCallId: string, toolName: string, output: { type: 'text'; value: string } | { type: 'error-text'; value: string }): Prompt[number] => ({
  role: 'tool',
  content: [{ type: 'tool-result', toolCallId, toolName, output }],
})

const QUESTION = 'What does the importer do?'
const ASKED = `You asked: "${QUESTION}". In the default mode I act directly, without presenting a plan first. I am the offline model, so I only say so; type /plan to have me explore, plan and ask for your approval.`

/** `/plan add a cache`, the model explores and presents a plan, the user types `/plan off` at the review (R48). */
const plannedThenLeft: Prompt = [
  user('add a cache'),
  call('c1', 'list_files', { path: '.' }),
  result('c1', 'list_files', { type: 'text', value: 'README.md' }),
  call('c2', 'exit_plan_mode', { plan: '# Plan: add a cache\n\n1. Do it.' }),
  result('c2', 'exit_plan_mode', { type: 'error-text', value: REVIEW_MESSAGES.superseded }),
]

describe('the offline model answers the user (R119)', () => {
  it("R119: after /plan <task>, /plan off at the review and a plain question, it answers the question, not the boundary's news or notice", () => {
    // The boundary tells the review's outcome and the switch after the question (R81, R32).
    for (const told of [[REVIEW_MESSAGES.superseded, NOTICE_TEXTS.leaving], [NOTICE_TEXTS.leaving], [REVIEW_MESSAGES.superseded]]) {
      const prompt = [system(false), ...plannedThenLeft, user(QUESTION), ...told.map(user)]
      expect(readConversation(prompt).request).toBe(QUESTION)
      expect(offlineReply(readConversation(prompt), SECTION)).toEqual({ text: ASKED })
    }
  })

  it('R119: no news of a review is ever the request: approved, left, keep planning (with feedback) alike', () => {
    for (const news of [APPROVED_NEWS_TEXT, REVIEW_MESSAGES.left, REVIEW_MESSAGES.keepPlanning, `${REVIEW_MESSAGES.keepPlanningWithFeedback}Use SQLite.`]) {
      expect(readConversation([system(false), user(QUESTION), user(news)]).request).toBe(QUESTION)
    }
  })

  it('R119: /plan off while the request is being planned (a call before the notice) still stops planning it', () => {
    const prompt = [system(false), user('add a cache'), call('c1', 'list_files', { path: '.' }), result('c1', 'list_files', { type: 'text', value: 'README.md' }), user(NOTICE_TEXTS.leaving)]
    expect(offlineReply(readConversation(prompt), SECTION)).toEqual({
      text: 'You switched back to the default mode, so I stop planning and act directly on "add a cache". As the offline model I change nothing, but a real model would make the change now, without a plan review.',
    })
  })
})
