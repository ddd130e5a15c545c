// End-to-end test of the web panel in headless Chromium.
//
//   node e2e.mjs <base-url> <token> <out-dir> [<reader-base-url> <reader-token>]
//
// It logs in, runs verbs from the command box and from the generated form,
// checks a forbidden path is refused, walks the targets and outbox views,
// and writes screenshots to <out-dir>. Any failed step, page error or
// console error (a Content-Security-Policy violation, say) exits non-zero.
// With a second hub whose web identity holds no admin permission (the
// built-in reader role), it checks the panel hides the admin views there.
import { chromium } from 'playwright-core';
import { mkdtempSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const [base, token, outDir, readerBase, readerToken] = process.argv.slice(2);
// A pairing code a stranger was given, and its identity (set by the test).
const pairingCode = process.env.PAIRING_CODE || '';
const pairingIdentity = process.env.PAIRING_IDENTITY || '';
if (!base || !token || !outDir) {
  console.error('usage: node e2e.mjs <base-url> <token> <out-dir>');
  process.exit(2);
}
mkdirSync(outDir, { recursive: true });

const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';
const args = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run'];
const TIMEOUT = 20000;
const problems = [];
// While positive, a 4xx the step provokes on purpose is not a defect.
let expectRefusal = 0;
const profiles = [];

async function launch(options) {
  const dir = mkdtempSync(join(tmpdir(), 'hub-e2e-'));
  profiles.push(dir);
  const ctx = await chromium.launchPersistentContext(dir, { executablePath, args, headless: true, ...options });
  ctx.setDefaultTimeout(TIMEOUT);
  return ctx;
}

function watch(page, name) {
  // The panel asks before revoking access.
  page.on('dialog', (d) => d.accept());
  page.on('pageerror', (e) => problems.push(`${name}: page error: ${e.message}`));
  page.on('console', (m) => {
    // A 401 while logged out is expected; anything else is a defect.
    if (expectRefusal > 0 && /status of 4\d\d/.test(m.text())) return;
    if (m.type() === 'error' && !/status of 401/.test(m.text())) problems.push(`${name}: console error: ${m.text()}`);
  });
}

let step = 0;
async function check(name, fn) {
  step++;
  await fn();
  console.log(`ok ${step} - ${name}`);
}

async function shot(page, file) {
  await page.screenshot({ path: join(outDir, file), fullPage: false });
}

// reply waits for a hub reply bubble containing text.
function reply(page, text) {
  return page.locator('#messages .msg.reply', { hasText: text }).last();
}

async function send(page, text) {
  const input = page.locator('#input');
  await input.fill(text);
  await input.press('Escape');
  await input.press('Enter');
}

let exitCode = 0;
let desktop;
let phone;
try {
  // ---- Desktop, light ------------------------------------------------------
  desktop = await launch({ viewport: { width: 1280, height: 800 }, colorScheme: 'light' });
  const page = desktop.pages()[0] || await desktop.newPage();
  watch(page, 'desktop');

  await check('the login view shows without a session', async () => {
    await page.goto(base);
    await page.locator('#login-form').waitFor();
    await shot(page, '01-login.png');
  });

  await check('a wrong token is refused', async () => {
    await page.fill('#token', 'not-the-token');
    await page.click('#login-form button[type=submit]');
    await page.locator('#login-error', { hasText: 'not right' }).waitFor();
  });

  await check('the right token logs in', async () => {
    await page.fill('#token', token);
    await page.click('#login-form button[type=submit]');
    await page.locator('#app').waitFor();
    await page.locator('#conn[data-state="live"]').waitFor();
  });

  await check('/fs.listDir . lists the workspace', async () => {
    await send(page, '/fs.listDir .');
    await page.locator('#messages .msg.inbound', { hasText: '/fs.listDir .' }).waitFor();
    await reply(page, 'notes.txt').waitFor();
    await reply(page, 'src/').waitFor();
  });

  await check('typing / offers verb completion; arrows and Tab pick one', async () => {
    const input = page.locator('#input');
    await input.fill('');
    await input.pressSequentially('/fs.re');
    await page.locator('#completions li', { hasText: '/fs.readRange' }).waitFor();
    await shot(page, '03-completion.png');
    const names = await page.locator('#completions .name').allTextContents();
    const want = names.indexOf('/fs.readRange');
    if (want < 0) throw new Error(`completion lacks /fs.readRange: ${names}`);
    for (let i = 0; i < want; i++) await input.press('ArrowDown');
    await input.press('Tab');
    const v = await input.inputValue();
    if (v !== '/fs.readRange ') throw new Error(`picked ${JSON.stringify(v)}, want "/fs.readRange "`);
    await page.locator('#usage', { hasText: '<startLine>' }).waitFor();
  });

  await check('the usage hint fills while a verb is typed, and empties without one', async () => {
    const input = page.locator('#input');
    await input.fill('');
    await input.pressSequentially('/proc.run ec');
    await page.locator('#usage', { hasText: '/proc.run <executable> [arguments…]' }).waitFor();
    await input.fill('');
    await input.pressSequentially('hello');
    await page.waitForFunction(() => document.getElementById('usage').textContent === '');
    await input.fill('/fs.readRange '); // where the completion step left it, for the form
  });

  await check('the form is generated from the verb schema', async () => {
    await page.click('#form-toggle');
    await page.locator('#form-panel').waitFor();
    const verb = await page.locator('#form-verb').inputValue();
    if (verb !== 'fs.readRange') throw new Error(`form opened for ${verb}`);
    await page.locator('#f-path[required]').waitFor();
    await page.locator('#f-startLine[type=number]').waitFor();
    await page.locator('#f-includeLineNumbers[type=checkbox]').waitFor();
    if (!(await page.locator('#f-includeLineNumbers').isChecked())) throw new Error('includeLineNumbers does not show its default (true)');
    await page.locator('.field[data-name="path"] .req').waitFor();
    await page.fill('#f-path', 'notes.txt');
    await page.fill('#f-startLine', '2');
    await page.fill('#f-endLine', '3');
    await shot(page, '04-form.png');
  });

  await check('the form sends fs.readRange through the chat', async () => {
    await page.click('#verb-form button[data-mode="chat"]');
    await reply(page, '2: beta').waitFor();
    await reply(page, '3: gamma').waitFor();
    const pre = reply(page, '2: beta').locator('pre');
    if (await pre.count() === 0) throw new Error('the code block is not rendered as <pre>');
  });

  await check('the form runs a verb through /api/execute', async () => {
    await page.click('#form-toggle');
    await page.selectOption('#form-verb', 'fs.lineCount');
    await page.fill('#f-path', 'notes.txt');
    await page.click('#verb-form button[data-mode="api"]');
    await page.locator('#messages .msg.api', { hasText: '"lineCount": 4' }).waitFor();
  });

  await check('the form edits with multi-line texts: a diff comes back', async () => {
    await page.click('#form-toggle');
    await page.selectOption('#form-verb', 'fs.edit');
    await page.locator('textarea#f-oldText').waitFor();
    await page.locator('textarea#f-newText').waitFor();
    await page.fill('#f-path', 'edit-me.txt');
    await page.fill('#f-oldText', 'two\nthree');
    await page.fill('#f-newText', 'TWO\nTHREE');
    await page.click('#verb-form button[data-mode="chat"]');
    const r = reply(page, 'Edited');
    await r.waitFor();
    const text = await r.textContent();
    if (!text.includes('-two') || !text.includes('+THREE')) throw new Error(`the reply lacks the diff: ${text}`);
    if (await r.locator('pre').count() === 0) throw new Error('the diff is not rendered as a code block');
  });

  await check('the form takes a list of edits as JSON', async () => {
    await page.click('#form-toggle');
    await page.selectOption('#form-verb', 'fs.edit');
    await page.fill('#f-path', 'edit-me.txt');
    await page.fill('#f-edits', '[{"oldText": "one", "newText": "1"}, {"oldText": "four", "newText": "4"}]');
    await page.click('#verb-form button[data-mode="api"]');
    await page.locator('#messages .msg.api', { hasText: '"replacements": 2' }).waitFor();
  });

  await check('a named command has its form: its enum parameter is a select, and it runs', async () => {
    await page.click('#form-toggle');
    await page.selectOption('#form-verb', 'cmd.tally');
    const opts = await page.locator('select#f-which option').allTextContents();
    if (opts.join(',') !== 'notes.txt,long.txt') throw new Error(`the enum's choices: ${opts}`);
    await page.selectOption('#f-which', 'notes.txt');
    await shot(page, '17-command-form.png');
    await page.click('#verb-form button[data-mode="api"]');
    const r = page.locator('#messages .msg.api', { hasText: 'cmd.tally' }).last();
    await r.waitFor();
    if (!(await r.textContent()).includes('"lineCount": 4')) throw new Error(`cmd.tally answered ${await r.textContent()}`);
  });

  await check('a held call opens the confirm dialog; Run runs it once, a second Run says it was decided', async () => {
    await send(page, '/fs.deleteFile delete-me.txt');
    const d = page.locator('#confirm-dialog[open]');
    await d.waitFor();
    await d.locator('text=fs.deleteFile').first().waitFor();
    await shot(page, '18-confirm.png');
    await d.locator('button.confirm-yes').click();
    await d.locator('.confirm-note', { hasText: 'Running it.' }).waitFor();
    await d.locator('button.confirm-close').click();
    await reply(page, 'Deleted').waitFor();
    await page.locator('#messages .msg.held button', { hasText: 'Review' }).last().click();
    await page.locator('#confirm-dialog[open] button.confirm-yes').click();
    await page.locator('#confirm-dialog .confirm-note', { hasText: 'already decided' }).waitFor();
    await page.locator('#confirm-dialog button.confirm-close').click();
  });

  await check('a path outside the workspace is refused with forbidden_path', async () => {
    await send(page, '/fs.readFile ../etc/passwd');
    const r = reply(page, 'forbidden_path');
    await r.waitFor();
    const text = await r.textContent();
    if (!/\.\./.test(text)) throw new Error(`the error does not explain the refusal: ${text}`);
    if (await page.locator('#messages', { hasText: 'root:x:0:0' }).count() > 0) throw new Error('/etc/passwd leaked');
    await page.waitForTimeout(150);
    await shot(page, '02-chat.png');
  });

  await check('the workspace bar shows where the conversation works, in plain words', async () => {
    await page.locator('#ws-bar[data-current="default"]').waitFor();
    await page.locator('#ws-where', { hasText: 'default · on this machine · the default' }).waitFor();
    const options = await page.locator('#ws-select option').allTextContents();
    if (!options.some((o) => o.startsWith('sandbox'))) throw new Error(`the select lacks sandbox: ${options}`);
    if (options[0] !== 'Automatic') throw new Error(`the first choice is ${JSON.stringify(options[0])}, want "Automatic"`);
    const bar = await page.locator('#ws-bar').innerText();
    for (const jargon of ['configuration decides', 'not configured', 'workspaces.by_', 'top-level']) {
      if (bar.includes(jargon)) throw new Error(`the workspace bar says ${JSON.stringify(jargon)}: ${bar}`);
    }
    await shot(page, '12a-workspace-bar.png');
  });

  await check('choosing a workspace in the select sends /use and /where follows', async () => {
    await page.selectOption('#ws-select', 'sandbox');
    await page.locator('#messages .msg.inbound', { hasText: '/use sandbox' }).waitFor();
    await reply(page, 'now works in sandbox').waitFor();
    await page.locator('#ws-bar[data-current="sandbox"]').waitFor();
    await page.locator('#ws-where', { hasText: 'sandbox · on this machine · you chose it' }).waitFor();
    await send(page, '/where');
    await reply(page, 'Workspace: sandbox').waitFor();
    await shot(page, '12-workspace.png');
    await page.selectOption('#ws-select', '');
    await page.locator('#messages .msg.inbound', { hasText: '/use --default' }).waitFor();
    await page.locator('#ws-bar[data-current="default"]').waitFor();
    await send(page, '/where');
    await reply(page, 'Workspace: default').waitFor();
  });

  await check('a 3,000-line file is folded, with a control that shows all of it', async () => {
    await send(page, '/fs.readFile long.txt');
    const msg = reply(page, 'long.txt');
    const folded = msg.locator('.folded[data-lines="3000"]');
    await folded.waitFor();
    const box = await msg.boundingBox();
    if (!box || box.height > 700) throw new Error(`the folded reply is ${box && box.height}px high`);
    if (!await folded.locator('.fold-preview').isVisible()) throw new Error('no preview of the first lines');
    const summary = folded.locator('summary');
    if (await summary.textContent() !== 'Show all 3,000 lines') throw new Error(`the control says ${await summary.textContent()}`);
    await page.waitForTimeout(150);
    await shot(page, '15-fold.png');
    await summary.click();
    await folded.locator('details[open]').waitFor();
    if (await folded.locator('.fold-preview').isVisible()) throw new Error('the preview stays with the whole text shown');
    const all = await folded.locator('details pre').textContent();
    if (!all.startsWith('line 0001\n') || !all.endsWith('line 3000') || all.split('\n').length !== 3000) throw new Error(`the whole text is not there: ${all.length} characters`);
    await shot(page, '15b-fold-open.png');
    await summary.click();
    await folded.locator('.fold-preview').waitFor();
  });

  await check('a file picked in the panel is saved where its text says', async () => {
    await page.locator('#file-input').setInputFiles({ name: 'hello.txt', mimeType: 'text/plain', buffer: Buffer.from('hello from the panel\n') });
    await page.locator('#attached', { hasText: 'hello.txt (21 bytes)' }).waitFor();
    await send(page, 'inbox/');
    await reply(page, 'Saved inbox/hello.txt (21 bytes').waitFor();
    if (!await page.locator('#attached').isHidden()) throw new Error('the file stays attached after it was sent');
    await shot(page, '18-upload.png');
  });

  await check('a file dropped on the composer is saved in the uploads directory', async () => {
    const drop = await page.evaluateHandle(() => {
      const dt = new DataTransfer();
      dt.items.add(new File([new Uint8Array([0, 1, 2, 255])], 'dropped.bin', { type: 'application/octet-stream' }));
      return dt;
    });
    await page.locator('.composer').dispatchEvent('drop', { dataTransfer: drop });
    await page.locator('#attached', { hasText: 'dropped.bin (4 bytes)' }).waitFor();
    await page.locator('#input').fill('');
    await page.locator('#composer-form').evaluate((f) => f.requestSubmit());
    await reply(page, 'Saved uploads/dropped.bin (4 bytes').waitFor();
  });

  await check('/get sends a workspace file as a download of this conversation', async () => {
    await send(page, '/get src/main.go');
    const link = page.locator('#messages .msg.reply a.file', { hasText: 'main.go' }).last();
    await link.waitFor();
    const [download] = await Promise.all([page.waitForEvent('download'), link.click()]);
    if (download.suggestedFilename() !== 'main.go') throw new Error(`downloaded as ${download.suggestedFilename()}`);
    const got = readFileSync(await download.path(), 'utf8');
    if (got !== 'package main\n\nfunc main() {}\n') throw new Error(`the download holds ${JSON.stringify(got)}`);
    await shot(page, '19-download.png');
  });

  await check('a long proc.run shows its progress in place and is cancelled from the panel', async () => {
    const script = 'i=0; while [ $i -lt 120 ]; do i=$((i+1)); echo "building step $i"; sleep 0.25; done';
    await send(page, '/proc.run\n' + JSON.stringify({ executable: 'sh', arguments: ['-c', script] }));
    const prog = page.locator('#messages .msg.progress[data-state="running"]');
    await prog.waitFor();
    await prog.locator('.progress-tail', { hasText: 'building step' }).waitFor();
    await prog.locator('.progress-verb', { hasText: 'proc.run' }).waitFor();
    // Updated in place: one element, whose elapsed time moves on.
    const first = await prog.locator('.progress-elapsed').textContent();
    await page.waitForFunction((t) => {
      const e = document.querySelector('#messages .msg.progress[data-state="running"] .progress-elapsed');
      return e && e.textContent !== t;
    }, first);
    if (await page.locator('#messages .msg.progress').count() !== 1) throw new Error('more than one progress element for one call');
    await shot(page, '11-progress.png');
    await prog.locator('button.progress-cancel').click();
    const ended = page.locator('#messages .msg.progress[data-state="cancelled"]');
    await ended.waitFor();
    await ended.locator('.progress-text', { hasText: 'cancelled by web' }).waitFor();
    await ended.locator('.progress-note', { hasText: 'Cancelling proc.run' }).waitFor();
    if (await ended.locator('button.progress-cancel').count() !== 0) throw new Error('the Cancel control stays on a cancelled call');
    await reply(page, 'Cancelled by web').waitFor();
    await page.waitForTimeout(150);
    await shot(page, '11b-progress-cancelled.png');
  });

  await check('after a reload the cancelled call shows as ended, never running', async () => {
    await page.reload();
    await page.locator('#conn[data-state="live"]').waitFor();
    await page.locator('#messages .msg.progress[data-state="cancelled"]').waitFor();
    await page.waitForTimeout(300);
    if (await page.locator('#messages .msg.progress[data-state="running"]').count() !== 0) throw new Error('a finished call shows as running after a reload');
    if (await page.locator('#messages .msg.progress').count() !== 1) throw new Error('the call shows more than once after a reload');
  });

  await check('delivery targets can be added and removed', async () => {
    await page.click('.tab[data-view="targets"]');
    await page.fill('#target-input', 'local:pma/e2e-deliveries.jsonl');
    await page.click('#target-form button[type=submit]');
    await page.locator('#targets-list .key', { hasText: 'local:pma/e2e-deliveries.jsonl' }).waitFor();
    await shot(page, '05-targets.png');
    await page.click('button[aria-label="Remove local:pma/e2e-deliveries.jsonl"]');
    await page.locator('#targets-note', { hasText: 'Removed' }).waitFor();
    await page.locator('#targets-list .key', { hasText: 'local:pma/e2e-deliveries.jsonl' }).waitFor({ state: 'detached' });
  });

  await check('a target on a platform that is off is added with a note saying its chunks wait', async () => {
    await page.fill('#target-input', 'telegram:-1001234567890');
    await page.click('#target-form button[type=submit]');
    await page.locator('#targets-note', { hasText: 'Telegram is not enabled in the configuration' }).waitFor();
    await shot(page, '05b-target-note.png');
    await page.click('button[aria-label="Remove chat:telegram:-1001234567890"]');
    await page.locator('#targets-list .key', { hasText: 'chat:telegram:-1001234567890' }).waitFor({ state: 'detached' });
  });

  await check('the channel directory is listed', async () => {
    await page.click('.tab[data-view="channels"]');
    await page.locator('#channels-list .title', { hasText: 'Ops / Deploys' }).waitFor();
    await shot(page, '06-channels.png');
  });

  await check('dead letters are listed and can be retried', async () => {
    await page.click('.tab[data-view="outbox"]');
    await page.click('.segmented button[data-state="dead"]');
    const item = page.locator('#outbox-list .item', { hasText: 'pma:' });
    await item.first().waitFor();
    await item.first().locator('.last-error').waitFor();
    await shot(page, '07-outbox-dead.png');
    await item.first().locator('button', { hasText: 'Retry' }).click();
    await page.locator('#outbox-note', { hasText: 'Queued' }).waitFor();
    // The fake platform accepts the second attempt: the dead letter goes.
    for (let i = 0; i < 50; i++) {
      await page.click('#outbox-refresh');
      await page.waitForTimeout(200);
      if (await page.locator('#outbox-list .item', { hasText: 'pma:' }).count() === 0) break;
    }
    if (await page.locator('#outbox-list .item', { hasText: 'pma:' }).count() !== 0) throw new Error('the retried dead letter is still dead');
  });

  if (pairingCode) {
    await check('the access view lists the pending code without the code, and approves it', async () => {
      await page.click('.tab[data-view="access"]');
      const pending = page.locator('#codes-list .code-item', { hasText: pairingIdentity });
      await pending.waitFor();
      await pending.locator('.muted', { hasText: 'expires' }).waitFor();
      if (await page.locator('#view-access', { hasText: pairingCode }).count() !== 0) throw new Error('the pairing code itself is shown');
      await page.locator('#grants-list .grant-item[data-identity="web"][data-source="config"]').waitFor();
      expectRefusal++;
      await page.fill('#approve-code', 'ZZZZ-ZZZZ');
      await page.selectOption('#approve-role', 'reader');
      await page.click('#approve-form button[type=submit]');
      await page.locator('#access-note', { hasText: '⚠' }).waitFor();
      await page.waitForTimeout(100);
      expectRefusal--;
      await page.fill('#approve-code', pairingCode);
      await page.selectOption('#approve-role', 'reader');
      await page.click('#approve-form button[type=submit]');
      await page.locator('#access-note', { hasText: 'Approved: ' + pairingIdentity + ' now holds reader' }).waitFor();
      await page.locator(`#grants-list .grant-item[data-identity="${pairingIdentity}"][data-source="state"]`).waitFor();
      await page.locator('#codes-list .code-item', { hasText: pairingIdentity }).waitFor({ state: 'detached' });
      await shot(page, '13-access.png');
    });

    await check('an approved grant is revoked from the access view', async () => {
      await page.click(`button[aria-label="Revoke ${pairingIdentity}"]`);
      await page.locator('#access-note', { hasText: 'Revoked ' + pairingIdentity }).waitFor();
      await page.locator(`#grants-list .grant-item[data-identity="${pairingIdentity}"]`).waitFor({ state: 'detached' });
    });
  }

  await check('the nodes view lists the remote nodes', async () => {
    await page.click('.tab[data-view="nodes"]');
    await page.locator('#nodes-list .node-item[data-node="db-1"][data-online="true"]', { hasText: 'logs' }).waitFor();
    await page.locator('#nodes-list .node-item[data-node="build-2"] .badge.offline').waitFor();
    await page.locator('#nodes-note', { hasText: '2 nodes, 1 online' }).waitFor();
    await shot(page, '14-nodes.png');
  });

  await check('the schedules view shows each schedule and runs one now', async () => {
    await page.click('.tab[data-view="schedules"]');
    const item = page.locator('#schedules-list .schedule-item[data-schedule="nightly"]');
    await item.waitFor();
    // The next time in the schedule's zone: 06:00 in Berlin.
    await item.locator('.muted', { hasText: /0 6 \* \* \* \(Europe\/Berlin\) · next .*06:00 (GMT\+[12]|CES?T)/ }).waitFor();
    await item.locator('.muted', { hasText: 'runs fs.lineCount as schedule:nightly (reader)' }).waitFor();
    await item.locator('.muted', { hasText: 'delivers to local:pma/nightly.jsonl' }).waitFor();
    await item.locator('.badge', { hasText: 'never run' }).waitFor();
    await shot(page, '15-schedules.png');
    await page.click('button[aria-label="Run nightly now"]');
    await page.locator('#schedules-note', { hasText: 'Started nightly: turn schedule.nightly.manual.' }).waitFor();
    const done = page.locator('#schedules-list .schedule-item[data-schedule="nightly"][data-outcome="succeeded"]');
    for (let i = 0; i < 50 && await done.count() === 0; i++) {
      await page.waitForTimeout(200);
      await page.click('#schedules-refresh');
    }
    await done.locator('.last-run', { hasText: '(by hand): succeeded' }).waitFor();
  });

  await check('the history view finds turns by who, what and how they ended', async () => {
    await page.click('.tab[data-view="history"]');
    // By default the last day: this session's turns.
    await page.locator('#history-list .turn-item', { hasText: 'fs.listDir · web' }).first().waitFor();
    await page.fill('#history-verb', 'fs.readFile');
    await page.selectOption('#history-outcome', 'forbidden');
    await page.click('#history-form button[type=submit]');
    const refused = page.locator('#history-list .turn-item[data-outcome="forbidden"]', { hasText: '../etc/passwd' });
    await refused.waitFor();
    await refused.locator('.badge', { hasText: 'forbidden (forbidden_path)' }).waitFor();
    await page.locator('#history-note', { hasText: '1 turn.' }).waitFor();
    if (await page.locator('#history-list .turn-item').count() !== 1) throw new Error('the filters let other turns through');
    await shot(page, '16-history.png');
    await page.fill('#history-verb', '');
    await page.selectOption('#history-outcome', '');
    await page.fill('#history-identity', 'schedule:nightly');
    await page.click('#history-form button[type=submit]');
    await page.locator('#history-list .turn-item[data-outcome="succeeded"]', { hasText: 'fs.lineCount · schedule:nightly' }).waitFor();
  });

  await check('the status line shows the hub state', async () => {
    await page.locator('#status-text', { hasText: 'outbox' }).waitFor();
    await page.locator('#status-text', { hasText: 'web running' }).waitFor();
  });

  await check('logging out returns to the login view', async () => {
    await page.click('.tab[data-view="chat"]');
    await page.click('#logout');
    await page.locator('#login-form').waitFor();
    await page.reload();
    await page.locator('#login-form').waitFor();
  });

  // ---- Phone, dark, login link ---------------------------------------------
  phone = await launch({
    viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true, colorScheme: 'dark',
  });
  const mobile = phone.pages()[0] || await phone.newPage();
  watch(mobile, 'phone');

  await check('a login link logs in and leaves no token in the address bar', async () => {
    await mobile.goto(base + '#token=' + encodeURIComponent(token));
    await mobile.locator('#app').waitFor();
    const url = mobile.url();
    if (url.includes('token')) throw new Error(`the token stays in the address bar: ${url}`);
    for (const sel of ['.tab[data-view="outbox"]', '#logout', '#send']) {
      await mobile.locator(sel).waitFor();
      const b = await mobile.locator(sel).boundingBox();
      if (!b || b.x < 0 || b.x + b.width > 390) throw new Error(`${sel} does not fit the screen: ${JSON.stringify(b)}`);
    }
  });

  await check('every tab fits a phone, and nothing is wider than the screen', async () => {
    await mobile.locator('.tab[data-view="nodes"]').waitFor();
    for (const t of await mobile.locator('.tab:not([hidden])').all()) {
      const b = await t.boundingBox();
      if (!b || b.x < 0 || b.x + b.width > 390 || b.y < 0) throw new Error(`tab ${await t.textContent()} is off screen: ${JSON.stringify(b)}`);
    }
    const wide = await mobile.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    if (wide > 0) throw new Error(`the page is ${wide}px wider than the screen`);
    const where = await mobile.evaluate(() => { const w = document.getElementById('ws-where'); return { cut: w.scrollWidth > w.clientWidth, text: w.textContent }; });
    if (where.cut || !where.text.includes('on this machine')) throw new Error(`the workspace bar is cut on a phone: ${JSON.stringify(where)}`);
    await shot(mobile, '16-phone-tabs.png');
  });

  await check('the folded file reads on a phone', async () => {
    const folded = mobile.locator('.folded[data-lines="3000"]').first();
    await folded.scrollIntoViewIfNeeded();
    const b = await folded.boundingBox();
    if (!b || b.x < 0 || b.x + b.width > 390) throw new Error(`the folded file is wider than the screen: ${JSON.stringify(b)}`);
    const wide = await mobile.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    if (wide > 0) throw new Error(`the page is ${wide}px wider than the screen`);
    await mobile.waitForTimeout(150);
    await shot(mobile, '17-phone-fold.png');
  });

  await check('the history is replayed on a new device', async () => {
    await mobile.locator('#messages .msg.reply', { hasText: 'forbidden_path' }).waitFor();
    await mobile.locator('#messages .msg.inbound', { hasText: '/fs.listDir .' }).waitFor();
    await mobile.waitForTimeout(150);
    await shot(mobile, '08-phone-chat-dark.png');
  });

  await check('the form fits a phone', async () => {
    await mobile.locator('#input').fill('/proc.run ');
    await mobile.tap('#form-toggle');
    await mobile.locator('#f-executable').waitFor();
    await mobile.locator('#f-arguments').waitFor();
    const box = await mobile.locator('#form-panel').boundingBox();
    if (!box || box.width > 390) throw new Error(`the form is wider than the screen: ${JSON.stringify(box)}`);
    const send = await mobile.locator('#send').boundingBox();
    if (!send || send.height < 40) throw new Error(`the send button is too small to tap: ${JSON.stringify(send)}`);
    await shot(mobile, '09-phone-form-dark.png');
  });

  await check('a command typed on the phone runs', async () => {
    await mobile.tap('#form-close');
    await send(mobile, '/fs.readRange notes.txt 1 1');
    await reply(mobile, '1: alpha').waitFor();
  });

  if (readerBase) {
    await check('a reader sees the chat and no admin view or control', async () => {
      const ctx = await launch({ viewport: { width: 1280, height: 860 }, colorScheme: 'light' });
      try {
        const rp = ctx.pages()[0] || await ctx.newPage();
        watch(rp, 'reader');
        const whoami = rp.waitForResponse((r) => r.url().endsWith('/api/whoami'));
        await rp.goto(readerBase + '#token=' + encodeURIComponent(readerToken));
        await rp.locator('#app').waitFor();
        await rp.locator('#conn[data-state="live"]').waitFor();
        // The permissions apply once whoami has answered.
        const who = await (await whoami).json();
        if (who.identity !== 'web' || (who.permissions || []).length !== 0) throw new Error(`whoami of a reader: ${JSON.stringify(who)}`);
        await rp.waitForTimeout(200);
        for (const sel of ['.tab[data-view="channels"]', '.tab[data-view="targets"]', '.tab[data-view="outbox"]', '.tab[data-view="access"]', '.tab[data-view="nodes"]', '.tab[data-view="schedules"]', '.tab[data-view="history"]', '#target-form', '#channels-rebuild']) {
          if (await rp.locator(sel).isVisible()) throw new Error(`${sel} shows to a reader`);
        }
        if (!await rp.locator('.tab[data-view="chat"]').isVisible()) throw new Error('the chat tab is hidden from a reader');
        await send(rp, '/fs.listDir .');
        await reply(rp, 'notes.txt').waitFor();
        // A reader's own view of the nodes endpoint is refused.
        expectRefusal++;
        const nodes = await rp.evaluate(async () => (await fetch('/api/nodes')).status);
        await rp.waitForTimeout(100);
        expectRefusal--;
        if (nodes !== 403) throw new Error(`GET /api/nodes as a reader: ${nodes}`);
        await shot(rp, '10-reader.png');
      } finally {
        await ctx.close().catch(() => {});
      }
    });
  }

  if (problems.length > 0) throw new Error('problems in the page:\n' + problems.join('\n'));
  console.log(`all ${step} checks passed`);
} catch (err) {
  exitCode = 1;
  console.error(`not ok ${step} - ${err && err.message ? err.message : err}`);
  for (const ctx of [desktop, phone]) {
    const p = ctx && ctx.pages()[0];
    if (p) await p.screenshot({ path: join(outDir, `failure-${ctx === desktop ? 'desktop' : 'phone'}.png`) }).catch(() => {});
  }
} finally {
  for (const ctx of [desktop, phone]) if (ctx) await ctx.close().catch(() => {});
  for (const d of profiles) rmSync(d, { recursive: true, force: true });
}
process.exit(exitCode);
