import { Worker } from 'node:worker_threads'
import { createRequire } from 'node:module'
const elk = createRequire(import.meta.url).resolve('elkjs/lib/elk.bundled.js')
const code = `const { parentPort, workerData } = require('node:worker_threads')
const ELK = require(workerData.elk)
const elk = new ELK()
parentPort.on('message', ({ id, graph }) => elk.layout(graph).then((layout) => parentPort.postMessage({ id, layout }), (error) => parentPort.postMessage({ id, error: String((error && error.message) || error) })))`
const t0 = process.cpuUsage(); const w0 = Date.now()
const w = new Worker(code, { eval: true, workerData: { elk } })
w.unref()
w.on('message', (m) => { console.log(JSON.stringify(m).slice(0, 200), Date.now() - w0, process.cpuUsage(t0)) })
w.postMessage({ id: 1, graph: { id: 'root', children: [{ id: 'a', width: 10, height: 10 }, { id: 'b', width: 10, height: 10 }], edges: [{ id: 'e', sources: ['a'], targets: ['b'] }] } })
setTimeout(() => {}, 3000)
