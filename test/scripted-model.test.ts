import { generateText, jsonSchema, tool } from 'ai'
import { expect, it } from 'vitest'
import { respondingModel } from '../apps/shared/scripted-model.js'

it('the offline models give tool calls ids unique across models, as a provider does: a chat continued by another instance matches approvals by them (R82; regression: both gave call-0-0)', async () => {
  const reply = () => ({ toolCalls: [{ name: 'noop', input: {} }] })
  const ids = await Promise.all(
    [respondingModel(reply), respondingModel(reply)].map(async (model) => {
      const result = await generateText({ model, prompt: 'go', tools: { noop: tool({ inputSchema: jsonSchema({ type: 'object', properties: {} }), execute: async () => 'ok' }) } })
      return result.toolCalls.map((call) => call.toolCallId)
    }),
  )
  expect(ids[0]).toHaveLength(1)
  expect(ids[0]![0]).not.toBe(ids[1]![0])
})
