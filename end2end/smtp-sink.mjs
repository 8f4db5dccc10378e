// A tiny SMTP server for the browser tests: `node smtp-sink.mjs PORT`.
//
// It speaks just what lettre (the server's mail client) uses: EHLO/HELO, MAIL, RCPT, DATA,
// RSET, NOOP, QUIT. Every message is accepted and dropped, except that a message whose
// Subject contains "[relay-fail]" is answered `451 4.3.0 relay busy, try again later` after
// its DATA: a transient failure, so the server defers it and the queue retries the task
// until it runs out of attempts. A message whose Subject contains "[relay-slow]" is accepted,
// but only after 6 s, as a relay under load would: that keeps its task running long enough
// for a test to cancel or requeue it. Both give the tests real behaviour of a relay, with no
// test-only code in the server.
import net from 'node:net';

const port = Number(process.argv[2]);
if (!Number.isInteger(port) || port <= 0) {
  console.error('usage: node smtp-sink.mjs PORT');
  process.exit(2);
}

const FAIL_MARK = '[relay-fail]';
const SLOW_MARK = '[relay-slow]';
const SLOW_MS = 6_000;

/** The Subject header of a message (folded lines joined), or ''. */
function subjectOf(lines) {
  const end = lines.indexOf('');
  const headers = end === -1 ? lines : lines.slice(0, end);
  const start = headers.findIndex((line) => /^subject:/i.test(line));
  if (start === -1) return '';
  let subject = headers[start];
  for (const line of headers.slice(start + 1)) {
    if (!/^[ \t]/.test(line)) break;
    subject += line;
  }
  return subject;
}

const server = net.createServer((socket) => {
  let buffered = '';
  let message = null; // the lines of a message while in DATA, else null
  const reply = (text) => socket.write(`${text}\r\n`);
  reply('220 localhost smtp-sink');
  socket.on('data', (chunk) => {
    buffered += chunk.toString('utf8');
    let newline;
    while ((newline = buffered.indexOf('\r\n')) !== -1) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 2);
      if (message !== null) {
        if (line === '.') {
          const subject = subjectOf(message);
          message = null;
          if (subject.includes(FAIL_MARK)) reply('451 4.3.0 relay busy, try again later');
          else if (subject.includes(SLOW_MARK)) setTimeout(() => reply('250 2.0.0 accepted'), SLOW_MS);
          else reply('250 2.0.0 accepted');
        } else {
          message.push(line.startsWith('.') ? line.slice(1) : line);
        }
        continue;
      }
      const verb = line.slice(0, 4).toUpperCase();
      if (verb === 'EHLO' || verb === 'HELO') reply('250-localhost\r\n250-8BITMIME\r\n250 SMTPUTF8');
      else if (verb === 'DATA') {
        message = [];
        reply('354 end data with <CR><LF>.<CR><LF>');
      } else if (verb === 'QUIT') {
        reply('221 bye');
        socket.end();
      } else if (['MAIL', 'RCPT', 'RSET', 'NOOP'].includes(verb)) reply('250 OK');
      else reply('502 5.5.2 command not implemented');
    }
  });
  socket.on('error', () => socket.destroy());
});

server.listen(port, '127.0.0.1', () => console.log(`smtp-sink listening on 127.0.0.1:${port}`));
