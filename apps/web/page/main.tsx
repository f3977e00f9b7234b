/**
 * The web chat's page: the chat is named in the URL (`?chat=<id>`, made up on the first visit),
 * so a reload, another tab or another device shows the same chat. Its saved messages come from
 * the server (any instance) before the chat starts; a chat the server does not hold yet starts empty.
 */
// First: it must run before zod (in the AI SDK) loads.
import { VALIDATES_WITHOUT_EVAL } from './jitless.js'
import type { UIMessage } from 'ai'
import { createRoot } from 'react-dom/client'
import { App } from './App.js'
import '../../shared/visualizer/client/style.css'
import './style.css'

const CHAT_ID = /^[A-Za-z0-9_-]{1,100}$/

/** The chat the URL names, or a new one (`made: true`): its id is made up here and put in the URL. */
function chatIdFromUrl(): { id: string; made: boolean } {
  const url = new URL(window.location.href)
  const named = url.searchParams.get('chat')
  if (named !== null && CHAT_ID.test(named)) return { id: named, made: false }
  const id = crypto.randomUUID()
  url.searchParams.set('chat', id)
  window.history.replaceState(null, '', url)
  return { id, made: true }
}

if (!VALIDATES_WITHOUT_EVAL) console.warn('zod may test new Function, which the CSP refuses')
const { id: chatId, made } = chatIdFromUrl()
const root = createRoot(document.getElementById('root')!)
/** The chat's saved messages; a chat whose id was just made up exists nowhere yet: nothing to ask. */
async function savedMessages(): Promise<UIMessage[]> {
  if (made) return []
  const response = await fetch(`/api/chats/${chatId}`)
  // A chat nobody has written in yet is no chat on the server (R103: a GET creates nothing): it starts empty.
  if (response.status === 404) return []
  if (response.ok) return ((await response.json()) as { messages: UIMessage[] }).messages
  const { error } = (await response.json().catch(() => ({}))) as { error?: unknown }
  throw new Error(`the chat could not be loaded (${response.status})${typeof error === 'string' ? `: ${error}` : ''}`)
}

savedMessages()
  .then((messages) => root.render(<App chatId={chatId} initialMessages={messages} isNew={made} />))
  .catch((error: unknown) => root.render(<p className="load-error">{error instanceof Error ? error.message : String(error)}</p>))
