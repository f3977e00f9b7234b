import { readFileSync } from 'node:fs'
import type { ModelMessage } from 'ai'
import { describe, expect, it } from 'vitest'
import { createMemorySessionLog, type SessionLog } from '../src/index.js'
import { chatRequest } from '../examples/serverless-review.js'
import { scriptedModel } from './fixtures/ai-sdk-model.js'

const GUIDE = readFileSync(new URL('../docs/stateless-hosts.md', import.meta.url), 'utf8')
const EXAMPLE = readFileSync(new URL('../examples/serverless-review.ts', import.meta.url), 'utf8')
const SYSTEM = 'You are a coding agent.'
const SECTION = 'Plan mode: explore read-only, then present the whole plan with exit_plan_mode.'
const PLAN = '# Migrate the users table\n\n1. Add the column.\n2. Backfill it.'
const SECRET = 'a secret only the server knows'

/** Request 1 of the recipe: the model presents its plan; the response ends with the approval request. */
async function presentPlan(log: SessionLog) {
  const asked: ModelMessage[] = [{ role: 'user', content: 'Plan the migration.' }]
  const { model } = scriptedModel([{ toolCalls: [{ name: 'exit_plan_mode', input: { plan: PLAN } }] }])
  const response = await chatRequest(model, log, asked, SECRET)
  const request = response
    .flatMap((message) => (message.role === 'assistant' && typeof message.content !== 'string' ? message.content : []))
    .find((part) => part.type === 'tool-approval-request')
  if (request?.type !== 'tool-approval-request') throw new Error('no tool-approval-request in the response')
  return { history: [...asked, ...response], approvalId: request.approvalId, toolCallId: request.toolCallId }
}

/** The plan/review records of the log, without their ids. */
const reviewRecords = (log: SessionLog) =>
  log.events.filter((e) => e.type === 'plan/review').map((e) => {
    const { reviewId: _id, ...rest } = e.data as Record<string, unknown>
    return rest
  })

describe('docs/stateless-hosts.md: the serverless useChat recipe (durable reviews through the AI SDK tool approval)', () => {
  it('docs/stateless-hosts.md shows the example file verbatim', () => {
    expect(GUIDE).toContain(EXAMPLE.trim())
  })

  it('R82: the plan is presented in one request and approved in the next, each with a fresh service; the model reads the approval in the result', async () => {
    const log = createMemorySessionLog([{ type: 'plan/mode', data: { active: true } }])
    const { history, approvalId, toolCallId } = await presentPlan(log)
    expect(reviewRecords(log)).toEqual([{ outcome: 'requested', title: 'Migrate the users table', plan: PLAN, callId: toolCallId }])

    const { model, requests } = scriptedModel([{ text: 'Migrating now.' }])
    const approval: ModelMessage = { role: 'tool', content: [{ type: 'tool-approval-response', approvalId, approved: true }] }
    await chatRequest(model, log, [...history, approval], SECRET)
    const [step] = requests()
    expect(step!.system).toBe(SYSTEM)
    expect(step!.toolResults).toEqual([
      { toolName: 'exit_plan_mode', output: { type: 'text', value: 'Plan approved — plan mode exited; carry out the plan starting with your next step.' } },
    ])
    expect(step!.userTexts).toEqual(['Plan the migration.']) // told in the result: no notice
    expect(reviewRecords(log).at(-1)).toEqual({ outcome: 'approved', title: 'Migrate the users table', plan: PLAN, toldInResult: true })
    expect(log.events.filter((e) => e.type === 'plan/mode').map((e) => e.data)).toEqual([{ active: true }, { active: false }])
  })

  it('R82: a denial with a reason keeps planning, and the model reads the reason as the feedback', async () => {
    const log = createMemorySessionLog([{ type: 'plan/mode', data: { active: true } }])
    const { history, approvalId } = await presentPlan(log)
    const { model, requests } = scriptedModel([{ text: 'Revising.' }])
    const denial: ModelMessage = { role: 'tool', content: [{ type: 'tool-approval-response', approvalId, approved: false, reason: 'Backfill in batches.' }] }
    await chatRequest(model, log, [...history, denial], SECRET)
    const [step] = requests()
    expect(step!.system).toBe(`${SYSTEM}\n\n${SECTION}`)
    expect(step!.toolResults).toEqual([
      { toolName: 'exit_plan_mode', output: { type: 'error-text', value: 'The user chose to keep planning; their feedback: Backfill in batches.' } },
    ])
    expect(reviewRecords(log).at(-1)).toEqual({
      outcome: 'keep-planning',
      title: 'Migrate the users table',
      plan: PLAN,
      feedback: 'Backfill in batches.',
      toldInResult: true,
    })
  })
})
