'use client'
import { useChat } from '@ai-sdk/react'
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses } from 'ai'
import { useState } from 'react'

/** The chat page: `useChat` on /api/chat, `/plan …` on /api/plan, a card to review each plan. */
export function PlanModeChat({ chatId }: { chatId: string }) {
  const { messages, sendMessage, addToolApprovalResponse, status } = useChat({
    id: chatId,
    transport: new DefaultChatTransport({ api: '/api/chat' }),
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses, // an answered card continues
  })
  const [input, setInput] = useState('')
  const [feedback, setFeedback] = useState('')
  const [said, setSaid] = useState('') // what the last /plan answered

  async function submit(text: string) {
    setInput('')
    if (text !== '/plan' && !text.startsWith('/plan ')) return sendMessage({ text })
    const body = JSON.stringify({ id: chatId, input: text.slice('/plan'.length) })
    const result: { text: string; message: string } = await (await fetch('/api/plan', { method: 'POST', body })).json()
    setSaid(result.text)
    if (result.message) await sendMessage({ text: result.message })
  }

  return (
    <main>
      {messages.flatMap((message) =>
        message.parts.map((part, i) => {
          const key = `${message.id}-${i}`
          if (part.type === 'text') return <p key={key} className={message.role}>{part.text}</p>
          if (part.type !== 'tool-exit_plan_mode' || part.state !== 'approval-requested') return null
          const answer = (approved: boolean) => addToolApprovalResponse({ id: part.approval.id, approved, reason: feedback })
          return (
            <article key={key}>
              <pre>{(part.input as { plan: string }).plan}</pre>
              <button onClick={() => answer(true)}>Approve</button>
              <textarea value={feedback} onChange={(event) => setFeedback(event.target.value)} placeholder="What should change?" />
              <button onClick={() => answer(false)}>Keep planning</button>
            </article>
          )
        }),
      )}
      {said && <p role="status">{said}</p>}
      <form onSubmit={(event) => (event.preventDefault(), void submit(input))}>
        <input value={input} onChange={(event) => setInput(event.target.value)} placeholder="Message, /plan or /plan off" disabled={status !== 'ready'} />
      </form>
    </main>
  )
}
