/**
 * The web chat's page: the chat is named in the URL (`?chat=<id>`, made up on the first visit),
 * so a reload, another tab or another device shows the same chat. Its saved messages come from
 * the server (any instance) before the chat starts; a chat the server does not hold yet starts empty.
 */
import type { UIMessage } from 'ai'
import { createRoot } from 'react-dom/client'
import { App } from './App.js'
import '../../visualizer/client/style.css'
import './style.css'

const CHAT_ID = /^[A-Za-z0-9_-]{1,100}$/

function chatIdFromUrl(): string {
  const url = new URL(window.location.href)
  const named = url.searchParams.get('chat')
  if (named !== null && CHAT_ID.test(named)) return named
  const id = crypto.randomUUID()
  url.searchParams.set('chat', id)
  window.history.replaceState(null, '', url)
  return id
}

const chatId = chatIdFromUrl()
const root = createRoot(document.getElementById('root')!)
fetch(`/api/chats/${chatId}`)
  .then(async (response) => {
    // A chat nobody has written in yet is no chat on the server (R103: a GET creates nothing): it starts empty.
    if (response.status === 404) return { messages: [] }
    if (response.ok) return response.json()
    const { error } = (await response.json().catch(() => ({}))) as { error?: unknown }
    throw new Error(`the chat could not be loaded (${response.status})${typeof error === 'string' ? `: ${error}` : ''}`)
  })
  .then((saved: { messages: UIMessage[] }) => root.render(<App chatId={chatId} initialMessages={saved.messages} />))
  .catch((error: unknown) => root.render(<p className="load-error">{error instanceof Error ? error.message : String(error)}</p>))
