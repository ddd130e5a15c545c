// End-to-end check of the hub's MCP surface with the official TypeScript
// client. Run by TestMCPClientE2E (../e2e_test.go):
//
//   node e2e.mjs stdio <hub-binary> <config> <workspace> <marker>
//   node e2e.mjs http <url> <token> <limited-token> <marker>
//   node e2e.mjs confirm <hub-binary> <config> <workspace>
//
// It prints one line per check and exits 1 on the first failure. <marker>
// is the unique duration of the `sleep` that is cancelled, so the Go test
// can look for the process afterwards.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema, ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [mode, ...rest] = process.argv.slice(2);

function check(cond, what, detail) {
  if (!cond) {
    console.log(`FAIL ${what}${detail !== undefined ? ": " + JSON.stringify(detail).slice(0, 800) : ""}`);
    process.exit(1);
  }
  console.log(`ok ${what}`);
}

async function connect(transport) {
  const client = new Client({ name: "hub-e2e", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

function httpTransport(url, token) {
  return new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
}

// Every verb once, in an order where each finds what it needs. vfs verbs
// answer forbidden in the host workspace: a tool error, still a valid result.
const calls = [
  ["fs_createDirectory", { path: "e2e/dir" }],
  ["fs_writeFile", { path: "e2e/a.txt", content: "one\ntwo\nthree\n" }],
  ["fs_exists", { path: "e2e/a.txt" }],
  ["fs_readFile", { path: "e2e/a.txt" }],
  ["fs_readRange", { path: "e2e/a.txt", startLine: 2, endLine: 3 }],
  ["fs_writeRange", { path: "e2e/a.txt", startLine: 2, endLine: 2, content: "TWO" }],
  ["fs_lineCount", { path: "e2e/a.txt" }],
  ["fs_copyFile", { sourcePath: "e2e/a.txt", destinationPath: "e2e/b.txt" }],
  ["fs_moveFile", { sourcePath: "e2e/b.txt", destinationPath: "e2e/dir/c.txt" }],
  ["fs_listDir", { path: "e2e" }],
  ["fs_deleteFile", { path: "e2e/dir/c.txt" }],
  ["fs_deleteDirectory", { path: "e2e/dir" }],
  ["proc_run", { executable: "echo", arguments: ["hi", "there"] }],
  ["sys_machineInfo", {}],
  ["vfs_info", {}],
  ["vfs_list", {}],
  ["vfs_snapshot", {}],
  ["vfs_restore", { snapshotId: "20260102T030405.678Z-3f9a" }],
  ["vfs_reset", {}],
];

async function full(client, marker, opts) {
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name).sort();
  check(names.includes("fs_readFile") && names.includes("proc_run"), "tools/list names verbs with '_'", names);
  check(names.every((n) => /^[A-Za-z0-9_-]+$/.test(n)), "tool names use letters, digits, '_' and '-' only", names);
  const rf = tools.find((t) => t.name === "fs_readFile");
  check(rf.inputSchema.type === "object" && rf.inputSchema.required.includes("path"), "fs_readFile input schema requires path", rf.inputSchema);
  check(rf.outputSchema && rf.outputSchema.properties.content, "fs_readFile has an output schema", rf.outputSchema);
  check(rf.annotations.readOnlyHint === true, "fs_readFile is read-only", rf.annotations);
  const pr = tools.find((t) => t.name === "proc_run");
  check(pr.annotations.destructiveHint === true && pr.annotations.readOnlyHint === false, "proc_run is destructive", pr.annotations);

  for (const [name, args] of calls) {
    if (!names.includes(name)) {
      // Without session workspaces configured, a hub may register no vfs verbs.
      check(name.startsWith("vfs_") && process.env.HUB_E2E_VFS !== "1", `${name} listed`, names);
      continue;
    }
    // callTool validates structuredContent against the tool's outputSchema.
    const r = await client.callTool({ name, arguments: args });
    const sc = r.structuredContent;
    const text = r.content?.[0]?.text ?? "";
    if (name.startsWith("vfs_")) {
      check(r.isError === true && sc.errorCode === "forbidden", `${name}: forbidden in the host workspace`, r);
    } else {
      check(!r.isError && sc.succeeded === true && text.length > 0, `${name} succeeded with text and structured content`, r);
    }
  }
  const rd = await client.callTool({ name: "fs_readFile", arguments: { path: "e2e/a.txt" } });
  check(rd.structuredContent.content === "one\nTWO\nthree\n", "the edits landed", rd.structuredContent);
  const pe = await client.callTool({ name: "proc_run", arguments: { executable: "echo", arguments: ["hi", "there"] } });
  check(pe.structuredContent.stdoutTail === "hi there\n", "proc_run output", pe.structuredContent);

  await resources(client);

  const nf = await client.callTool({ name: "fs_readFile", arguments: { path: "no/such.txt" } });
  check(nf.isError === true && nf.structuredContent.errorCode === "not_found", "a missing file is a tool error not_found", nf);
  const tr = await client.callTool({ name: "fs_readFile", arguments: { path: "../etc/passwd" } });
  check(tr.isError === true && tr.structuredContent.errorCode === "forbidden_path", "traversal refused: forbidden_path", tr);
  const bad = await client.callTool({ name: "fs_readFile", arguments: { pathh: "x" } });
  check(bad.isError === true && bad.structuredContent.errorCode === "invalid_arguments", "unknown argument: invalid_arguments", bad);
  let unknown;
  try {
    await client.callTool({ name: "fs_nope", arguments: {} });
  } catch (e) {
    unknown = e;
  }
  check(unknown && /unknown tool/i.test(String(unknown.message)), "an unknown tool is a protocol error", String(unknown));

  // Progress, then cancellation of a long proc.run.
  const progress = [];
  const ac = new AbortController();
  const started = Date.now();
  const pending = client.callTool(
    { name: "proc_run", arguments: { executable: "sh", arguments: ["-c", `echo alpha; echo beta; sleep ${marker}`], timeoutSeconds: 60 } },
    undefined,
    {
      signal: ac.signal,
      onprogress: (p) => progress.push(p),
      timeout: 60000,
    },
  );
  const withLines = () => progress.find((p) => /last lines of output:\nalpha\nbeta$/.test(p.message ?? ""));
  while ((progress.length < 2 || !withLines()) && Date.now() - started < 15000) {
    await new Promise((r) => setTimeout(r, 100));
  }
  check(progress.length >= 2 && progress[1].progress > progress[0].progress, "progress notifications while proc_run runs", progress);
  check(/^proc\.run running for /.test(progress[0].message ?? ""), "progress says how long the call has run", progress[0]);
  check(withLines() !== undefined, "progress carries the last lines of output", progress);
  ac.abort("enough");
  let aborted = false;
  try {
    await pending;
  } catch {
    aborted = true;
  }
  const elapsed = Date.now() - started;
  check(aborted && elapsed < 20000, `the cancelled call ended after ${elapsed} ms`, elapsed);
  // The hub finishes the cancelled call (kills the tree); a next call works.
  const after = await client.callTool({ name: "fs_exists", arguments: { path: "e2e/a.txt" } });
  check(after.structuredContent.succeeded === true, "the session works after a cancellation", after);
  console.log(`CANCELLED_AT ${Date.now()}`);
}

// The workspace's files as resources: listed (in pages), read as text and
// as a blob, the path template and its completion, and a subscription that
// hears a change.
async function resources(client) {
  const caps = client.getServerCapabilities();
  check(caps.resources?.subscribe === true && caps.completions !== undefined, "resources with subscriptions, and completions, are offered", caps);
  const listed = [];
  let cursor;
  do {
    const page = await client.listResources(cursor ? { cursor } : {});
    listed.push(...page.resources);
    cursor = page.nextCursor;
  } while (cursor);
  const a = listed.find((r) => r.uri === "hub:///e2e/a.txt");
  check(a && a.name === "e2e/a.txt", "resources/list lists hub:///e2e/a.txt", listed.map((r) => r.uri));
  const { resourceTemplates } = await client.listResourceTemplates();
  check(resourceTemplates.some((t) => t.uriTemplate === "hub:///{+path}"), "the path template hub:///{+path}", resourceTemplates);
  const text = await client.readResource({ uri: "hub:///e2e/a.txt" });
  check(text.contents[0].text === "one\nTWO\nthree\n" && text.contents[0].mimeType === "text/plain; charset=utf-8", "resources/read: text", text);
  await client.callTool({ name: "fs_writeFile", arguments: { path: "e2e/blob.bin", content: "AAEC/w==", encoding: "base64" } });
  const blob = await client.readResource({ uri: "hub:///e2e/blob.bin" });
  check(blob.contents[0].blob === "AAEC/w==" && blob.contents[0].text === undefined, "resources/read: blob", blob);
  let missing;
  try {
    await client.readResource({ uri: "hub:///e2e/none.txt" });
  } catch (e) {
    missing = e;
  }
  // The SDK answers -32602 with "Resource not found" (the 2025-11-25
  // specification named -32002; later ones -32602).
  check(missing && [-32602, -32002].includes(missing.code) && /Resource not found/.test(missing.message), "a missing resource: Resource not found", String(missing));
  let outside;
  try {
    await client.readResource({ uri: "hub:///../etc/passwd" });
  } catch (e) {
    outside = e;
  }
  check(outside && /forbidden_path/.test(outside.message), "a path out of the workspace is refused", String(outside));

  const done = await client.complete({ ref: { type: "ref/resource", uri: "hub:///{+path}" }, argument: { name: "path", value: "e2e/" } });
  check(done.completion.values.includes("e2e/a.txt") && done.completion.values.includes("e2e/blob.bin"), "completion of the template's path", done);
  const dirs = await client.complete({ ref: { type: "ref/resource", uri: "hub:///{+path}" }, argument: { name: "path", value: "e2" } });
  check(dirs.completion.values.includes("e2e/"), "a directory completes with a slash", dirs);

  const updates = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => updates.push(n.params.uri));
  await client.subscribeResource({ uri: "hub:///e2e/a.txt" });
  await client.callTool({ name: "fs_writeFile", arguments: { path: "e2e/a.txt", content: "changed\n" } });
  const started = Date.now();
  while (!updates.includes("hub:///e2e/a.txt") && Date.now() - started < 20000) {
    await new Promise((r) => setTimeout(r, 50));
  }
  check(updates.includes("hub:///e2e/a.txt"), "a subscribed file's change is notified (notifications/resources/updated)", updates);
  await client.unsubscribeResource({ uri: "hub:///e2e/a.txt" });
  await client.callTool({ name: "fs_writeFile", arguments: { path: "e2e/a.txt", content: "one\nTWO\nthree\n" } });
}

async function limited(client) {
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name).sort();
  check(names.includes("fs_readFile") && !names.includes("proc_run") && !names.includes("fs_writeFile"), "the limited agent sees only read-only tools", names);
  const r = await client.callTool({ name: "proc_run", arguments: { executable: "echo", arguments: ["no"] } });
  check(r.isError === true && r.structuredContent.errorCode === "forbidden" && /agent:reader/.test(r.content[0].text), "a verb outside the agent's roles is refused: forbidden", r);
  const ok = await client.callTool({ name: "fs_readFile", arguments: { path: "e2e/a.txt" } });
  check(ok.structuredContent.succeeded === true, "the limited agent may read", ok);
}

// confirm drives a named command and a tool held for confirmation with a
// client that declares elicitation and answers yes, then no.
async function confirm(bin, config, workspace) {
  const client = new Client({ name: "hub-e2e", version: "1.0.0" }, { capabilities: { elicitation: {} } });
  let answer = "yes";
  const asked = [];
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked.push(req.params.message);
    return answer === "yes" ? { action: "accept", content: { run: true } } : { action: "decline" };
  });
  await client.connect(new StdioClientTransport({ command: bin, args: ["mcp", "--config", config, "--workspace", workspace], stderr: "inherit" }));
  const { tools } = await client.listTools();
  const tally = tools.find((t) => t.name === "cmd_tally");
  check(tally && JSON.stringify(tally.inputSchema.properties.which.enum) === '["a.txt","b.txt"]', "a named command is a tool with its enum parameter", tally);
  const n = await client.callTool({ name: "cmd_tally", arguments: { which: "a.txt" } });
  check(n.structuredContent.succeeded === true && n.structuredContent.lineCount === 3, "the named command runs its call", n);
  const bad = await client.callTool({ name: "cmd_tally", arguments: { which: "../etc/passwd" } });
  check(bad.isError === true && bad.structuredContent.errorCode === "invalid_arguments", "a value the enum does not list is refused", bad);
  const yes = await client.callTool({ name: "fs_deleteFile", arguments: { path: "a.txt" } });
  check(asked.length === 1 && /Run fs\.deleteFile/.test(asked[0]) && /"path":"a\.txt"/.test(asked[0]), "the held call is confirmed by elicitation, with the exact call", asked);
  check(yes.structuredContent.succeeded === true, "a yes runs it", yes);
  answer = "no";
  const no = await client.callTool({ name: "fs_deleteFile", arguments: { path: "b.txt" } });
  check(no.isError === true && no.structuredContent.errorCode === "cancelled" && asked.length === 2, "a no runs nothing", no);
  await client.close();
}

try {
  if (mode === "stdio") {
    const [bin, config, workspace, marker] = rest;
    const transport = new StdioClientTransport({
      command: bin,
      args: ["mcp", "--config", config, "--workspace", workspace],
      stderr: "inherit",
    });
    const client = await connect(transport);
    check(client.getServerVersion()?.name === "hermes-hub", "initialize: server is hermes-hub", client.getServerVersion());
    await full(client, marker);
    await client.close();
  } else if (mode === "http") {
    const [url, token, limitedToken, marker] = rest;
    const client = await connect(httpTransport(url, token));
    check(client.getServerVersion()?.name === "hermes-hub", "initialize over HTTP: server is hermes-hub", client.getServerVersion());
    await full(client, marker);
    await client.close();
    const lim = await connect(httpTransport(url, limitedToken));
    await limited(lim);
    await lim.close();
    let refused;
    try {
      await connect(httpTransport(url, "wrong-token-0123456789"));
    } catch (e) {
      refused = e;
    }
    check(refused !== undefined, "a wrong token is refused", String(refused));
  } else if (mode === "confirm") {
    const [bin, config, workspace] = rest;
    await confirm(bin, config, workspace);
  } else {
    check(false, "mode is stdio, http or confirm", mode);
  }
  console.log("ALL OK");
  process.exit(0);
} catch (e) {
  console.log(`FAIL exception: ${e?.stack ?? e}`);
  process.exit(1);
}
