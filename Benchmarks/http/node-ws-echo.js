// The Node.js peer of the WebSocket echo row: Debian's node-ws (`ws`), echoing every
// message as it came (text stays text), one thread.
//     NODE_PATH=/usr/share/nodejs node node-ws-echo.js PORT
'use strict';
const { WebSocketServer } = require('ws');
const wss = new WebSocketServer({ host: '127.0.0.1', port: Number(process.argv[2] || 0), path: '/ws', perMessageDeflate: false });
wss.on('listening', () => console.log(`listening on 127.0.0.1:${wss.address().port}`));
wss.on('connection', (ws) => ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary })));
for (const s of ['SIGINT', 'SIGTERM']) process.on(s, () => process.exit(0));
