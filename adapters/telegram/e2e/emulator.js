'use strict';
// Runs the telegram-test-api Bot API emulator on 127.0.0.1 and plays the
// Telegram users of the adapter's end-to-end test (TestEmulatorE2E).
//
//   node emulator.js <port> <bot token>
//
// It prints {"op":"ready","url":...} once the emulator listens, then reads
// one JSON command per line on stdin and answers with one JSON line:
//
//   {"op":"send","user":1,"chat":1,"text":"/fs_listdir ."}
//     -> {"op":"replies","replies":[{"text":...,"chat_id":...,"reply_to":...,"parse_mode":...}]}
//        the bot's messages to that chat, waited for up to "timeout" ms
//   {"op":"callback","user":1,"chat":1,"data":"cf:run:…"}
//     -> the same, for a press on an inline keyboard button with that
//        callback data; with "quiet":true it waits "timeout" ms and
//        answers no replies without reading any (a poll left running
//        would take the chat's next messages)
//   {"op":"stop"} -> {"op":"stopped"}, then exits
//
// Errors are answered as {"op":"error","error":...}.
const readline = require('readline');
const TelegramServer = require('telegram-test-api');

const [port, token] = process.argv.slice(2);
if (!port || !token) {
  process.stderr.write('usage: node emulator.js <port> <bot token>\n');
  process.exit(2);
}

function out(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

function client(server, cmd) {
  return server.getClient(token, {
    userId: cmd.user,
    chatId: cmd.chat,
    firstName: cmd.name || 'User',
    userName: 'user' + cmd.user,
    timeout: cmd.timeout || 20000,
    interval: 50,
  });
}

function replies(updates) {
  return updates.result.map((u) => ({
    text: u.message.text,
    chat_id: String(u.message.chat_id),
    reply_to: u.message.reply_to_message_id === undefined ? '' : String(u.message.reply_to_message_id),
    parse_mode: u.message.parse_mode || '',
    reply_markup: typeof u.message.reply_markup === 'string' ? u.message.reply_markup : u.message.reply_markup ? JSON.stringify(u.message.reply_markup) : '',
  }));
}

async function callback(server, cmd) {
  const c = client(server, cmd);
  await c.sendCallback(c.makeCallbackQuery(cmd.data));
  if (cmd.quiet) {
    await new Promise((r) => setTimeout(r, cmd.timeout || 1000));
    return [];
  }
  return replies(await c.getUpdates());
}

async function send(server, cmd) {
  const c = client(server, cmd);
  if (cmd.text.startsWith('/')) {
    await c.sendCommand(c.makeCommand(cmd.text));
  } else {
    await c.sendMessage(c.makeMessage(cmd.text));
  }
  return replies(await c.getUpdates());
}

(async () => {
  const server = new TelegramServer({ port: Number(port), host: '127.0.0.1', storeTimeout: 600 });
  await server.start();
  out({ op: 'ready', url: server.config.apiURL });
  const rl = readline.createInterface({ input: process.stdin });
  for await (const line of rl) {
    let cmd;
    try {
      cmd = JSON.parse(line);
    } catch (e) {
      out({ op: 'error', error: 'not JSON: ' + line });
      continue;
    }
    try {
      if (cmd.op === 'send') {
        out({ op: 'replies', replies: await send(server, cmd) });
      } else if (cmd.op === 'callback') {
        out({ op: 'replies', replies: await callback(server, cmd) });
      } else if (cmd.op === 'stop') {
        break;
      } else {
        out({ op: 'error', error: 'unknown op ' + cmd.op });
      }
    } catch (e) {
      out({ op: 'error', error: String((e && e.message) || e) });
    }
  }
  await server.stop();
  out({ op: 'stopped' });
  process.exit(0);
})().catch((e) => {
  out({ op: 'error', error: String((e && e.message) || e) });
  process.exit(1);
});
