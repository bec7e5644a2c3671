#!/usr/bin/env node
// acp-client.mjs: an ACP client written with the official TypeScript SDK
// (@agentclientprotocol/sdk) that drives one agent command and reports, as ONE
// JSON line on stdout, what happened.
//
// Usage:
//   node acp-client.mjs [--cwd DIR] [--timeout-ms N] [--prompt TEXT] [--auth-method ID] [--] COMMAND [ARG...]
//
// --auth-method ID calls authenticate with that method id after initialize
// (for agents that read an API key from their environment only once asked).
//
// It spawns COMMAND (e.g. `node acp-agent.mjs`, or `podbot host ...`) with
// piped stdin/stdout (the child's stderr is passed through to ours), advertises
// every capability that executes on the client's host (fs read/write,
// terminal, auth.terminal, _meta["terminal-auth"]) plus metadata that must
// survive untouched, then runs initialize -> session/new -> session/prompt and
// reads the turn's updates until it stops. Requests the agent sends to the
// client (fs/*, terminal/*, anything else) are recorded and answered with
// harmless canned values; nothing on this host is read, written or executed.
//
// Every byte the child writes on stdout is also checked on the side: each
// newline-terminated line must be one JSON object with "jsonrpc": "2.0" and a
// method or an id. (The SDK itself answers garbage with a parse error and goes
// on, so this check is what proves the child's stdout held protocol frames
// only.)
//
// Summary line fields:
//   initialized              initialize succeeded
//   initializeResponse       {protocolVersion, agentInfo, agentCapabilities}
//   sessionId, stopReason    from session/new and the prompt's response
//   agentText                concatenated agent_message_chunk text
//   agentReport              agentText parsed as JSON (null if it is not JSON)
//   updates                  number of session/update notifications received
//   clientReceivedRequests   [{method, params}] the agent asked of the client
//   stdout                   {bytes, frames, invalid, invalidSamples, partialTail}
//   stdoutClean              stdout held valid JSON-RPC frames only
//   childExit                {code, signal} of the command
//   error                    first failure, or null
//
// Exit status: 0 when initialize, session/new and the prompt completed and the
// child's stdout was clean; 1 otherwise (the summary line is printed either
// way); 2 on a usage error.
import { spawn } from "node:child_process";
import { Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";
import { FrameChecker } from "./frame-checker.mjs";

function usage(message) {
  process.stderr.write(`acp-client: ${message}\nusage: acp-client.mjs [--cwd DIR] [--timeout-ms N] [--prompt TEXT] [--auth-method ID] [--] COMMAND [ARG...]\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const opts = { cwd: process.cwd(), timeoutMs: 60000, prompt: "report what you saw", command: [] };
  let i = 0;
  for (; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--") {
      i++;
      break;
    }
    if (!a.startsWith("--")) break;
    const value = argv[i + 1];
    if (value === undefined) usage(`${a} needs a value`);
    if (a === "--cwd") opts.cwd = value;
    else if (a === "--timeout-ms") opts.timeoutMs = Number(value);
    else if (a === "--prompt") opts.prompt = value;
    else if (a === "--auth-method") opts.authMethod = value;
    else usage(`unknown option ${a}`);
    i++;
  }
  opts.command = argv.slice(i);
  if (opts.command.length === 0) usage("no command given");
  if (!Number.isFinite(opts.timeoutMs) || opts.timeoutMs <= 0) usage("--timeout-ms must be a positive number");
  return opts;
}

function describeError(err) {
  if (err && typeof err.code === "number") {
    return `JSON-RPC error ${err.code}: ${err.message}`;
  }
  return String(err && err.message ? err.message : err);
}

const opts = parseArgs(process.argv.slice(2));

const summary = {
  initialized: false,
  initializeResponse: null,
  sessionId: null,
  stopReason: null,
  agentText: "",
  agentReport: null,
  updates: 0,
  clientReceivedRequests: [],
  stdout: null,
  stdoutClean: false,
  childExit: null,
  error: null,
};

function fail(err) {
  if (summary.error === null) summary.error = describeError(err);
}

const checker = new FrameChecker({ requireVersion: true });
const child = spawn(opts.command[0], opts.command.slice(1), {
  stdio: ["pipe", "pipe", "inherit"],
});

const childExited = new Promise((resolve) => {
  child.on("exit", (code, signal) => resolve({ code, signal }));
  child.on("error", (err) => {
    fail(err);
    resolve({ code: null, signal: null, spawnError: err.message });
  });
});
const stdoutEnded = new Promise((resolve) => {
  child.stdout.on("end", resolve);
  child.stdout.on("close", resolve);
});
child.stdin.on("error", () => {}); // EPIPE when the child dies early; reported via childExit.

// The checker sees every byte even after the SDK stops reading (it cancels
// its reader when the connection closes), so late garbage is still caught.
let inputOpen = true;
const input = new ReadableStream({
  start(controller) {
    child.stdout.on("data", (chunk) => {
      checker.push(chunk);
      if (inputOpen) controller.enqueue(new Uint8Array(chunk));
    });
    child.stdout.on("end", () => {
      if (inputOpen) controller.close();
      inputOpen = false;
    });
    child.stdout.on("error", (err) => {
      if (inputOpen) controller.error(err);
      inputOpen = false;
    });
  },
  cancel() {
    inputOpen = false;
  },
});
const output = Writable.toWeb(child.stdin);

function record(method) {
  return ({ params }) => {
    summary.clientReceivedRequests.push({ method, params: params ?? null });
    switch (method) {
      case "fs/read_text_file":
        return { content: "acp-client canned content\n" };
      case "terminal/create":
        return { terminalId: "acp-client-terminal-1" };
      case "terminal/output":
        return { output: "", truncated: false };
      case "terminal/wait_for_exit":
        return { exitCode: 0, signal: null };
      case "session/request_permission":
        return { outcome: { outcome: "cancelled" } };
      default:
        return {};
    }
  };
}

const app = acp.client({ name: "podbot-e2e-acp-client" });
for (const method of [
  "fs/read_text_file",
  "fs/write_text_file",
  "terminal/create",
  "terminal/output",
  "terminal/release",
  "terminal/wait_for_exit",
  "terminal/kill",
  "session/request_permission",
]) {
  app.onRequest(method, record(method));
}
app.onRequest("*", ({ method, params }) => {
  summary.clientReceivedRequests.push({ method, params: params ?? null });
  throw acp.RequestError.methodNotFound(method);
});

async function session(ctx) {
  const init = await ctx.request("initialize", {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: {
      fs: { readTextFile: true, writeTextFile: true },
      terminal: true,
      auth: { terminal: true },
      _meta: { "terminal-auth": true, "podbot.e2e/keep": "kept" },
    },
    clientInfo: { name: "podbot-e2e-acp-client", version: "0.0.0" },
    _meta: { "podbot.e2e/initialize": "kept" },
  });
  summary.initialized = true;
  summary.initializeResponse = {
    protocolVersion: init.protocolVersion,
    agentInfo: init.agentInfo ?? null,
    agentCapabilities: init.agentCapabilities ?? null,
  };

  if (opts.authMethod) {
    await ctx.request("authenticate", { methodId: opts.authMethod });
    summary.authenticated = true;
  }
  const active = await ctx.buildSession(opts.cwd).start();
  summary.sessionId = active.sessionId;
  const prompted = active.prompt(opts.prompt);
  prompted.catch(() => {}); // the same outcome arrives through nextUpdate
  for (;;) {
    const msg = await active.nextUpdate();
    if (msg.kind === "stop") {
      summary.stopReason = msg.stopReason;
      break;
    }
    summary.updates++;
    const u = msg.update;
    if (u.sessionUpdate === "agent_message_chunk" && u.content && u.content.type === "text") {
      summary.agentText += u.content.text;
    }
  }
  await prompted;
  active.dispose();
}

let timer;
const timedOut = new Promise((_, reject) => {
  timer = setTimeout(() => reject(new Error(`timed out after ${opts.timeoutMs} ms`)), opts.timeoutMs);
});

try {
  await Promise.race([
    app.connectWith(acp.ndJsonStream(output, input), session),
    timedOut,
    childExited.then((exit) => {
      // Let the protocol finish reading whatever the child wrote before dying.
      return new Promise((_, reject) =>
        setTimeout(() => reject(new Error(`command exited early (code ${exit.code}, signal ${exit.signal})`)), 2000),
      );
    }),
  ]);
} catch (err) {
  fail(err);
}

// Half-close the child's stdin, then give it time to exit on its own.
try {
  child.stdin.end();
} catch {
  // already closed
}
const graceful = await Promise.race([
  childExited,
  new Promise((resolve) => setTimeout(() => resolve(null), 10000)),
]);
if (graceful === null) {
  child.kill("SIGTERM");
  fail(new Error("command did not exit within 10 s after stdin closed; sent SIGTERM"));
}
summary.childExit = await childExited;
await Promise.race([stdoutEnded, new Promise((resolve) => setTimeout(resolve, 2000))]);
clearTimeout(timer);

try {
  summary.agentReport = summary.agentText ? JSON.parse(summary.agentText) : null;
} catch {
  summary.agentReport = null;
}
summary.stdout = checker.summary();
summary.stdoutClean = checker.clean();

const ok = summary.initialized && summary.stopReason !== null && summary.stdoutClean && summary.error === null;
process.stdout.write(`${JSON.stringify(summary)}\n`, () => process.exit(ok ? 0 : 1));
